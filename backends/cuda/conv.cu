// fp32 Conv and Gemm helpers: im2col (NCHW) and the fused epilogues (bias, residual, clamp)
// that run after the cuBLAS GEMM.
#include "backends/cuda/device_util.cuh"
#include "backends/cuda/launch.h"

namespace minfer::cuda {

namespace {

__global__ void im2col_kernel(const float* __restrict__ x, int total, int channels, Window2d s,
                              float* __restrict__ col) {
  const int plane = s.oh * s.ow, taps = s.kh * s.kw;
  const int rows = channels * taps;
  MINFER_GRID_STRIDE(i, total) {
    const int p = i % plane, k = (i / plane) % rows, image = i / (plane * rows);
    const int c = k / taps, ky = k % taps / s.kw, kx = k % s.kw;
    const int iy = p / s.ow * s.sh - s.pad_t + ky * s.dh;
    const int ix = p % s.ow * s.sw - s.pad_l + kx * s.dw;
    float v = 0.f;
    if (iy >= 0 && iy < s.h && ix >= 0 && ix < s.w)
      v = x[((image * channels + c) * s.h + iy) * s.w + ix];
    col[i] = v;
  }
}

__device__ __forceinline__ float apply(Clamp act, float v) {
  if (!act.enabled) return v;
  v = v < act.lo ? act.lo : v;  // the CPU's clamp order: a NaN stays NaN
  return v > act.hi ? act.hi : v;
}

__global__ void conv_epilogue_kernel(float* __restrict__ y, int total, int channels, int plane,
                                     const float* __restrict__ bias, const float* __restrict__ z,
                                     Clamp act) {
  MINFER_GRID_STRIDE(i, total) {
    float v = y[i];
    if (bias) v += bias[i / plane % channels];
    if (z) v += z[i];
    y[i] = apply(act, v);
  }
}

__global__ void gemm_epilogue_kernel(float* __restrict__ y, int total, int n,
                                     const float* __restrict__ c, int c_row, int c_col, float beta,
                                     Clamp act) {
  MINFER_GRID_STRIDE(i, total) {
    float v = y[i];
    if (c) v += beta * c[i / n * c_row + i % n * c_col];
    y[i] = apply(act, v);
  }
}

}  // namespace

void im2col_f32(const float* x, int images, int channels, const Window2d& win, float* col,
                cudaStream_t stream) {
  const int total = images * channels * win.kh * win.kw * win.oh * win.ow;
  if (total == 0) return;
  im2col_kernel<<<grid_for(total), kThreads, 0, stream>>>(x, total, channels, win, col);
  MINFER_CUDA_CHECK(cudaGetLastError());
}

void conv_epilogue_f32(float* y, int planes, int channels, int plane, const float* bias,
                       const float* z, Clamp act, cudaStream_t stream) {
  const int total = planes * plane;
  if (total == 0 || (!bias && !z && !act.enabled)) return;
  conv_epilogue_kernel<<<grid_for(total), kThreads, 0, stream>>>(y, total, channels, plane, bias, z,
                                                                 act);
  MINFER_CUDA_CHECK(cudaGetLastError());
}

void gemm_epilogue_f32(float* y, int m, int n, const float* c, int c_row, int c_col, float beta,
                       Clamp act, cudaStream_t stream) {
  const int total = m * n;
  if (total == 0 || (!c && !act.enabled)) return;
  gemm_epilogue_kernel<<<grid_for(total), kThreads, 0, stream>>>(y, total, n, c, c_row, c_col, beta,
                                                                 act);
  MINFER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace minfer::cuda
