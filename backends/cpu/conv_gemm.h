// The product of a conv's constant weights with an unpacked activation block, the whole
// epilogue applied in registers:
//
//   Y[m, q] = act(W[m, :] . X[:, q] + B[m] + Z[m, q])        (W [M, K]; X [K, cols] row-major)
//
// X is read where it lies (a 1x1 conv's input planes, or a row-major im2col block), so nothing
// but the weights is packed, and Y is written once. The Eigen path (packed_gemm.h) pre-fills Y
// with the bias, accumulates onto it and clamps it afterwards: three passes over an output
// that, for the small depths of MobileNet's expansion layers (K = 16..32, 96..192 channels of
// 112x112 or 56x56), costs more than the arithmetic.
//
// The micro-kernel holds a 6 x 16 tile of Y in 12 AVX2 registers; per step of K it loads 2
// vectors of X and broadcasts 6 weights (12 FMAs to 8 loads). W is packed once into panels of
// 6 rows, k-major. AVX2 + FMA (callers check has_any_isa()).
#pragma once

#include <cstdint>
#include <memory>

#include "backends/cpu/epilogue.h"

namespace minfer::cpu {

class ConvGemm {
 public:
  ConvGemm() = default;
  // Packs W [m, k] (row-major, row stride k).
  ConvGemm(const float* w, int64_t m, int64_t k);

  int64_t rows() const { return m_; }
  int64_t depth() const { return k_; }
  size_t packed_bytes() const;

  // Y columns [0, cols): X [k, cols] (row stride ldx), Y and Z [m, cols] (row stride ldy; Z
  // may be null, as may B).
  void run(const float* x, int64_t ldx, int64_t cols, const float* bias, const float* z,
           float* y, int64_t ldy, const Activation& act) const;

  // Whether this path beats the Eigen one for a product of this depth and width: measured on
  // 1x1 convs (Zen 3, 1 thread), it won by 3-29% from K = 16 to 192 on planes of 28x28 and
  // more, and lost by up to 24% at K >= 256 or on 14x14 and 7x7 planes (where X's K rows are
  // many streams for few columns). MINFER_CPU_CONV_GEMM=0 turns it off (A/B benchmarks).
  static constexpr int64_t kMaxDepth = 192, kMinColumns = 784;
  static bool pays(int64_t k, int64_t cols);

 private:
  int64_t m_ = 0, k_ = 0;
  struct AlignedFree {
    void operator()(float* p) const;
  };
  // Panel r (rows 6r..6r+5, zero past m): k steps of 6 floats, at r * k * 6.
  std::unique_ptr<float[], AlignedFree> data_;
};

}  // namespace minfer::cpu
