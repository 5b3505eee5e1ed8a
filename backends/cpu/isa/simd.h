// A thin vector abstraction for the kernel sources in backends/cpu/isa/: each of them is
// compiled once per ISA level with MINFER_ISA_NS (the namespace) and MINFER_ISA_LEVEL set
// (cmake/MinferIsa.cmake), and writes its loops once on these names:
//
//   VI32 / kI32Lanes   int32 vector (256 bits for avx2/avxvnni, 512 for avx512/avx512vnni)
//   dot4_u8i8(acc, a, b)  acc + sum of 4 u8 x s8 products per lane   (VNNI levels only)
//   madd_i16(acc, a, b)   acc + sum of 2 i16 x i16 products per lane (every level)
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

#define MINFER_ISA_WIDE (MINFER_ISA_LEVEL >= MINFER_LEVEL_AVX512)
#define MINFER_ISA_VNNI \
  (MINFER_ISA_LEVEL == MINFER_LEVEL_AVXVNNI || MINFER_ISA_LEVEL == MINFER_LEVEL_AVX512VNNI)

namespace minfer::cpu::MINFER_ISA_NS {

#if MINFER_ISA_WIDE
using VI32 = __m512i;
inline constexpr int kI32Lanes = 16;
static inline VI32 load_i32(const void* p) { return _mm512_loadu_si512(p); }
static inline void store_i32(void* p, VI32 v) { _mm512_storeu_si512(p, v); }
static inline VI32 splat_i32(int32_t x) { return _mm512_set1_epi32(x); }
static inline VI32 madd_i16(VI32 acc, VI32 a, VI32 b) {
  return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
}
#if MINFER_ISA_VNNI
static inline VI32 dot4_u8i8(VI32 acc, VI32 a, VI32 b) { return _mm512_dpbusd_epi32(acc, a, b); }
#endif
#else
using VI32 = __m256i;
inline constexpr int kI32Lanes = 8;
static inline VI32 load_i32(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}
static inline void store_i32(void* p, VI32 v) { _mm256_storeu_si256(static_cast<__m256i*>(p), v); }
static inline VI32 splat_i32(int32_t x) { return _mm256_set1_epi32(x); }
static inline VI32 madd_i16(VI32 acc, VI32 a, VI32 b) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
}
#if MINFER_ISA_VNNI
static inline VI32 dot4_u8i8(VI32 acc, VI32 a, VI32 b) {
  return _mm256_dpbusd_avx_epi32(acc, a, b);
}
#endif
#endif
}  // namespace minfer::cpu::MINFER_ISA_NS
