// AVX2 int8 GEMM micro-kernel: 6 rows x 16 channels, int16 operands, vpmaddwd (no saturation:
// each int16 pair sum is at most 2 * 128 * 128).
#include <immintrin.h>

#include <cstring>

#include "backends/cpu/int8/qgemm.h"

namespace minfer::cpu::q8 {

namespace {

template <int R>
MINFER_TARGET_AVX2 inline void tile_avx2(const uint8_t* a, int64_t a_stride, const uint8_t* b,
                                         int64_t kq, const int32_t* init, int32_t* c) {
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
      int32_t pair;
      std::memcpy(&pair, a + r * a_stride + q * 4, 4);
      const __m256i av = _mm256_set1_epi32(pair);
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(av, b0));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(av, b1));
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * 16), acc[r][0]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * 16 + 8), acc[r][1]);
  }
}

}  // namespace

MINFER_TARGET_AVX2 void micro_kernel_avx2(const uint8_t* a, int64_t a_stride, const uint8_t* b,
                                          int64_t kq, int rows, const int32_t* init, int32_t* c) {
  switch (rows) {
    case 6:
      tile_avx2<6>(a, a_stride, b, kq, init, c);
      break;
    case 5:
      tile_avx2<5>(a, a_stride, b, kq, init, c);
      break;
    case 4:
      tile_avx2<4>(a, a_stride, b, kq, init, c);
      break;
    case 3:
      tile_avx2<3>(a, a_stride, b, kq, init, c);
      break;
    case 2:
      tile_avx2<2>(a, a_stride, b, kq, init, c);
      break;
    default:
      tile_avx2<1>(a, a_stride, b, kq, init, c);
      break;
  }
}

MINFER_TARGET_AVX2 void pack_a_row_avx2(const int8_t* x, int64_t k, int64_t kq, uint8_t* out) {
  int16_t* o = reinterpret_cast<int16_t*>(out);
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i), _mm256_cvtepi8_epi16(v));
  }
  for (; i < k; ++i) o[i] = x[i];
  for (; i < kq * 2; ++i) o[i] = 0;
}

}  // namespace minfer::cpu::q8
