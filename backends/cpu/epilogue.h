// Fused activations for kernel epilogues (Conv, Gemm and the fused ops built on them).
#pragma once

#include <cstdint>
#include <limits>

#include "minfer/graph.h"

namespace minfer::cpu {

// An activation that is a clamp: Relu = [0, inf), Clip = [min, max]. Disabled = identity.
struct Activation {
  bool enabled = false;
  float lo = -std::numeric_limits<float>::infinity();
  float hi = std::numeric_limits<float>::infinity();

  // min(max(x, lo), hi) as Clip computes it (a NaN stays NaN).
  void apply(float* p, int64_t n) const {
    const float l = lo, h = hi;
    for (int64_t i = 0; i < n; ++i) {
      float v = p[i] < l ? l : p[i];
      p[i] = v > h ? h : v;
    }
  }
};

// Reads the fused-activation attributes of a node: `activation` ("" or absent = none, "Relu",
// "Clip") and, for Clip, `activation_min` / `activation_max` (absent = unbounded). Throws
// InvalidModel naming the node for any other activation.
Activation parse_activation(const Node& node);

}  // namespace minfer::cpu
