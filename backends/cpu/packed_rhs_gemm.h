// C = A * B for a constant B (MatMul weights: ViT's and BERT's projections), with B packed
// once at prepare into panels of 16 columns; A is read in place:
//
//   C[m, n] = A[m, k] * B[k, n]        (row-major; C is overwritten)
//
// The micro-kernel (backends/cpu/isa/sgemm_micro.cpp, one per ISA level) keeps a tile of 6 rows
// x 2 vectors of C in 12 registers (16 columns on AVX2: one panel; 32 on AVX-512: two) and per
// step of k broadcasts 6 values of A against 2 vectors of B (on AVX-512, products of at most 64
// rows take near-equal tiles of up to 8 rows). 7-16 rows of A go in one tall
// tile per panel on AVX-512 (up to 16 rows x 1 vector), which reads B once instead of once per
// 6 rows: B then streams from memory at an even pace (a 7x7 plane's F(2x2, 3x3) products,
// 512 -> 512 channels: 2.2 -> 1.7 ms, one thread of a Zen 4). The packing is the same on every
// level. Eigen re-packs B on
// every call (2.4M floats for ViT-B's MLP): on [197,768] x [768,3072], one thread of a Zen 3,
// Eigen took 16.9 ms (55 GFLOP/s) and this first 11.8-12.9 ms (72-79 GFLOP/s), then, with C
// kept in L2 by slices of columns, 10.4-10.9 ms (86-90 GFLOP/s; ONNX Runtime 10.1-11.3).
// Callers check has_any_isa().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "backends/cpu/aligned_array.h"
#include "backends/cpu/epilogue.h"
#include "backends/cpu/fp32_micro.h"
#include "minfer/kernel.h"

namespace minfer::cpu {

class PackedRhs {
 public:
  PackedRhs() = default;
  // Packs B [k, n] (row stride ldb), or with `transposed` B given as B^T [n, k] (Gemm's transB).
  // The tiles of one ISA level multiply it.
  PackedRhs(const float* b, int64_t k, int64_t n, int64_t ldb, bool transposed = false,
            const f32::MicroKernels& tiles = fp32_micro_kernels());

  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  Isa isa() const { return tiles_->isa; }
  // C [m, n] (row stride ldc) = act(A [m, k] (row stride lda) * B + bias), over up to
  // `threads` threads; the bias [n] on every row (in registers) and the activation (on each
  // finished stretch of 6 rows while it is in cache) when given.
  void multiply(const float* a, int64_t m, int64_t lda, float* c, int64_t ldc, int threads,
                const float* bias = nullptr, const Activation* act = nullptr) const;

  // Columns [j0, j1) of C = A * B only, on the calling thread (j0 a multiple of 16; no bias
  // or activation): for a caller that runs several products in one parallel loop.
  void multiply_columns(const float* a, int64_t m, int64_t lda, float* c, int64_t ldc, int64_t j0,
                        int64_t j1) const;

  // The same for a B known at run time (batched MatMuls: attention's Q K^T and P V): pack()
  // writes B [k, n] (row stride ldb) in the panel layout to `out` (packed_floats(k, n) floats,
  // 32-byte aligned), and multiply_packed() runs the product on the calling thread with the
  // tiles of one ISA level.
  static size_t packed_floats(int64_t k, int64_t n);
  static void pack(const float* b, int64_t k, int64_t n, int64_t ldb, float* out);
  static void multiply_packed(const f32::MicroKernels& tiles, const float* a, int64_t m,
                              int64_t lda, const float* packed, int64_t k, int64_t n, float* c,
                              int64_t ldc);

 private:
  int64_t k_ = 0, n_ = 0, panels_ = 0;
  const f32::MicroKernels* tiles_ = nullptr;
  // Panels of 16 columns (zero past n), by depth blocks of 256 rows: block b of panel p is
  // min(256, k - 256b) rows of 16 floats.
  AlignedArray<float> data_;
};

// A kernel's constant B [k, n] (or B^T [n, k] when `transposed`) packed once for the session's
// plans of every shape (PrepareContext::share under `key` and the active ISA level, whose tiles
// multiply it). For MatMul and Gemm.
std::shared_ptr<const PackedRhs> share_packed_rhs(PrepareContext& ctx, const std::string& key,
                                                  const Tensor& b, int64_t k, int64_t n,
                                                  bool transposed);

}  // namespace minfer::cpu
