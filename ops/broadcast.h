// Numpy-style multidirectional broadcasting: shape inference (symbolic-aware) and the index
// math the reference kernels (and simple CPU kernels) use to walk broadcast operands.
#pragma once

#include <cstdint>
#include <vector>

#include "minfer/graph.h"

namespace minfer {

// The broadcast of `shapes` (right-aligned; a dim of 1 stretches). Symbolic dims: an unknown
// dim against a known d > 1 gives d; two unknown dims give unknown (keeping a shared name).
// Fails naming the node: "cannot broadcast input shapes [2,3] and [4]".
Shape broadcast_shapes(const Node& node, const std::vector<Shape>& shapes);

// Element strides of `in` seen through the broadcast `out` shape: one entry per dim of `out`,
// 0 where `in` is stretched (or missing on the left). Both shapes must be static.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

// The broadcast of `operands` (static shapes) to `out`, with adjacent dims merged where every
// operand steps through them the same way and dims of 1 dropped: same-shape, scalar and
// per-channel operands become one inner run, each operand advancing (stride 1) or fixed (0).
// dims: the merged output dims (at least one); strides[k]: operand k's element strides on them.
struct CollapsedBroadcast {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> strides;
};
CollapsedBroadcast collapse_broadcast(const std::vector<Shape>& operands, const Shape& out);

// Walks every element of a static `out` shape in row-major order, tracking the offset of the
// corresponding element in each operand: calls f(out_index, offsets) with offsets[k] for
// operand k. `strides[k]` comes from broadcast_strides(operand_k, out).
template <typename F>
void for_each_broadcast(const Shape& out, const std::vector<std::vector<int64_t>>& strides, F&& f) {
  const size_t rank = out.rank(), n_ops = strides.size();
  const int64_t total = out.numel();
  std::vector<int64_t> idx(rank, 0), off(n_ops, 0);
  for (int64_t i = 0; i < total; ++i) {
    f(i, off);
    // Increment the multi-index from the last dim, updating offsets incrementally.
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < out[d]) {
        for (size_t k = 0; k < n_ops; ++k) off[k] += strides[k][d];
        break;
      }
      for (size_t k = 0; k < n_ops; ++k) off[k] -= strides[k][d] * (out[d] - 1);
      idx[d] = 0;
    }
  }
}

}  // namespace minfer
