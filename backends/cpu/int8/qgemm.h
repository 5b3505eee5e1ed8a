// The int8 GEMM core shared by QConv and QGemm on the CPU: packed weights, packed activation
// rows and one register-tile micro-kernel per ISA level (backends/cpu/isa/qgemm_micro.cpp,
// compiled once per level; chosen by backends/cpu/isa.h).
//
//   C[r][j] = init[j] + sum over k of A[r][k] * W[j][k]        (int32, wrapping)
//
// avx2/avx512 widen both operands to int16 and use vpmaddwd (k in pairs). The VNNI levels use
// vpdpbusd (k in quads), which multiplies unsigned by signed bytes: activations are stored as
// x + 128 (x ^ 0x80), and the caller folds -128 * sum(W[j]) into init[j] (see a_offset()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "backends/cpu/isa.h"
#include "backends/cpu/isa/isa_kernels.h"

// Compiles one function for AVX2 in a build whose baseline may lack it (the int8 requantize,
// quantize and pooling loops; dispatched at run time by has_any_isa()).
#define MINFER_TARGET(isa) __attribute__((target(isa)))
#define MINFER_TARGET_AVX2 MINFER_TARGET("avx2,fma")

namespace minfer::cpu::q8 {

// The largest tile any level writes (rows x channels), for callers' stack buffers.
inline constexpr int kMaxTileInts = 32 * 32;  // (>= narrow_mr * nr: 24 * 32)

// The micro-kernels of the highest compiled level <= isa that this CPU supports; throws
// Unsupported when there is none.
const MicroKernels& micro_kernels(Isa isa);
// The requantizing output stage of the same level.
const RequantKernels& requant_kernels(Isa isa);
// The depthwise conv's sums of the same level.
const DepthwiseKernels& depthwise_kernels(Isa isa);
// Its sums on group rows.
const DepthwiseGroupKernels& depthwise_group_kernels(Isa isa);
// QuantizeLinear of floats at the same level.
const QuantizeKernels& quantize_kernels(Isa isa);

// The constant every packed activation is offset by, plus the input zero point: the
// accumulator init of channel j is bias[j] - a_offset(k, zx) * sum_k W[j][k].
inline int32_t a_offset(const MicroKernels& k, int32_t x_zero_point) {
  return x_zero_point + k.a_offset;
}
inline int64_t k_steps(const MicroKernels& kern, int64_t k) {
  const int64_t lanes = (k + kern.kstep - 1) / kern.kstep;
  return (lanes + kern.kq_align - 1) / kern.kq_align * kern.kq_align;
}

// Weights W [n][k] (row j = output channel j) packed into ceil(n / nr) blocks of nr channels
// (zero-padded), each kq lanes x nr channels x 4 bytes.
class PackedWeights {
 public:
  PackedWeights() = default;
  PackedWeights(const MicroKernels& kern, const int8_t* w, int64_t n, int64_t k);

  const uint8_t* block(int64_t b) const { return data_.get() + b * block_bytes_; }
  size_t block_bytes() const { return block_bytes_; }
  size_t bytes() const { return block_bytes_ * static_cast<size_t>(blocks_); }
  int64_t blocks() const { return blocks_; }
  int64_t kq() const { return kq_; }
  // sum over k of W[j][k], per channel (n entries).
  const std::vector<int32_t>& row_sums() const { return row_sums_; }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> data_;
  size_t block_bytes_ = 0;
  int64_t blocks_ = 0, kq_ = 0;
  std::vector<int32_t> row_sums_;
};

}  // namespace minfer::cpu::q8
