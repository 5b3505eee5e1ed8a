// fp32 pooling on NCHW planes: MaxPool (one thread per output) and GlobalAveragePool (one warp
// per plane).
#include "backends/cuda/device_util.cuh"
#include "backends/cuda/launch.h"

namespace minfer::cuda {

namespace {

__global__ void max_pool_kernel(const float* __restrict__ x, float* __restrict__ y, int total,
                                Window2d s) {
  const int out_plane = s.oh * s.ow;
  MINFER_GRID_STRIDE(i, total) {
    const int plane = i / out_plane, p = i % out_plane;
    const int y0 = p / s.ow * s.sh - s.pad_t, x0 = p % s.ow * s.sw - s.pad_l;
    const float* xp = x + static_cast<int64_t>(plane) * s.h * s.w;
    float best = -INFINITY;
    for (int ky = 0; ky < s.kh; ++ky) {
      const int iy = y0 + ky * s.dh;
      if (iy < 0 || iy >= s.h) continue;
      for (int kx = 0; kx < s.kw; ++kx) {
        const int ix = x0 + kx * s.dw;
        if (ix >= 0 && ix < s.w) best = best < xp[iy * s.w + ix] ? xp[iy * s.w + ix] : best;
      }
    }
    y[i] = best;
  }
}

constexpr int kWarpsPerBlock = kThreads / 32;

__global__ void global_avg_pool_kernel(const float* __restrict__ x, float* __restrict__ y,
                                       int planes, int size) {
  const int lane = threadIdx.x % 32;
  for (int p = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32; p < planes;
       p += gridDim.x * kWarpsPerBlock) {
    const float* xp = x + static_cast<int64_t>(p) * size;
    float sum = 0.f;
    for (int i = lane; i < size; i += 32) sum += xp[i];
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(~0u, sum, offset);
    if (lane == 0) y[p] = size ? sum / static_cast<float>(size) : 0.f;
  }
}

}  // namespace

void max_pool_f32(const float* x, float* y, int planes, const Window2d& win, cudaStream_t stream) {
  const int total = planes * win.oh * win.ow;
  if (total == 0) return;
  max_pool_kernel<<<grid_for(total), kThreads, 0, stream>>>(x, y, total, win);
  MINFER_CUDA_CHECK(cudaGetLastError());
}

void global_avg_pool_f32(const float* x, float* y, int planes, int size, cudaStream_t stream) {
  if (planes == 0) return;
  global_avg_pool_kernel<<<grid_for(planes, kWarpsPerBlock), kThreads, 0, stream>>>(x, y, planes,
                                                                                    size);
  MINFER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace minfer::cuda
