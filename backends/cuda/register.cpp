// register_cuda_kernels: the CUDA kernels of built-in ops. A kernel family adds one call here
// (its KernelDef factory sits next to its .cu file); kernels that come with their op register
// with the op instead, as MaxSumDiv3's does in register_max_sum_div3 (ops/max_sum_div3.cpp),
// the way a user's op registers a CUDA kernel.
#include "minfer/registry.h"

namespace minfer {

void register_cuda_kernels(OpRegistry& registry) {
  (void)registry;  // no built-in ONNX op has a CUDA kernel yet
}

}  // namespace minfer
