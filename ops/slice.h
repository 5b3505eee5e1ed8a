// Slice's parameters resolved against an input shape: shared by its reference kernel and the
// backends' fast kernels.
#pragma once

#include <cstdint>
#include <vector>

#include "minfer/graph.h"

namespace minfer {

struct DimSlice {
  int64_t start = 0, step = 1, count = -1;  // count -1: unknown
  bool sliced = false;                      // false: the dim passes through unchanged
};

// The attribute form (opset < 10) has only the data input.
bool slice_uses_attributes(const Node& node);

// Per-dim ranges from starts/ends/axes/steps, clamped as ONNX specifies; throws naming the node
// on inconsistent parameters.
std::vector<DimSlice> slice_ranges(const Node& node, const Shape& x,
                                   const std::vector<int64_t>& starts,
                                   const std::vector<int64_t>& ends, std::vector<int64_t> axes,
                                   std::vector<int64_t> steps);

// The ranges of a Slice node over input shape x: from its attributes (opset < 10), or from
// params = its inputs 1..4 (starts, ends, axes, steps; null = absent).
std::vector<DimSlice> slice_ranges_of(const Node& node, const Shape& x,
                                      const std::vector<const Tensor*>& params);

}  // namespace minfer
