// The epilogue's smooth activations (backends/cpu/smooth_activation.h) at each ISA level's
// vector width: 16 lanes on AVX-512 (SiLU is about a quarter of EfficientNet-B0's time).
// On AVX-512, Sigmoid and SiLU have their own code here, without a division (below); the others,
// and every kind on AVX2 (where this code measured slower than the division on a Zen 4), take
// the generic one.
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

// sigmoid(x) = 1 / (1 + exp(-x)), computed as f = e / (1 + e) with e = exp(-|x|) in (0, 1],
// and 1 - f where x > 0: the denominator lies in [1, 2], so rcp14 and one Newton step (about
// 2^-24 after it) replace vdivps: SiLU 0.28-0.32 ns a float, from 0.31-0.35, on a Zen 4.
// Within 2.5e-7 relative of float64 (tests/backends/test_activations.cpp).
// A NaN stays NaN (max_f32 returns its second operand's); below x = -100, e stays exp(-100)
// (scalef makes the subnormals).
#if MINFER_ISA_WIDE
static inline VF32 sigmoid_vec(VF32 x) {
  const VF32 one = splat_f32(1.f);
  const VF32 neg_abs = _mm512_castsi512_ps(
      _mm512_or_si512(_mm512_castps_si512(x), _mm512_set1_epi32(int32_t(0x80000000u))));
  const VF32 z = max_f32(splat_f32(-100.f), neg_abs);
  // (The all-lanes masked forms, as in simd.h: GCC 12 warns about the plain ones.)
  const VF32 n = _mm512_maskz_roundscale_ps(0xffff, _mm512_mul_ps(z, splat_f32(1.44269504f)),
                                            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  VF32 t = fmadd_f32(n, splat_f32(-0.693359375f), z);  // z - n ln2, ln2 in two parts
  t = fmadd_f32(n, splat_f32(2.12194440e-4f), t);
  VF32 q = fmadd_f32(splat_f32(kQ4), t, splat_f32(kQ3));
  q = fmadd_f32(q, t, splat_f32(kQ2));
  q = fmadd_f32(q, t, splat_f32(kQ1));
  q = fmadd_f32(q, t, splat_f32(kQ0));
  const VF32 e = _mm512_maskz_scalef_ps(0xffff, fmadd_f32(q, t, one), n);  // (1 + t q) * 2^n
  const VF32 d = add_f32(e, one);
  VF32 r = _mm512_maskz_rcp14_ps(0xffff, d);
  r = fmadd_f32(_mm512_fnmadd_ps(r, d, one), r, r);
  const VF32 f = _mm512_mul_ps(e, r);
  const MaskF32 positive = _mm512_cmp_ps_mask(x, zero_f32(), _CMP_GT_OQ);
  return _mm512_mask_sub_ps(f, positive, one, f);
}
// p[i] = sigmoid(p[i]), or p[i] * sigmoid(p[i]) when `silu`; the tail through masked loads.
void sigmoid_run(float* p, int64_t n, bool silu) {
  int64_t i = 0;
  for (; i + kF32Lanes <= n; i += kF32Lanes) {
    const VF32 x = load_f32(p + i), s = sigmoid_vec(x);
    store_f32(p + i, silu ? _mm512_mul_ps(x, s) : s);
  }
  if (i == n) return;
  const MaskF32 m = first_lanes_f32(int(n - i));
  const VF32 x = load_f32(p + i, m), s = sigmoid_vec(x);
  store_f32(p + i, silu ? _mm512_mul_ps(x, s) : s, m);
}

void activation(const Activation& act, float* p, int64_t n) {
  if (act.kind == Activation::Kind::Sigmoid || act.kind == Activation::Kind::Silu)
    return sigmoid_run(p, n, act.kind == Activation::Kind::Silu);
  smooth_activation<VecW, IntW>(act, p, n);
}
#else
void activation(const Activation& act, float* p, int64_t n) {
  smooth_activation<VecW, IntW>(act, p, n);
}
#endif

}  // namespace

extern const f32::SmoothActivation kSmoothActivation;
const f32::SmoothActivation kSmoothActivation{static_cast<Isa>(MINFER_ISA_LEVEL), activation};

}  // namespace minfer::cpu::MINFER_ISA_NS
