// The epilogue's smooth activations (backends/cpu/smooth_activation.h) at each ISA level's
// vector width: 16 lanes on AVX-512 (SiLU is about a quarter of EfficientNet-B0's time).
// Sigmoid and SiLU have their own exp here (below), as has Softmax's row; the other kinds take
// the generic code (smooth_activation.h).
#include <cmath>

#include "backends/cpu/isa/isa_kernels.h"
#include "backends/cpu/isa/simd.h"
#include "backends/cpu/smooth_activation.h"

namespace minfer::cpu::MINFER_ISA_NS {

namespace {
using VecW = float __attribute__((vector_size(4 * kF32Lanes)));
using IntW = int32_t __attribute__((vector_size(4 * kF32Lanes)));

// exp(t) = 1 + t * q(t) on [-ln2 / 2, ln2 / 2]: q fitted for the least maximum relative error
// (9e-8, 1.6e-7 evaluated in float).
constexpr float kQ0 = 0.9999997019767761f, kQ1 = 0.4999915063381195f,
                kQ2 = 0.1666763573884964f, kQ3 = 0.04189793020486832f,
                kQ4 = 0.008290315046906471f;

// Per level: rounding to the nearest integer, v * 2^n for an integral n, and the range that
// sigmoid_vec clamps x to (exp(-x) stays finite).
#if MINFER_ISA_WIDE
static inline VF32 round_nearest(VF32 v) {
  // (The all-lanes masked forms, as in simd.h: GCC 12 warns about the plain ones.)
  return _mm512_maskz_roundscale_ps(0xffff, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
static inline VF32 times_pow2(VF32 v, VF32 n) { return _mm512_maskz_scalef_ps(0xffff, v, n); }
constexpr float kMinX = -88.f, kMaxX = 100.f;
#else
static inline VF32 round_nearest(VF32 v) {
  return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
// No scalef: n added to the exponent bits, right while v * 2^n is a normal float; x is clamped
// as exp_lanes (vec8.h) clamps it, so that only an e below 2^-126 can come out wrong, where
// 1 + e rounds to 1 either way. (The generic code, with compares and blends for the
// clamp, a degree-6 polynomial and rounding by adding 1.5 * 2^23, took 0.36 ns a float where
// this takes 0.25, a Zen 5 at MINFER_ISA=avx2, in L1.)
static inline VF32 times_pow2(VF32 v, VF32 n) {
  const __m256i exponent = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
  return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(v), exponent));
}
constexpr float kMinX = -88.37626f, kMaxX = 87.33654f;
#endif

// exp(v) for v within the clamped ranges of sigmoid_vec and exp_shifted: (1 + r q(r)) * 2^n,
// n = round(v / ln2), r = v - n ln2 (ln2 in two parts).
static inline VF32 exp_clamped(VF32 v) {
  const VF32 n = round_nearest(v * splat_f32(1.44269504f));
  VF32 r = fmadd_f32(n, splat_f32(-0.693359375f), v);
  r = fmadd_f32(n, splat_f32(2.12194440e-4f), r);
  VF32 q = fmadd_f32(splat_f32(kQ4), r, splat_f32(kQ3));
  q = fmadd_f32(q, r, splat_f32(kQ2));
  q = fmadd_f32(q, r, splat_f32(kQ1));
  q = fmadd_f32(q, r, splat_f32(kQ0));
  return times_pow2(fmadd_f32(q, r, splat_f32(1.f)), n);
}

// The last n < kF32Lanes floats of a row as a vector, `fill` in the other lanes, and back (on
// AVX2 through a padded vector: its masked store is microcoded on AMD's cores).
static inline VF32 load_part(const float* p, int64_t n, float fill) {
#if MINFER_ISA_WIDE
  return _mm512_mask_loadu_ps(splat_f32(fill), first_lanes_f32(int(n)), p);
#else
  alignas(32) float v[kF32Lanes];
  for (int64_t j = 0; j < kF32Lanes; ++j) v[j] = j < n ? p[j] : fill;
  return load_f32(v);
#endif
}
static inline void store_part(float* p, VF32 v, int64_t n) {
#if MINFER_ISA_WIDE
  store_f32(p, v, first_lanes_f32(int(n)));
#else
  alignas(32) float t[kF32Lanes];
  store_f32(t, v);
  for (int64_t j = 0; j < n; ++j) p[j] = t[j];
#endif
}

// sigmoid(x) = 1 / (1 + e) and silu(x) = x / (1 + e), e = exp(-x) with x clamped to
// [kMinX, kMaxX] (e stays finite). Fewer operations than forming e / (1 + e) from exp(-|x|) and
// flipping it where x > 0, and the division costs less than rcp14 with a Newton step: SiLU 0.28
// -> 0.205 ns a float on a Zen 4, 0.40 -> 0.33 on a Xeon (Sapphire Rapids), in L1.
// Within 2.5e-7 relative of float64 (tests/backends/test_activations.cpp).
// A NaN stays NaN (min_f32 and max_f32 return their second operand's); sigmoid(-inf) is
// sigmoid(kMinX), below 1e-38.
template <bool Silu>
static inline VF32 sigmoid_vec(VF32 x) {
  const VF32 one = splat_f32(1.f);
  const VF32 c = max_f32(splat_f32(kMinX), min_f32(splat_f32(kMaxX), x));
  return (Silu ? x : one) / add_f32(exp_clamped(-c), one);
}

// p[i] = sigmoid(p[i]), or p[i] * sigmoid(p[i]) when `Silu`.
template <bool Silu>
void sigmoid_run(float* p, int64_t n) {
  int64_t i = 0;
  for (; i + kF32Lanes <= n; i += kF32Lanes) store_f32(p + i, sigmoid_vec<Silu>(load_f32(p + i)));
  if (i < n) store_part(p + i, sigmoid_vec<Silu>(load_part(p + i, n - i, 0.f)), n - i);
}

// exp(t) for a softmax row's t = x - max (t <= 0, or NaN): exactly 0 below -87.33654, where
// exp leaves the normal floats; a NaN stays NaN.
static inline VF32 exp_shifted(VF32 t) {
  // (A NaN t: max_f32 returns its second operand.)
  const VF32 e = exp_clamped(max_f32(splat_f32(kMinX), t));
#if MINFER_ISA_WIDE
  const __mmask16 below = _mm512_cmp_ps_mask(t, splat_f32(-87.33654f), _CMP_LT_OQ);
  return _mm512_mask_blend_ps(below, e, zero_f32());
#else
  return _mm256_andnot_ps(_mm256_cmp_ps(t, splat_f32(-87.33654f), _CMP_LT_OQ), e);
#endif
}

static inline float lanes_sum(VF32 v) {
  alignas(64) float t[kF32Lanes];
  store_f32(t, v);
  float s = 0.f;
  for (int j = 0; j < kF32Lanes; ++j) s += t[j];
  return s;
}

// The max (NaNs left out, as the generic code's v > max), the exps and their sum, the scaling.
void softmax_row(const float* x, float* y, int64_t n) {
  const int64_t full = n / kF32Lanes * kF32Lanes, tail = n - full;
  VF32 mx = splat_f32(-INFINITY);
  for (int64_t i = 0; i < full; i += kF32Lanes) mx = max_f32(load_f32(x + i), mx);
  if (tail) mx = max_f32(load_part(x + full, tail, -INFINITY), mx);
  alignas(64) float lanes[kF32Lanes];
  store_f32(lanes, mx);
  float m = -INFINITY;
  for (int j = 0; j < kF32Lanes; ++j) m = lanes[j] > m ? lanes[j] : m;
  const VF32 vm = splat_f32(m);
  VF32 sum = zero_f32();
  for (int64_t i = 0; i < full; i += kF32Lanes) {
    const VF32 e = exp_shifted(load_f32(x + i) - vm);
    sum = add_f32(sum, e);
    store_f32(y + i, e);
  }
  if (tail) {
    const VF32 e = exp_shifted(load_part(x + full, tail, -INFINITY) - vm);  // 0 past the row
    sum = add_f32(sum, e);
    store_part(y + full, e, tail);
  }
  const VF32 scale = splat_f32(1.f / lanes_sum(sum));
  for (int64_t i = 0; i < full; i += kF32Lanes) store_f32(y + i, load_f32(y + i) * scale);
  if (tail) store_part(y + full, load_part(y + full, tail, 0.f) * scale, tail);
}

void activation(const Activation& act, float* p, int64_t n) {
  if (act.kind == Activation::Kind::Sigmoid) return sigmoid_run<false>(p, n);
  if (act.kind == Activation::Kind::Silu) return sigmoid_run<true>(p, n);
  smooth_activation<VecW, IntW>(act, p, n);
}

}  // namespace

extern const f32::SmoothActivation kSmoothActivation;
const f32::SmoothActivation kSmoothActivation{static_cast<Isa>(MINFER_ISA_LEVEL), activation,
                                              softmax_row};

}  // namespace minfer::cpu::MINFER_ISA_NS
