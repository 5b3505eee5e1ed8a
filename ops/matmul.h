// numpy matmul's shapes, shared by MatMul and MatMulInteger (internal to ops/).
#pragma once

#include <cstdint>

#include "minfer/graph.h"

namespace minfer {

// A and B as numpy matmul sees them: 1-D operands are promoted ([K] -> [1,K] for A, [K,1]
// for B) and the added dim is removed again from the result; leading (batch) dims broadcast.
struct MatmulDims {
  Shape a_batch, b_batch;  // the leading dims of promoted A and B
  Shape batch;             // a_batch and b_batch broadcast
  Shape out;               // the result's shape, keeping symbolic dim names
  int64_t m = 0, k = 0, n = 0;
};

// Fails naming the node unless both ranks are >= 1, A's K matches B's and the batch dims
// broadcast.
MatmulDims matmul_dims(const Node& node, const Shape& a, const Shape& b);

}  // namespace minfer
