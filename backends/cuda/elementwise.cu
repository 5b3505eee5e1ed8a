// fp32 elementwise kernels: a clamp (Relu, Clip) and a same-shape Add.
#include "backends/cuda/device_util.cuh"
#include "backends/cuda/launch.h"

namespace minfer::cuda {

namespace {

__global__ void clamp_kernel(const float* __restrict__ x, float* __restrict__ y, int n, float lo,
                             float hi) {
  MINFER_GRID_STRIDE(i, n) {
    float v = x[i] < lo ? lo : x[i];  // the CPU's order: a NaN stays NaN
    y[i] = v > hi ? hi : v;
  }
}

__global__ void add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                           float* __restrict__ y, int n) {
  MINFER_GRID_STRIDE(i, n) { y[i] = a[i] + b[i]; }
}

}  // namespace

void clamp_f32(const float* x, float* y, int n, float lo, float hi, cudaStream_t stream) {
  if (n == 0) return;
  clamp_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, y, n, lo, hi);
  MINFER_CUDA_CHECK(cudaGetLastError());
}

void add_f32(const float* a, const float* b, float* y, int n, cudaStream_t stream) {
  if (n == 0) return;
  add_kernel<<<grid_for(n), kThreads, 0, stream>>>(a, b, y, n);
  MINFER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace minfer::cuda
