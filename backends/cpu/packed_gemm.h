// A GEMM whose left operand (the weights) is packed once, at prepare, into the panel format
// of Eigen's GEMM micro-kernel, so that each run only packs the activations:
//
//   Y[rows r0..r1, 0..n) += W[r0..r1, 0..k) * X[0..k, 0..n)     (all row-major)
//
// Eigen computes the row-major product as the column-major Y^T = X^T * W^T, so W^T is its
// right-hand operand; Eigen would re-pack it on every call (and per tile of columns),
// which costs 15-20% for layers with few output positions and many weights.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "backends/cpu/aligned_array.h"

namespace minfer::cpu {

class PackedWeights {
 public:
  PackedWeights() = default;
  // Packs W [m, k] (row stride ldw) for products with up to `max_n` columns of X.
  PackedWeights(const float* w, int64_t m, int64_t k, int64_t ldw, int64_t max_n);

  bool empty() const { return data_.data() == nullptr; }
  int64_t rows() const { return m_; }
  // Scratch floats one multiply() needs (the packed block of X); a multiple of 16.
  size_t scratch_floats() const;

  // Y[r0:r1, 0:n) += W[r0:r1, :] * X[:, 0:n), with X [k, n] row-major (row stride ldx) and
  // Y row-major (row stride ldy, pointing at row 0). r0 must be a multiple of 4 and r1 a
  // multiple of 4 or rows(). `scratch` is 32-byte aligned, scratch_floats() long.
  void multiply(int64_t r0, int64_t r1, const float* x, int64_t ldx, int64_t n, float* y,
                int64_t ldy, float* scratch) const;

  // The same product with X already in the micro-kernel's packed format, so that a producer
  // such as im2col can write it directly instead of having it copied once more. Layout of a
  // packed X [k, n]: depth blocks of depth_block() rows, block b at offset
  // b * depth_block() * packed_stride(n); in a block of depth kb, the columns form panels
  // (widths from panel_width()), and the panel that starts at column q0 with width w holds
  // element (kk, q) at q0 * kb + kk * w + (q - q0). `xp` is 64-byte aligned.
  void multiply_packed(int64_t r0, int64_t r1, const float* xp, int64_t n, float* y,
                       int64_t ldy) const;
  int64_t depth_block() const { return kc_; }
  // Floats of a packed X [k_, n], and per row of depth (so depth block b starts at
  // b * depth_block() * packed_stride(n)).
  int64_t packed_floats(int64_t n) const { return k_ * packed_stride(n); }
  static int64_t packed_stride(int64_t n) { return (n + 15) / 16 * 16; }
  // Width of the panel that starts at column q0 of n, as Eigen's gemm_pack_lhs cuts them: with
  // AVX, 24 while they last, then at most one each of 16, 8 and 4, then single columns.
  static int64_t panel_width(int64_t n, int64_t q0);
  static constexpr int64_t kMaxPanelWidth = 48;  // (AVX-512)

 private:
  int64_t m_ = 0, k_ = 0;
  int64_t kc_ = 0, mc_ = 0, nc_ = 0;  // Eigen's cache blocking (depth, X columns, W rows)
  // Per depth block of kc_: all m_ rows of W, in panels of 4 rows (Eigen's rhs format).
  AlignedArray<float> data_;
};

}  // namespace minfer::cpu
