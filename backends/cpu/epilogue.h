// Fused activations for kernel epilogues (Conv, Gemm and the fused ops built on them).
#pragma once

#include <cstdint>
#include <limits>

#include "minfer/graph.h"

namespace minfer::cpu {

enum class Isa;  // backends/cpu/isa.h

// The activation a kernel applies to its output while it is still in cache. Relu and Clip are
// clamps (Relu = [0, inf), Clip = [lo, hi]), the only kinds the CUDA kernels and Winograd's
// inlined epilogue handle (is_clamp()); the smooth ones are applied by apply() alone:
//   Sigmoid      1 / (1 + exp(-x))
//   Silu         x * Sigmoid(x)                 (Conv -> Sigmoid -> Mul, EfficientNet)
//   HardSigmoid  max(0, min(1, alpha * x + beta))
//   HardSwish    x * max(0, min(1, x / 6 + 1/2))  (MobileNet v3)
//   Gelu         x * Phi(x); GeluTanh its tanh approximation (transformers' MLPs)
struct Activation {
  enum class Kind { Clamp, Sigmoid, Silu, HardSigmoid, HardSwish, Gelu, GeluTanh };

  bool enabled = false;  // false = identity
  Kind kind = Kind::Clamp;
  float lo = -std::numeric_limits<float>::infinity();  // Clamp
  float hi = std::numeric_limits<float>::infinity();
  float alpha = 0.2f, beta = 0.5f;  // HardSigmoid (ONNX defaults)

  // The smooth activations' code, at the ISA level active when parse_activation made this
  // (backends/cpu/isa/activation.cpp: 16 lanes on AVX-512); null: the level active at each call.
  void (*smooth_fn)(const Activation&, float*, int64_t) = nullptr;

  bool is_clamp() const { return !enabled || kind == Kind::Clamp; }

  // Applies the activation to p[0, n) in place.
  void apply(float* p, int64_t n) const {
    if (!enabled) return;
    if (kind != Kind::Clamp) return apply_smooth(p, n);
    // min(max(x, lo), hi) as Clip computes it (a NaN stays NaN).
    const float l = lo, h = hi;
    for (int64_t i = 0; i < n; ++i) {
      float v = p[i] < l ? l : p[i];
      p[i] = v > h ? h : v;
    }
  }

 private:
  void apply_smooth(float* p, int64_t n) const;
};

// The smooth activations' code for ISA level `isa` (the highest compiled level <= it that this
// CPU runs; 8 lanes of the baseline where none is).
using SmoothActivationFn = void (*)(const Activation&, float*, int64_t);
SmoothActivationFn smooth_activation_for(Isa isa);

// act.apply(p, n), out of line: for the kernels compiled per ISA level (backends/cpu/isa/),
// which must not instantiate inline code of their own (tests/isa/check_isa_objects.sh).
void apply_activation(const Activation& act, float* p, int64_t n);

// Reads the fused-activation attributes of a node: `activation` ("" or absent = none, "Relu",
// "Clip", "Sigmoid", "Silu", "HardSigmoid", "HardSwish", "Gelu", "GeluTanh"), for Clip
// `activation_min` / `activation_max` (absent = unbounded), for HardSigmoid
// `activation_alpha` / `activation_beta`. Throws InvalidModel naming the node for any other
// activation.
Activation parse_activation(const Node& node);

}  // namespace minfer::cpu
