// numpy matmul's shapes, shared by MatMul and MatMulInteger (internal to ops/), and Gemm's
// sizes as the backends' Gemm kernels run it.
#pragma once

#include <cstdint>

#include "minfer/graph.h"
#include "minfer/kernel.h"

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

// Gemm: Y [m, n] = alpha * A' B' + beta * C, A' [m, k] and B' [k, n] being A and B or their
// transposes (transA, transB), C (when present) seen through Y's shape with these strides.
struct GemmSizes {
  bool trans_a = false, trans_b = false, has_c = false;
  float alpha = 1.f, beta = 1.f;
  int64_t m = 0, k = 0, n = 0;
  int64_t c_row_stride = 0, c_col_stride = 0;
};
// From a Gemm node's attributes and static input shapes; fails naming the node where A's K
// is not B's.
GemmSizes gemm_sizes(const PrepareContext& ctx);

}  // namespace minfer
