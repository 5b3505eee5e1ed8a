// ONNX QuantizeLinear of floats to int8 or uint8 at each ISA level (backends/cpu/int8/
// requant.h: the QuantizeLinear kernel and the int8 output after a smooth activation): y =
// saturate(round(x / scale) + zero_point), a NaN giving the zero point; the reference's exact
// operations (int8::quantize_value): a float division, rounding half to even, the add and the
// clamp in float. 16 floats a vector on the 512-bit levels, whose masked loads and stores take
// the last few (1.6x the 8-float loop's speed, Zen 4); the 256-bit levels go by blocks of 32
// floats, then vectors of 8, the last few through a padded vector. (The division is not what
// bounds it: a multiplication by 1 / scale refined by two FMAs to the same quotient ran slower
// on a Zen 5, at both widths.) The gated form (com.minfer:GatedQuantize, an SE block's channel
// gate) first multiplies each float by its channel's gate, as the Mul before it would have.
#include <cstring>

#include "backends/cpu/isa/isa_kernels.h"
#include "backends/cpu/isa/simd.h"

namespace minfer::cpu::MINFER_ISA_NS {

namespace {

struct Constants {
  VF32 scale, zero_point, lo, hi;
  VI32 zero_point_int;
  bool to_u8;
};

#if MINFER_ISA_WIDE
// The floats at x in lanes m (kGated: times those at g), quantized, as int32 lanes (in range
// for the type; the other lanes quantize zeros).
template <bool kGated>
static inline VI32 quantize_lanes(const float* x, const float* g, __mmask16 m, const Constants& k) {
  __m512 v = _mm512_maskz_loadu_ps(m, x);
  if constexpr (kGated) v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, g));
  const __m512 r = _mm512_maskz_roundscale_ps(0xffff, _mm512_div_ps(v, k.scale),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  const __m512 c = min_f32(max_f32(_mm512_add_ps(r, k.zero_point), k.lo), k.hi);
  // (The all-lanes masked forms: GCC 12 warns on the plain ones.)
  return _mm512_mask_mov_epi32(_mm512_maskz_cvttps_epi32(0xffff, c), nan, k.zero_point_int);
}
// The first n (<= 16) floats at x (kGated: times those at g), quantized, to the first n bytes
// at y.
template <bool kGated>
static inline void quantize_vector(const float* x, const float* g, int64_t n, const Constants& k,
                                   uint8_t* y) {
  const __mmask16 m = n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
  // In range for the type: the low byte is the value (int8 or uint8).
  _mm_mask_storeu_epi8(y, m,
                       _mm512_maskz_cvtepi32_epi8(0xffff, quantize_lanes<kGated>(x, g, m, k)));
}
// sum + the lanes m of the n (<= 16) floats at x quantized.
static inline VI32 add_quantized(VI32 sum, const float* x, int64_t n, const Constants& k) {
  const __mmask16 m = n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
  return _mm512_mask_add_epi32(sum, m, sum, quantize_lanes<false>(x, x, m, k));
}
template <bool kGated>
static inline void quantize_tail(const float* x, const float* g, int64_t n, const Constants& k,
                                 uint8_t* y) {
  quantize_vector<kGated>(x, g, n, k, y);
}
#else
// The 8 floats at x (kGated: times those at g), quantized, as int32 lanes (in range for the
// type); with kMasked only the lanes of m are read (the others quantize zeros).
template <bool kGated, bool kMasked = false>
static inline __m256i quantize_lanes(const float* x, const float* g, const Constants& k,
                                     __m256i m = __m256i{}) {
  __m256 v = kMasked ? _mm256_maskload_ps(x, m) : _mm256_loadu_ps(x);
  if constexpr (kGated) v = _mm256_mul_ps(v, _mm256_loadu_ps(g));
  const __m256 r =
      _mm256_round_ps(_mm256_div_ps(v, k.scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
  const __m256 c = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(r, k.zero_point), k.lo), k.hi);
  return _mm256_blendv_epi8(_mm256_cvttps_epi32(c), k.zero_point_int, _mm256_castps_si256(nan));
}
// 32 floats at x, quantized, to 32 bytes at y: the 4 vectors' lanes packed together and put in
// order by one permute, one store (a vector's 8 bytes packed and stored alone took 1.4x the
// time, a Zen 5).
template <bool kGated>
static inline void quantize_block(const float* x, const float* g, const Constants& k, uint8_t* y) {
  const __m256i w01 =
      _mm256_packs_epi32(quantize_lanes<kGated>(x, g, k), quantize_lanes<kGated>(x + 8, g + 8, k));
  const __m256i w23 = _mm256_packs_epi32(quantize_lanes<kGated>(x + 16, g + 16, k),
                                         quantize_lanes<kGated>(x + 24, g + 24, k));
  // Per 128-bit half, 4 lanes of each vector in turn: 4-byte groups 0a 1a 2a 3a 0b 1b 2b 3b.
  const __m256i b = k.to_u8 ? _mm256_packus_epi16(w01, w23) : _mm256_packs_epi16(w01, w23);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(y), _mm256_permutevar8x32_epi32(b, order));
}
template <bool kGated>
static inline void quantize_vector(const float* x, const float* g, int64_t, const Constants& k,
                                   uint8_t* y) {
  const __m256i q = quantize_lanes<kGated>(x, g, k);
  const __m256i w = _mm256_packs_epi32(q, q);
  const __m256i b = k.to_u8 ? _mm256_packus_epi16(w, w) : _mm256_packs_epi16(w, w);
  const int64_t bytes = _mm_cvtsi128_si64(
      _mm_unpacklo_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1)));
  std::memcpy(y, &bytes, 8);
}
// sum + the n (<= 8) floats at x quantized (the lanes past n add nothing).
static inline VI32 add_quantized(VI32 sum, const float* x, int64_t n, const Constants& k) {
  if (n >= 8) return _mm256_add_epi32(sum, quantize_lanes<false>(x, x, k));
  const __m256i m = first_lanes_f32(int(n));
  return _mm256_add_epi32(sum, _mm256_and_si256(m, quantize_lanes<false, true>(x, x, k, m)));
}
// The last few (n < 8) through padded vectors (zeros quantize harmlessly; n bytes leave).
template <bool kGated>
static inline void quantize_tail(const float* x, const float* g, int64_t n, const Constants& k,
                                 uint8_t* y) {
  float padded[8] = {}, gates[8] = {};
  std::memcpy(padded, x, size_t(n) * sizeof(float));
  if constexpr (kGated) std::memcpy(gates, g, size_t(n) * sizeof(float));
  uint8_t bytes[8];
  quantize_vector<kGated>(padded, gates, 8, k, bytes);
  std::memcpy(y, bytes, size_t(n));
}
#endif

