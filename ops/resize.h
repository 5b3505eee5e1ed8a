// Resize's parameters resolved against an input: the attributes, the output size and scale of
// each dim, and the input taps of each output coordinate. Shared by the reference kernel
// (ops/resize.cpp, in double) and the CPU kernel (backends/cpu/resize.cpp, in float), so that
// both sample the same input positions with the same weights.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "minfer/graph.h"

namespace minfer {

struct ResizeAttrs {
  std::string mode, coord, nearest;
  double cubic_a;
  bool exclude_outside;
};
// Reads and checks the attributes; throws naming the node on what is unknown or unsupported.
ResizeAttrs resize_attrs(const Node& node);

// Per-dim scale and output size from the scales or sizes input (one of them, non-empty).
struct ResizePlan {
  std::vector<double> scale;
  std::vector<int64_t> out;
  // Dim d keeps its size under a mode that maps o to o exactly: it is not resampled.
  bool keeps(size_t d, const std::vector<int64_t>& in_dims, const ResizeAttrs& a) const {
    return out[d] == in_dims[d] && scale[d] == 1.0 && a.coord != "tf_half_pixel_for_nn";
  }
};
ResizePlan resize_plan(const Node& node, const std::vector<int64_t>& in_dims, const Tensor* scales,
                       const Tensor* sizes);

// The input indices and weights (non-zero) that make output coordinate `o` of one dim.
using ResizeTaps = std::vector<std::pair<int64_t, double>>;
ResizeTaps resize_taps(const ResizeAttrs& a, int64_t o, int64_t in, int64_t out, double scale);

}  // namespace minfer
