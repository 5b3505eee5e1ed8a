// Pad's parameters resolved against an input: shared by its reference kernel and the backends'
// fast kernels.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "minfer/graph.h"

namespace minfer {

enum class PadMode { Constant, Reflect, Edge, Wrap };

PadMode pad_mode(const Node& node);  // throws naming the node on an unknown mode
// The attribute form (opset < 11) has only the data input.
bool pad_uses_attributes(const Node& node);
// Per-dim (begin, end) pads (negative: a crop) for all dims of a rank-`rank` input, from the
// ONNX layout [x1_begin, x2_begin, ..., x1_end, x2_end, ...] over `axes` (default: all dims).
std::vector<std::pair<int64_t, int64_t>> pads_per_dim(const Node& node, size_t rank,
                                                      const std::vector<int64_t>& pads,
                                                      std::vector<int64_t> axes);
// The same from the node's attributes (opset < 11) or its inputs `pads` and `axes` (null:
// absent).
std::vector<std::pair<int64_t, int64_t>> pads_of(const Node& node, size_t rank,
                                                 const Tensor* pads, const Tensor* axes);
// Maps output position `i` (already shifted by the begin pad) into [0, n), or -1 for the
// constant value.
int64_t pad_source(int64_t i, int64_t n, PadMode mode);
// The pad value as bytes of `dtype`: the constant_value input `cv` (null: absent), else the
// attribute form's `value`, else zero.
std::vector<char> pad_value_bytes(const Node& node, DType dtype, const Tensor* cv);

}  // namespace minfer
