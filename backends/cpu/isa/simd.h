// A thin vector abstraction for the kernel sources in backends/cpu/isa/: each of them is
// compiled once per ISA level with MINFER_ISA_NS (the namespace) and MINFER_ISA_LEVEL set
// (cmake/MinferIsa.cmake), and writes its loops once on these names:
//
//   VI32 / kI32Lanes   int32 vector (256 bits for avx2/avxvnni, 512 for avx512/avx512vnni)
//   dot4_u8i8(acc, a, b)  acc + sum of 4 u8 x s8 products per lane   (VNNI levels only)
//   madd_i16(acc, a, b)   acc + sum of 2 i16 x i16 products per lane (every level)
//   VF32 / kF32Lanes   fp32 vector (8 or 16 lanes) with loads, stores, broadcasts, fmadd, add,
//                      min/max (vminps/vmaxps: a NaN in the second operand is returned), and
//                      MaskF32 = the first n lanes, for loads and stores that stop at a row's end
//   Vec8, transpose8   8 floats as GCC's vector extension at every level, and their 8 x 8
//                      transpose
//   min64, max64, fill  scalar helpers (std's would be shared between levels)
//
// Everything is static inline in the level's namespace, so no two levels share a symbol.
#pragma once

#include <immintrin.h>

#include <cstdint>

#if !defined(MINFER_ISA_NS) || !defined(MINFER_ISA_LEVEL)
#error "backends/cpu/isa sources are compiled per ISA level by cmake/MinferIsa.cmake"
#endif

// Levels, as in minfer::cpu::Isa.
#define MINFER_LEVEL_AVX2 0
#define MINFER_LEVEL_AVXVNNI 1
#define MINFER_LEVEL_AVX512 2
#define MINFER_LEVEL_AVX512VNNI 3
#define MINFER_LEVEL_AMX 4

#define MINFER_ISA_WIDE (MINFER_ISA_LEVEL >= MINFER_LEVEL_AVX512)
#define MINFER_ISA_VNNI                                                                    \
  (MINFER_ISA_LEVEL == MINFER_LEVEL_AVXVNNI || MINFER_ISA_LEVEL == MINFER_LEVEL_AVX512VNNI || \
   MINFER_ISA_LEVEL == MINFER_LEVEL_AMX)

namespace minfer::cpu::MINFER_ISA_NS {

#if MINFER_ISA_WIDE
using VI32 = __m512i;
inline constexpr int kI32Lanes = 16;
static inline VI32 load_i32(const void* p) { return _mm512_loadu_si512(p); }
static inline void store_i32(void* p, VI32 v) { _mm512_storeu_si512(p, v); }
static inline VI32 splat_i32(int32_t x) { return _mm512_set1_epi32(x); }
static inline VI32 xor_i32(VI32 a, VI32 b) { return _mm512_xor_si512(a, b); }
static inline VI32 madd_i16(VI32 acc, VI32 a, VI32 b) {
  return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
}
#if MINFER_ISA_VNNI
static inline VI32 dot4_u8i8(VI32 acc, VI32 a, VI32 b) { return _mm512_dpbusd_epi32(acc, a, b); }
#endif

using VF32 = __m512;
using MaskF32 = __mmask16;
inline constexpr int kF32Lanes = 16;
static inline VF32 zero_f32() { return _mm512_setzero_ps(); }
static inline VF32 splat_f32(float x) { return _mm512_set1_ps(x); }
static inline VF32 load_f32(const float* p) { return _mm512_loadu_ps(p); }
static inline void store_f32(float* p, VF32 v) { _mm512_storeu_ps(p, v); }
static inline VF32 fmadd_f32(VF32 a, VF32 b, VF32 c) { return _mm512_fmadd_ps(a, b, c); }
static inline VF32 add_f32(VF32 a, VF32 b) { return _mm512_add_ps(a, b); }
// The all-lanes masked forms: GCC 12's _mm512_min_ps/_mm512_max_ps warn (maybe-uninitialized).
static inline VF32 min_f32(VF32 a, VF32 b) { return _mm512_maskz_min_ps(0xffff, a, b); }
static inline VF32 max_f32(VF32 a, VF32 b) { return _mm512_maskz_max_ps(0xffff, a, b); }
static inline MaskF32 first_lanes_f32(int n) {
  return n <= 0 ? 0 : n >= kF32Lanes ? 0xffff : static_cast<MaskF32>((1u << n) - 1);
}
static inline VF32 load_f32(const float* p, MaskF32 m) { return _mm512_maskz_loadu_ps(m, p); }
static inline void store_f32(float* p, VF32 v, MaskF32 m) { _mm512_mask_storeu_ps(p, m, v); }
#else
using VI32 = __m256i;
inline constexpr int kI32Lanes = 8;
static inline VI32 load_i32(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}
static inline void store_i32(void* p, VI32 v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }
static inline VI32 splat_i32(int32_t x) { return _mm256_set1_epi32(x); }
static inline VI32 xor_i32(VI32 a, VI32 b) { return _mm256_xor_si256(a, b); }
static inline VI32 madd_i16(VI32 acc, VI32 a, VI32 b) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
}
#if MINFER_ISA_VNNI
static inline VI32 dot4_u8i8(VI32 acc, VI32 a, VI32 b) {
  return _mm256_dpbusd_avx_epi32(acc, a, b);
}
#endif

