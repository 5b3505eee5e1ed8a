// The epilogue's smooth activations (backends/cpu/smooth_activation.h) at each ISA level's
// vector width: 16 lanes on AVX-512 (SiLU is about a quarter of EfficientNet-B0's time).
// On AVX-512, Sigmoid and SiLU have their own exp here, by scalef (below); the other kinds, and
// every kind on AVX2, take the generic code, whose formula is the same.
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

// sigmoid(x) = 1 / (1 + e) and silu(x) = x / (1 + e), e = exp(-x) with x clamped to
// [-88, 100] (e stays finite). Fewer operations than forming e / (1 + e) from exp(-|x|) and
// flipping it where x > 0, and the division costs less than rcp14 with a Newton step: SiLU 0.28
// -> 0.205 ns a float on a Zen 4, 0.40 -> 0.33 on a Xeon (Sapphire Rapids), in L1.
// Within 2.5e-7 relative of float64 (tests/backends/test_activations.cpp).
// A NaN stays NaN (min_f32 and max_f32 return their second operand's); sigmoid(-inf) is
// sigmoid(-88), 6e-39.
#if MINFER_ISA_WIDE
template <bool Silu>
static inline VF32 sigmoid_vec(VF32 x) {
  const VF32 one = splat_f32(1.f);
  const VF32 c = max_f32(splat_f32(-88.f), min_f32(splat_f32(100.f), x));
  // (The all-lanes masked forms, as in simd.h: GCC 12 warns about the plain ones.)
  const VF32 n = _mm512_maskz_roundscale_ps(0xffff, _mm512_mul_ps(c, splat_f32(-1.44269504f)),
                                            _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  VF32 t = _mm512_fnmsub_ps(n, splat_f32(0.693359375f), c);  // -c - n ln2, ln2 in two parts
  t = fmadd_f32(n, splat_f32(2.12194440e-4f), t);
  VF32 q = fmadd_f32(splat_f32(kQ4), t, splat_f32(kQ3));
  q = fmadd_f32(q, t, splat_f32(kQ2));
  q = fmadd_f32(q, t, splat_f32(kQ1));
  q = fmadd_f32(q, t, splat_f32(kQ0));
  const VF32 e = _mm512_maskz_scalef_ps(0xffff, fmadd_f32(q, t, one), n);  // (1 + t q) * 2^n
  return _mm512_div_ps(Silu ? x : one, add_f32(e, one));
}
// p[i] = sigmoid(p[i]), or p[i] * sigmoid(p[i]) when `Silu`; the tail through masked loads.
template <bool Silu>
void sigmoid_run(float* p, int64_t n) {
  int64_t i = 0;
  for (; i + kF32Lanes <= n; i += kF32Lanes) store_f32(p + i, sigmoid_vec<Silu>(load_f32(p + i)));
  if (i == n) return;
  const MaskF32 m = first_lanes_f32(int(n - i));
  store_f32(p + i, sigmoid_vec<Silu>(load_f32(p + i, m)), m);
}

void activation(const Activation& act, float* p, int64_t n) {
  if (act.kind == Activation::Kind::Sigmoid) return sigmoid_run<false>(p, n);
  if (act.kind == Activation::Kind::Silu) return sigmoid_run<true>(p, n);
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
