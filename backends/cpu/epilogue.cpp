#include "backends/cpu/epilogue.h"

#include <cstring>

#include "backends/cpu/kernels.h"
#include "backends/cpu/vec8.h"

namespace minfer::cpu {

namespace {

// p[i] = f(p[i]) 8 at a time; the last 1..7 through a padded vector (no scalar tail: rows of
// a small plane are short).
template <typename F>
void map8(float* p, int64_t n, F f) {
  int64_t i = 0;
  for (Vec8 x; i + 8 <= n; i += 8) {
    std::memcpy(&x, p + i, sizeof x);
    x = f(x);
    std::memcpy(p + i, &x, sizeof x);
  }
  if (i == n) return;
  Vec8 x = {};
  std::memcpy(&x, p + i, size_t(n - i) * sizeof(float));
  x = f(x);
  std::memcpy(p + i, &x, size_t(n - i) * sizeof(float));
}

inline Vec8 clamp01(Vec8 x) {
  x = x < 0.f ? Vec8{} : x;
  return x > 1.f ? Vec8{} + 1.f : x;
}

}  // namespace

void apply_activation(const Activation& act, float* p, int64_t n) { act.apply(p, n); }

void Activation::apply_smooth(float* p, int64_t n) const {
  const float a = alpha, b = beta;
  switch (kind) {
    case Kind::Sigmoid:
      return map8(p, n, [](Vec8 x) { return 1.f / (1.f + exp8(-x)); });
    case Kind::Silu:
      return map8(p, n, [](Vec8 x) { return x / (1.f + exp8(-x)); });
    case Kind::HardSigmoid:
      return map8(p, n, [a, b](Vec8 x) { return clamp01(a * x + b); });
    case Kind::HardSwish:
      return map8(p, n, [](Vec8 x) { return x * clamp01(x * (1.f / 6.f) + 0.5f); });
    case Kind::Gelu:
    case Kind::GeluTanh:
      return gelu_in_place(p, n, kind == Kind::GeluTanh);
    case Kind::Clamp:
      return;
  }
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
  return act;
}

}  // namespace minfer::cpu
