#include "backends/cpu/epilogue.h"

#include "backends/cpu/isa.h"
#include "backends/cpu/isa/isa_kernels.h"
#include "backends/cpu/smooth_activation.h"

namespace minfer::cpu {

SmoothActivationFn smooth_activation_for(Isa isa) {
  const LevelKernels* level = level_kernels(isa);
  return level ? level->smooth_activation->apply : smooth_activation<Vec8, Int32x8>;
}

void apply_activation(const Activation& act, float* p, int64_t n) { act.apply(p, n); }

void Activation::apply_smooth(float* p, int64_t n) const {
  (smooth_fn ? smooth_fn : smooth_activation_for(active_isa()))(*this, p, n);
}

Activation parse_activation(const Node& node) {
  using Kind = Activation::Kind;
  Activation act;
  const std::string kind = node.attrs.get_string("activation", "");
  if (kind.empty()) return act;
  act.enabled = true;
  if (kind == "Relu") {
    act.lo = 0.f;
  } else if (kind == "Clip") {
    act.lo = node.attrs.get_float("activation_min", act.lo);
    act.hi = node.attrs.get_float("activation_max", act.hi);
  } else if (kind == "Sigmoid") {
    act.kind = Kind::Sigmoid;
  } else if (kind == "Silu") {
    act.kind = Kind::Silu;
  } else if (kind == "HardSigmoid") {
    act.kind = Kind::HardSigmoid;
    act.alpha = node.attrs.get_float("activation_alpha", act.alpha);
    act.beta = node.attrs.get_float("activation_beta", act.beta);
  } else if (kind == "HardSwish") {
    act.kind = Kind::HardSwish;
  } else if (kind == "Gelu") {
    act.kind = Kind::Gelu;
  } else if (kind == "GeluTanh") {
    act.kind = Kind::GeluTanh;
  } else {
    throw Error(ErrorCode::InvalidModel,
                node.describe() + ": fused activation '" + kind +
                    "' is not supported (expected Relu, Clip, Sigmoid, Silu, HardSigmoid, "
                    "HardSwish, Gelu or GeluTanh)");
  }
  if (!act.is_clamp()) act.smooth_fn = smooth_activation_for(active_isa());
  return act;
}

}  // namespace minfer::cpu
