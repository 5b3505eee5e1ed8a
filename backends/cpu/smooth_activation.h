// The smooth activations of the CPU epilogue (epilogue.h: Sigmoid, SiLU, HardSigmoid, HardSwish;
// Gelu through gelu_in_place) over a run of floats, V floats at a time for any vector width V:
// epilogue.cpp instantiates it at 8 lanes for the baseline and backends/cpu/isa/activation.cpp
// at each ISA level's width. Everything is internal (anonymous namespace, static): the per-ISA
// copies must not be merged with other levels' by the linker.
#pragma once

#include <cstdint>
#include <cstring>

#include "backends/cpu/epilogue.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/vec8.h"

namespace minfer::cpu {
namespace {

// p[i] = f(p[i]) V at a time; the last few through a padded vector (no scalar tail: rows of a
// small plane are short).
template <typename V, typename F>
inline void map_lanes(float* p, int64_t n, F f) {
  constexpr int64_t L = int64_t(sizeof(V) / sizeof(float));
  int64_t i = 0;
  for (V x; i + L <= n; i += L) {
    std::memcpy(&x, p + i, sizeof x);
    x = f(x);
    std::memcpy(p + i, &x, sizeof x);
  }
  if (i == n) return;
  V x = {};
  std::memcpy(&x, p + i, size_t(n - i) * sizeof(float));
  x = f(x);
  std::memcpy(p + i, &x, size_t(n - i) * sizeof(float));
}

template <typename V>
inline V clamp01(V x) {
  x = x < 0.f ? V{} : x;
  return x > 1.f ? V{} + 1.f : x;
}

// act's smooth activation on p[0, n) (reads act's fields only: no inline member calls).
template <typename V, typename I>
void smooth_activation(const Activation& act, float* p, int64_t n) {
  using Kind = Activation::Kind;
  const float a = act.alpha, b = act.beta;
  switch (act.kind) {
    case Kind::Sigmoid:
      return map_lanes<V>(p, n, [](V x) { return 1.f / (1.f + exp_lanes<V, I>(-x)); });
    case Kind::Silu:
      return map_lanes<V>(p, n, [](V x) { return x / (1.f + exp_lanes<V, I>(-x)); });
    case Kind::HardSigmoid:
      return map_lanes<V>(p, n, [a, b](V x) { return clamp01(a * x + b); });
    case Kind::HardSwish:
      return map_lanes<V>(p, n, [](V x) { return x * clamp01(x * (1.f / 6.f) + 0.5f); });
    case Kind::Gelu:
    case Kind::GeluTanh:
      return gelu_in_place(p, n, act.kind == Kind::GeluTanh);
    case Kind::Clamp:
      return;
  }
}

}  // namespace
}  // namespace minfer::cpu
