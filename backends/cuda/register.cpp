// register_cuda_kernels: the CUDA kernels of built-in ops. A kernel family adds one call here
// (its registration function sits next to its kernels, declared in kernels.h); kernels that
// come with their op register with the op instead, as MaxSumDiv3's does in
// register_max_sum_div3 (ops/max_sum_div3.cpp), the way a user's op registers a CUDA kernel.
#include "backends/cuda/kernels.h"

namespace minfer {

void register_cuda_kernels(OpRegistry& registry) {
  cuda::register_conv_kernels(registry);
  cuda::register_gemm_kernels(registry);
  cuda::register_fp32_kernels(registry);
  cuda::register_layout_kernels(registry);
  cuda::register_int8_conv_kernels(registry);
  cuda::register_int8_kernels(registry);
  cuda::register_half_kernels(registry);
  cuda::register_space_to_depth_kernel(registry);
}

}  // namespace minfer
