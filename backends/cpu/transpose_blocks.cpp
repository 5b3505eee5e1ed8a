// Square blocks transposed in registers (transpose_blocks.h).
#include "backends/cpu/transpose_blocks.h"

#include <immintrin.h>

namespace minfer::cpu {

// Four rounds of interleaves; the scalar loop moved 1.5 bytes a cycle (DenseNet-121 int8's
// NCHW -> NHWC Transposes, 6.3 of its 16 ms).
__attribute__((target("avx2"))) void transpose_bytes_16x16(const uint8_t* src, int64_t src_stride,
                                                           uint8_t* dst, int64_t dst_stride) {
  __m128i r[16], t[16];
  for (int b = 0; b < 16; ++b)
    r[b] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + b * src_stride));
  for (int k = 0; k < 8; ++k) {  // byte pairs of rows 2k, 2k + 1: t[2k] a 0-7, t[2k + 1] a 8-15
    t[2 * k] = _mm_unpacklo_epi8(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm_unpackhi_epi8(r[2 * k], r[2 * k + 1]);
  }
  for (int j = 0; j < 4; ++j) {  // rows 4j..4j+3: r[4j + q] a 4q..4q+3
    r[4 * j] = _mm_unpacklo_epi16(t[4 * j], t[4 * j + 2]);
    r[4 * j + 1] = _mm_unpackhi_epi16(t[4 * j], t[4 * j + 2]);
    r[4 * j + 2] = _mm_unpacklo_epi16(t[4 * j + 1], t[4 * j + 3]);
    r[4 * j + 3] = _mm_unpackhi_epi16(t[4 * j + 1], t[4 * j + 3]);
  }
  for (int h = 0; h < 2; ++h)  // rows 8h..8h+7: t[8h + 2q + e] a 4q + 2e, 4q + 2e + 1
    for (int q = 0; q < 4; ++q) {
      t[8 * h + 2 * q] = _mm_unpacklo_epi32(r[8 * h + q], r[8 * h + 4 + q]);
      t[8 * h + 2 * q + 1] = _mm_unpackhi_epi32(r[8 * h + q], r[8 * h + 4 + q]);
    }
  for (int k = 0; k < 8; ++k) {  // rows 0-7 and 8-15 of a = 2k and 2k + 1
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * k * dst_stride),
                     _mm_unpacklo_epi64(t[k], t[8 + k]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (2 * k + 1) * dst_stride),
                     _mm_unpackhi_epi64(t[k], t[8 + k]));
  }
}

// Three rounds: pairs, quads, then the 128-bit halves.
__attribute__((target("avx2"))) void transpose_words_8x8(const uint32_t* src, int64_t src_stride,
                                                         uint32_t* dst, int64_t dst_stride) {
  __m256 r[8], t[8];
  for (int b = 0; b < 8; ++b)
    r[b] = _mm256_loadu_ps(reinterpret_cast<const float*>(src + b * src_stride));
  for (int k = 0; k < 4; ++k) {
    t[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
  }
  for (int j = 0; j < 2; ++j) {
    r[4 * j] = _mm256_shuffle_ps(t[4 * j], t[4 * j + 2], 0x44);
    r[4 * j + 1] = _mm256_shuffle_ps(t[4 * j], t[4 * j + 2], 0xEE);
    r[4 * j + 2] = _mm256_shuffle_ps(t[4 * j + 1], t[4 * j + 3], 0x44);
    r[4 * j + 3] = _mm256_shuffle_ps(t[4 * j + 1], t[4 * j + 3], 0xEE);
  }
  for (int q = 0; q < 4; ++q) {
    _mm256_storeu_ps(reinterpret_cast<float*>(dst + q * dst_stride),
                     _mm256_permute2f128_ps(r[q], r[4 + q], 0x20));
    _mm256_storeu_ps(reinterpret_cast<float*>(dst + (q + 4) * dst_stride),
                     _mm256_permute2f128_ps(r[q], r[4 + q], 0x31));
  }
}

}  // namespace minfer::cpu