Constants constants(float scale, int32_t zero_point, bool to_u8) {
  return {splat_f32(scale),
          splat_f32(float(zero_point)),
          splat_f32(to_u8 ? 0.f : -128.f),
          splat_f32(to_u8 ? 255.f : 127.f),
          splat_i32(zero_point),
          to_u8};
}

// n floats from x (kGated: times the gates from g), quantized, to n bytes at y.
template <bool kGated>
static inline void quantize_run(const float* x, const float* g, int64_t n, const Constants& k,
                                uint8_t* y) {
  int64_t i = 0;
#if !MINFER_ISA_WIDE
  for (; i + 4 * kF32Lanes <= n; i += 4 * kF32Lanes) quantize_block<kGated>(x + i, g + i, k, y + i);
#endif
  for (; i + kF32Lanes <= n; i += kF32Lanes)
    quantize_vector<kGated>(x + i, g + i, kF32Lanes, k, y + i);
  if (i < n) quantize_tail<kGated>(x + i, g + i, n - i, k, y + i);
}

void quantize(const float* x, int64_t n, float scale, int32_t zero_point, bool to_u8, void* out) {
  quantize_run<false>(x, x, n, constants(scale, zero_point, to_u8), static_cast<uint8_t*>(out));
}

void quantize_gated(const float* x, int64_t rows, int64_t channels, const float* gate, float scale,
                    int32_t zero_point, void* out) {
  const Constants k = constants(scale, zero_point, false);
  int8_t* y = static_cast<int8_t*>(out);
  for (int64_t r = 0; r < rows; ++r)
    quantize_run<true>(x + r * channels, gate, channels, k,
                       reinterpret_cast<uint8_t*>(y + r * channels));
}

// acc[c] += the `pixels` rows of `channels` floats at x, channel c of each, quantized to int8:
// blocks of 4 vectors of channels, their sums held in registers down the rows, so that the
// int8 values are never stored.
void quantize_sum(const float* x, int64_t pixels, int64_t channels, float scale, int32_t zero_point,
                  int32_t* acc) {
  const Constants k = constants(scale, zero_point, false);
  constexpr int kVectors = 4;
  for (int64_t c0 = 0; c0 < channels; c0 += kVectors * kI32Lanes) {
    const int64_t n = min64(kVectors * kI32Lanes, channels - c0);
    VI32 sums[kVectors];
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) sums[v] = splat_i32(0);
    for (int64_t p = 0; p < pixels; ++p) {
      const float* row = x + p * channels + c0;
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v)
        if (v * kI32Lanes < n)
          sums[v] = add_quantized(sums[v], row + v * kI32Lanes, n - v * kI32Lanes, k);
    }
    alignas(64) int32_t lanes[kVectors * kI32Lanes];
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) store_i32(lanes + v * kI32Lanes, sums[v]);
    for (int64_t j = 0; j < n; ++j) acc[c0 + j] += lanes[j];
  }
}

}  // namespace

extern const q8::QuantizeKernels kQuantizeKernels;
const q8::QuantizeKernels kQuantizeKernels{static_cast<Isa>(MINFER_ISA_LEVEL), quantize,
                                           quantize_gated, quantize_sum};

}  // namespace minfer::cpu::MINFER_ISA_NS