using VF32 = __m256;
using MaskF32 = __m256i;
inline constexpr int kF32Lanes = 8;
static inline VF32 zero_f32() { return _mm256_setzero_ps(); }
static inline VF32 splat_f32(float x) { return _mm256_set1_ps(x); }
static inline VF32 load_f32(const float* p) { return _mm256_loadu_ps(p); }
static inline void store_f32(float* p, VF32 v) { _mm256_storeu_ps(p, v); }
static inline VF32 fmadd_f32(VF32 a, VF32 b, VF32 c) { return _mm256_fmadd_ps(a, b, c); }
static inline VF32 add_f32(VF32 a, VF32 b) { return _mm256_add_ps(a, b); }
static inline VF32 min_f32(VF32 a, VF32 b) { return _mm256_min_ps(a, b); }
static inline VF32 max_f32(VF32 a, VF32 b) { return _mm256_max_ps(a, b); }
static inline MaskF32 first_lanes_f32(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline VF32 load_f32(const float* p, MaskF32 m) { return _mm256_maskload_ps(p, m); }
static inline void store_f32(float* p, VF32 v, MaskF32 m) { _mm256_maskstore_ps(p, m, v); }
#endif

// 8 floats at every level, as GCC's vector extension (element access, +, shuffles).
using Vec8 = float __attribute__((vector_size(32)));

// r[i][j] <-> r[j][i]: the AVX 8x8 transpose (unpack, shuffle, then swap of 128-bit halves).
static inline void transpose8(Vec8 (&r)[8]) {
  Vec8 t[8], u[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; i += 2) {
    t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
#pragma GCC unroll 8
  for (int i = 0; i < 8; i += 4)
    for (int j = 0; j < 2; ++j) {
      u[i + 2 * j] = __builtin_shufflevector(t[i + j], t[i + j + 2], 0, 1, 8, 9, 4, 5, 12, 13);
      u[i + 2 * j + 1] =
          __builtin_shufflevector(t[i + j], t[i + j + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    }
#pragma GCC unroll 8
  for (int j = 0; j < 4; ++j) {
    r[j] = __builtin_shufflevector(u[j], u[j + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    r[j + 4] = __builtin_shufflevector(u[j], u[j + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}

// Scalar helpers in place of std::min, std::max and std::fill, whose inline copies the linker
// would share between levels (tests/isa/check_isa_objects.sh).
static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static inline void fill(float* p, int64_t n, float v) {
  for (int64_t i = 0; i < n; ++i) p[i] = v;
}
}  // namespace minfer::cpu::MINFER_ISA_NS
