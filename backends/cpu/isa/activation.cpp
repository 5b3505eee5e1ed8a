// The epilogue's smooth activations (backends/cpu/smooth_activation.h) at each ISA level's
// vector width: 16 lanes on AVX-512 (SiLU is about a quarter of EfficientNet-B0's time).
// Sigmoid and SiLU have their own exp here (below); the other kinds take the generic code
// (smooth_activation.h).
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

// Per level: rounding to the nearest integer, -(a * b) - c, v * 2^n for an integral n, and the
// range x is clamped to (e stays finite).
#if MINFER_ISA_WIDE
static inline VF32 round_nearest(VF32 v) {
  // (The all-lanes masked forms, as in simd.h: GCC 12 warns about the plain ones.)
  return _mm512_maskz_roundscale_ps(0xffff, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
static inline VF32 fnmsub_f32(VF32 a, VF32 b, VF32 c) { return _mm512_fnmsub_ps(a, b, c); }
static inline VF32 times_pow2(VF32 v, VF32 n) { return _mm512_maskz_scalef_ps(0xffff, v, n); }
constexpr float kMinX = -88.f, kMaxX = 100.f;
#else
static inline VF32 round_nearest(VF32 v) {
  return _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
static inline VF32 fnmsub_f32(VF32 a, VF32 b, VF32 c) { return _mm256_fnmsub_ps(a, b, c); }
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
  const VF32 n = round_nearest(c * splat_f32(-1.44269504f));
  VF32 t = fnmsub_f32(n, splat_f32(0.693359375f), c);  // -c - n ln2, ln2 in two parts
  t = fmadd_f32(n, splat_f32(2.12194440e-4f), t);
  VF32 q = fmadd_f32(splat_f32(kQ4), t, splat_f32(kQ3));
  q = fmadd_f32(q, t, splat_f32(kQ2));
  q = fmadd_f32(q, t, splat_f32(kQ1));
  q = fmadd_f32(q, t, splat_f32(kQ0));
  const VF32 e = times_pow2(fmadd_f32(q, t, one), n);  // (1 + t q) * 2^n
  return (Silu ? x : one) / add_f32(e, one);
}

// p[i] = sigmoid(p[i]), or p[i] * sigmoid(p[i]) when `Silu`.
template <bool Silu>
void sigmoid_run(float* p, int64_t n) {
  int64_t i = 0;
  for (; i + kF32Lanes <= n; i += kF32Lanes) store_f32(p + i, sigmoid_vec<Silu>(load_f32(p + i)));
  if (i == n) return;
#if MINFER_ISA_WIDE
  const MaskF32 m = first_lanes_f32(int(n - i));
  store_f32(p + i, sigmoid_vec<Silu>(load_f32(p + i, m)), m);
#else
  // Through a padded vector: AVX2's masked store is microcoded on AMD's cores.
  alignas(32) float tail[kF32Lanes] = {};
  for (int64_t j = i; j < n; ++j) tail[j - i] = p[j];
  store_f32(tail, sigmoid_vec<Silu>(load_f32(tail)));
  for (int64_t j = i; j < n; ++j) p[j] = tail[j - i];
#endif
}

void activation(const Activation& act, float* p, int64_t n) {
  if (act.kind == Activation::Kind::Sigmoid) return sigmoid_run<false>(p, n);
  if (act.kind == Activation::Kind::Silu) return sigmoid_run<true>(p, n);
  smooth_activation<VecW, IntW>(act, p, n);
}

}  // namespace

extern const f32::SmoothActivation kSmoothActivation;
const f32::SmoothActivation kSmoothActivation{static_cast<Isa>(MINFER_ISA_LEVEL), activation};

}  // namespace minfer::cpu::MINFER_ISA_NS
