// VNNI int8 GEMM micro-kernels: vpdpbusd multiplies activations stored as unsigned x + 128 by
// signed weights, four k at a time, into int32 (wrapping, no saturation). AVX-VNNI: 6 rows x
// 16 channels on ymm registers; AVX512-VNNI: 8 rows x 32 channels on zmm registers. Compiled
// for those ISAs per function and only called when the CPU has them (isa.cpp).
#include <immintrin.h>

#include <cstring>

#include "backends/cpu/int8/qgemm.h"

#define MINFER_TARGET_AVX_VNNI MINFER_TARGET("avx2,fma,avxvnni")
#define MINFER_TARGET_AVX512_VNNI MINFER_TARGET("avx2,fma,avx512f,avx512bw,avx512vl,avx512vnni")

namespace minfer::cpu::q8 {

namespace {

template <int R>
MINFER_TARGET_AVX_VNNI inline void tile_avx_vnni(const uint8_t* a, int64_t a_stride,
                                                 const uint8_t* b, int64_t kq, const int32_t* init,
                                                 int32_t* c) {
  __m256i acc[R][2];
  const __m256i i0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(init));
  const __m256i i1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(init + 8));
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    acc[r][0] = i0;
    acc[r][1] = i1;
  }
  for (int64_t q = 0; q < kq; ++q) {
    const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + q * 64));
    const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + q * 64 + 32));
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      int32_t quad;
      std::memcpy(&quad, a + r * a_stride + q * 4, 4);
      const __m256i av = _mm256_set1_epi32(quad);
      acc[r][0] = _mm256_dpbusd_avx_epi32(acc[r][0], av, b0);
      acc[r][1] = _mm256_dpbusd_avx_epi32(acc[r][1], av, b1);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * 16), acc[r][0]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * 16 + 8), acc[r][1]);
  }
}

template <int R>
MINFER_TARGET_AVX512_VNNI inline void tile_avx512_vnni(const uint8_t* a, int64_t a_stride,
                                                       const uint8_t* b, int64_t kq,
                                                       const int32_t* init, int32_t* c) {
  __m512i acc[R][2];
  const __m512i i0 = _mm512_loadu_si512(init);
  const __m512i i1 = _mm512_loadu_si512(init + 16);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    acc[r][0] = i0;
    acc[r][1] = i1;
  }
  for (int64_t q = 0; q < kq; ++q) {
    const __m512i b0 = _mm512_loadu_si512(b + q * 128);
    const __m512i b1 = _mm512_loadu_si512(b + q * 128 + 64);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      int32_t quad;
      std::memcpy(&quad, a + r * a_stride + q * 4, 4);
      const __m512i av = _mm512_set1_epi32(quad);
      acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], av, b0);
      acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], av, b1);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    _mm512_storeu_si512(c + r * 32, acc[r][0]);
    _mm512_storeu_si512(c + r * 32 + 16, acc[r][1]);
  }
}

}  // namespace

MINFER_TARGET_AVX_VNNI void micro_kernel_avx_vnni(const uint8_t* a, int64_t a_stride,
                                                  const uint8_t* b, int64_t kq, int rows,
                                                  const int32_t* init, int32_t* c) {
  switch (rows) {
    case 6:
      tile_avx_vnni<6>(a, a_stride, b, kq, init, c);
      break;
    case 5:
      tile_avx_vnni<5>(a, a_stride, b, kq, init, c);
      break;
    case 4:
      tile_avx_vnni<4>(a, a_stride, b, kq, init, c);
      break;
    case 3:
      tile_avx_vnni<3>(a, a_stride, b, kq, init, c);
      break;
    case 2:
      tile_avx_vnni<2>(a, a_stride, b, kq, init, c);
      break;
    default:
      tile_avx_vnni<1>(a, a_stride, b, kq, init, c);
      break;
  }
}

MINFER_TARGET_AVX512_VNNI void micro_kernel_avx512_vnni(const uint8_t* a, int64_t a_stride,
                                                        const uint8_t* b, int64_t kq, int rows,
                                                        const int32_t* init, int32_t* c) {
  switch (rows) {
    case 8:
      tile_avx512_vnni<8>(a, a_stride, b, kq, init, c);
      break;
    case 7:
      tile_avx512_vnni<7>(a, a_stride, b, kq, init, c);
      break;
    case 6:
      tile_avx512_vnni<6>(a, a_stride, b, kq, init, c);
      break;
    case 5:
      tile_avx512_vnni<5>(a, a_stride, b, kq, init, c);
      break;
    case 4:
      tile_avx512_vnni<4>(a, a_stride, b, kq, init, c);
      break;
    case 3:
      tile_avx512_vnni<3>(a, a_stride, b, kq, init, c);
      break;
    case 2:
      tile_avx512_vnni<2>(a, a_stride, b, kq, init, c);
      break;
    default:
      tile_avx512_vnni<1>(a, a_stride, b, kq, init, c);
      break;
  }
}

// x ^ 0x80 = x + 128 as an unsigned byte; padding lanes are 0 (their weights are 0).
MINFER_TARGET_AVX2 void pack_a_row_vnni(const int8_t* x, int64_t k, int64_t kq, uint8_t* out) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  int64_t i = 0;
  for (; i + 32 <= k; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_xor_si256(v, flip));
  }
  for (; i < k; ++i) out[i] = static_cast<uint8_t>(x[i]) ^ 0x80;
  for (; i < kq * 4; ++i) out[i] = 0;
}

}  // namespace minfer::cpu::q8
