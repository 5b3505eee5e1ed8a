// ONNX QuantizeLinear of floats to int8 or uint8 at each ISA level (backends/cpu/int8/
// requant.h: the QuantizeLinear kernel and the int8 output after a smooth activation): y =
// saturate(round(x / scale) + zero_point), a NaN giving the zero point; the reference's exact
// operations (int8::quantize_value): a float division, rounding half to even, the add and the
// clamp in float. 16 floats a vector on the 512-bit levels, whose masked loads and stores take
// the last few (1.6x the 8-float loop's speed, Zen 4); the 256-bit levels take them through a
// padded vector.
#include <cstring>

#include "backends/cpu/isa/isa_kernels.h"
#include "backends/cpu/isa/simd.h"

namespace minfer::cpu::MINFER_ISA_NS {

namespace {

#if MINFER_ISA_WIDE
// The first n (< 16) or all 16 floats at x, quantized, to the first n bytes at y.
static inline void quantize_vector(const float* x, int64_t n, __m512 scale, __m512 zero_point,
                                   __m512 lo, __m512 hi, __m512i zero_point_int, uint8_t* y) {
  const __mmask16 m = n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
  const __m512 v = _mm512_maskz_loadu_ps(m, x);
  const __m512 r = _mm512_maskz_roundscale_ps(0xffff, _mm512_div_ps(v, scale),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  const __m512 c = min_f32(max_f32(_mm512_add_ps(r, zero_point), lo), hi);
  // (The all-lanes masked forms: GCC 12 warns on the plain ones.)
  const __m512i q =
      _mm512_mask_mov_epi32(_mm512_maskz_cvttps_epi32(0xffff, c), nan, zero_point_int);
  // In range for the type: the low byte is the value (int8 or uint8).
  _mm_mask_storeu_epi8(y, m, _mm512_maskz_cvtepi32_epi8(0xffff, q));
}

void quantize(const float* x, int64_t n, float scale, int32_t zero_point, bool to_u8,
              void* out) {
  const __m512 s = splat_f32(scale), zf = splat_f32(float(zero_point));
  const __m512 lo = splat_f32(to_u8 ? 0.f : -128.f), hi = splat_f32(to_u8 ? 255.f : 127.f);
  const __m512i zi = splat_i32(zero_point);
  uint8_t* y = static_cast<uint8_t*>(out);
  for (int64_t i = 0; i < n; i += 16) quantize_vector(x + i, n - i, s, zf, lo, hi, zi, y + i);
}
#else
static inline void quantize_vector(const float* x, __m256 scale, __m256 zero_point, __m256 lo,
                                   __m256 hi, __m256i zero_point_int, bool to_u8, uint8_t* y) {
  const __m256 v = _mm256_loadu_ps(x);
  const __m256 r =
      _mm256_round_ps(_mm256_div_ps(v, scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
  const __m256 c = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(r, zero_point), lo), hi);
  const __m256i q =
      _mm256_blendv_epi8(_mm256_cvttps_epi32(c), zero_point_int, _mm256_castps_si256(nan));
  const __m256i w = _mm256_packs_epi32(q, q);
  const __m256i b = to_u8 ? _mm256_packus_epi16(w, w) : _mm256_packs_epi16(w, w);
  const int64_t bytes = _mm_cvtsi128_si64(
      _mm_unpacklo_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1)));
  std::memcpy(y, &bytes, 8);
}

void quantize(const float* x, int64_t n, float scale, int32_t zero_point, bool to_u8,
              void* out) {
  const __m256 s = splat_f32(scale), zf = splat_f32(float(zero_point));
  const __m256 lo = splat_f32(to_u8 ? 0.f : -128.f), hi = splat_f32(to_u8 ? 255.f : 127.f);
  const __m256i zi = splat_i32(zero_point);
  uint8_t* y = static_cast<uint8_t*>(out);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) quantize_vector(x + i, s, zf, lo, hi, zi, to_u8, y + i);
  if (i == n) return;
  // The last few through a padded vector (zeros quantize harmlessly; only n - i bytes leave).
  float tail[8] = {};
  std::memcpy(tail, x + i, size_t(n - i) * sizeof(float));
  uint8_t bytes[8];
  quantize_vector(tail, s, zf, lo, hi, zi, to_u8, bytes);
  std::memcpy(y + i, bytes, size_t(n - i));
}
#endif

}  // namespace

extern const q8::QuantizeKernels kQuantizeKernels;
const q8::QuantizeKernels kQuantizeKernels{static_cast<Isa>(MINFER_ISA_LEVEL), quantize};

}  // namespace minfer::cpu::MINFER_ISA_NS
