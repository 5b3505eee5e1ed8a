// The CUDA kernel of MaxSumDiv3 (ops/max_sum_div3.h), host side: plan once per shape, then
// launch on a stream. Device code is in max_sum_div3.cuh / .cu.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "minfer/tensor.h"

namespace minfer::cuda {

// How the reduction runs for one input shape on one device; fixed at prepare.
//  * Short rows (n <= kWarpRowMax): one warp per row, each row finished by its warp.
//  * Long rows: `blocks_per_row` blocks read a row once, with 16-byte loads in a grid-stride
//    loop; each thread keeps a state, warps combine with shuffles, blocks through shared
//    memory. With one block per row it writes the answer; otherwise each block writes its
//    state to the workspace and a second, tiny kernel combines a row's states (one warp each).
struct MaxSumDiv3Plan {
  static constexpr int64_t kWarpRowMax = 2048;
  static constexpr int kThreads = 256;

  DType dtype = DType::i32;
  int64_t rows = 0, n = 0;
  bool warp_per_row = false;
  int64_t blocks_per_row = 1;
  int64_t grid = 0;             // blocks of the first kernel
  bool check_overflow = false;  // int64 input, or int32 rows of 2^32+ values
  size_t workspace_bytes = 0;   // device scratch: the overflow word and the blocks' states
};

MaxSumDiv3Plan plan_max_sum_div3(DType dtype, int64_t rows, int64_t n, int sm_count);

// Enqueues y[r] = MaxSumDiv3(x[r, 0:n]) for every row on `stream`. x and y are device
// pointers; `workspace` is device memory of plan.workspace_bytes (any alignment).
void launch_max_sum_div3(const MaxSumDiv3Plan& plan, const void* x, int64_t* y, void* workspace,
                         cudaStream_t stream);

// After a launch with plan.check_overflow: waits for the stream and returns the first row
// whose positive values sum past INT64_MAX, or -1.
int64_t max_sum_div3_overflow_row(const MaxSumDiv3Plan& plan, const void* workspace,
                                  cudaStream_t stream);

}  // namespace minfer::cuda
