// Error checks for CUDA and cuBLAS calls: every failure becomes a minfer::Error naming the
// call and where it was made. Use them on every call whose status is not otherwise checked:
//   MINFER_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, stream));
//   my_kernel<<<grid, block, 0, stream>>>(...);
//   MINFER_CUDA_CHECK(cudaGetLastError());  // launch errors
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace minfer::cuda {

// Throw Error(Device) (OutOfMemory for cudaErrorMemoryAllocation) with the message
// "<file>:<line>: <call>: <error text> (<error name>)".
[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file,
                                   int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file,
                                     int line);

inline void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) [[unlikely]]
    throw_cuda_error(status, call, file, line);
}
inline void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) [[unlikely]]
    throw_cublas_error(status, call, file, line);
}

}  // namespace minfer::cuda

#define MINFER_CUDA_CHECK(expr) ::minfer::cuda::check_cuda((expr), #expr, __FILE__, __LINE__)
#define MINFER_CUBLAS_CHECK(expr) ::minfer::cuda::check_cublas((expr), #expr, __FILE__, __LINE__)
