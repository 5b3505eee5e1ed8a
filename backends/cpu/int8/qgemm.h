// The int8 GEMM core shared by QConv and QGemm on the CPU: packed weights, packed activation
// rows and one register-tile micro-kernel per ISA path (backends/cpu/int8/isa.h).
//
//   C[r][j] = init[j] + sum over k of A[r][k] * W[j][k]        (int32, wrapping)
//
// AVX2 widens both operands to int16 and uses vpmaddwd (k in pairs): vpmaddubsw would be
// faster but saturates its int16 pair sums. The VNNI paths use vpdpbusd (k in quads), which
// multiplies unsigned by signed bytes: activations are stored as x + 128 (x ^ 0x80), and the
// caller folds -128 * sum(W[j]) into init[j] (see a_offset()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/cpu/int8/isa.h"

// Compiles one function for an ISA the build's baseline may lack (dispatched at run time).
#define MINFER_TARGET(isa) __attribute__((target(isa)))
#define MINFER_TARGET_AVX2 MINFER_TARGET("avx2,fma")

namespace minfer::cpu::q8 {

struct GemmGeometry {
  int mr = 6;     // rows (output pixels) per micro-tile
  int nr = 16;    // output channels per micro-tile and per packed weight block
  int kstep = 2;  // k values per 32-bit lane: 2 (int16 pairs) or 4 (byte quads)
};
GemmGeometry gemm_geometry(Int8Isa isa);

// The constant every packed activation is offset by, plus the input zero point: the
// accumulator init of channel j is bias[j] - a_offset(isa, zx) * sum_k W[j][k].
int32_t a_offset(Int8Isa isa, int32_t x_zero_point);

// Micro-kernel: for r < rows (rows <= mr), C[r * nr + j] = init[j] + sum over k-steps of the
// packed row a + r * a_stride (kq lanes of 4 bytes) times the packed weight block b.
using MicroKernel = void (*)(const uint8_t* a, int64_t a_stride, const uint8_t* b, int64_t kq,
                             int rows, const int32_t* init, int32_t* c);
MicroKernel micro_kernel(Int8Isa isa);

// Packs one row of K int8 activations into kq lanes (int16 for AVX2, x ^ 0x80 for VNNI).
void pack_a_row(Int8Isa isa, const int8_t* x, int64_t k, int64_t kq, uint8_t* out);
inline int64_t k_steps(Int8Isa isa, int64_t k) {
  const int s = gemm_geometry(isa).kstep;
  return (k + s - 1) / s;
}

// Weights W [n][k] (row j = output channel j) packed into ceil(n / nr) blocks of nr channels
// (zero-padded), each kq lanes x nr channels x 4 bytes.
class PackedWeights {
 public:
  PackedWeights() = default;
  PackedWeights(Int8Isa isa, const int8_t* w, int64_t n, int64_t k);

  const uint8_t* block(int64_t b) const { return data_.get() + b * block_bytes_; }
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

// The per-ISA micro-kernels (qgemm_avx2.cpp, qgemm_vnni.cpp).
void micro_kernel_avx2(const uint8_t* a, int64_t a_stride, const uint8_t* b, int64_t kq, int rows,
                       const int32_t* init, int32_t* c);
void micro_kernel_avx_vnni(const uint8_t* a, int64_t a_stride, const uint8_t* b, int64_t kq,
                           int rows, const int32_t* init, int32_t* c);
void micro_kernel_avx512_vnni(const uint8_t* a, int64_t a_stride, const uint8_t* b, int64_t kq,
                              int rows, const int32_t* init, int32_t* c);
void pack_a_row_avx2(const int8_t* x, int64_t k, int64_t kq, uint8_t* out);
void pack_a_row_vnni(const int8_t* x, int64_t k, int64_t kq, uint8_t* out);

}  // namespace minfer::cpu::q8
