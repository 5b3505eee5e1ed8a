// fp16 NHWC data movement and pools (ops/fp16/half_ops.h): ToHalfNhwc, FromHalfNhwc, HMaxPool
// and HGlobalAveragePool.
#include <cuda_fp16.h>

#include "backends/cuda/device_util.cuh"
#include "backends/cuda/launch.h"

namespace minfer::cuda {

namespace {

// One thread per output element, in output order: the stores are coalesced, the loads
// stride by hw (a few input planes read in step).
__global__ void to_half_nhwc_kernel(const float* __restrict__ x, __half* __restrict__ y, int total,
                                    int c, int hw) {
  MINFER_GRID_STRIDE(i, total) {
    const int ch = i % c, rest = i / c, p = rest % hw, n = rest / hw;
    y[i] = __float2half_rn(x[(static_cast<int64_t>(n) * c + ch) * hw + p]);
  }
}

__global__ void from_half_nhwc_kernel(const __half* __restrict__ x, float* __restrict__ y,
                                      int total, int c, int hw) {
  MINFER_GRID_STRIDE(i, total) {
    const int p = i % hw, rest = i / hw, ch = rest % c, n = rest / c;
    y[i] = __half2float(x[(static_cast<int64_t>(n) * hw + p) * c + ch]);
  }
}

// One thread per output pixel and group of `kVec` channels (8: one 16-byte vector).
template <int kVec>
__global__ void hmax_pool_kernel(const __half* __restrict__ x, __half* __restrict__ y, int total,
                                 int c, Window2d s) {
  const int groups = c / kVec;
  MINFER_GRID_STRIDE(i, total) {
    const int grp = i % groups, rest = i / groups, ox = rest % s.ow, oy = rest / s.ow % s.oh,
              n = rest / (s.ow * s.oh);
    float best[kVec];
#pragma unroll
    for (int v = 0; v < kVec; ++v) best[v] = -INFINITY;
    for (int ky = 0; ky < s.kh; ++ky) {
      const int iy = oy * s.sh - s.pad_t + ky * s.dh;
      if (iy < 0 || iy >= s.h) continue;
      for (int kx = 0; kx < s.kw; ++kx) {
        const int ix = ox * s.sw - s.pad_l + kx * s.dw;
        if (ix < 0 || ix >= s.w) continue;
        const __half* src =
            x + ((static_cast<int64_t>(n) * s.h + iy) * s.w + ix) * c + grp * kVec;
        if constexpr (kVec == 8) {
          const uint4 raw = *reinterpret_cast<const uint4*>(src);
          const __half2* h = reinterpret_cast<const __half2*>(&raw);
#pragma unroll
          for (int v = 0; v < 4; ++v) {
            const float2 f = __half22float2(h[v]);
            best[2 * v] = fmaxf(best[2 * v], f.x);
            best[2 * v + 1] = fmaxf(best[2 * v + 1], f.y);
          }
        } else {
          best[0] = fmaxf(best[0], __half2float(src[0]));
        }
      }
    }
    __half* dst = y + ((static_cast<int64_t>(n) * s.oh + oy) * s.ow + ox) * c + grp * kVec;
#pragma unroll
    for (int v = 0; v < kVec; ++v) dst[v] = __float2half_rn(best[v]);  // exact: each is a half
  }
}

// One thread per (image, channel): a warp reads 32 consecutive channels of each pixel.
__global__ void hglobal_avg_pool_kernel(const __half* __restrict__ x, float* __restrict__ y,
                                        int total, int hw, int c) {
  MINFER_GRID_STRIDE(i, total) {
    const int ch = i % c, n = i / c;
    const __half* src = x + static_cast<int64_t>(n) * hw * c + ch;
    float sum = 0.f;
    for (int p = 0; p < hw; ++p) sum += __half2float(src[static_cast<int64_t>(p) * c]);
    y[i] = sum / static_cast<float>(hw);
  }
}

}  // namespace

void to_half_nhwc(const float* x, void* y, int n, int c, int hw, cudaStream_t stream) {
  const int total = n * c * hw;
  if (total == 0) return;
  to_half_nhwc_kernel<<<grid_for(total), kThreads, 0, stream>>>(x, static_cast<__half*>(y), total,
                                                                c, hw);
  MINFER_CUDA_CHECK(cudaGetLastError());
}

void from_half_nhwc(const void* x, float* y, int n, int c, int hw, cudaStream_t stream) {
  const int total = n * c * hw;
  if (total == 0) return;
  from_half_nhwc_kernel<<<grid_for(total), kThreads, 0, stream>>>(static_cast<const __half*>(x), y,
                                                                  total, c, hw);
  MINFER_CUDA_CHECK(cudaGetLastError());
}

void hmax_pool_nhwc(const void* x, void* y, int n, int c, const Window2d& win,
                    cudaStream_t stream) {
  const auto* xh = static_cast<const __half*>(x);
  auto* yh = static_cast<__half*>(y);
  if (c % 8 == 0) {
    const int total = n * win.oh * win.ow * (c / 8);
    if (total == 0) return;
    hmax_pool_kernel<8><<<grid_for(total), kThreads, 0, stream>>>(xh, yh, total, c, win);
  } else {
    const int total = n * win.oh * win.ow * c;
    if (total == 0) return;
    hmax_pool_kernel<1><<<grid_for(total), kThreads, 0, stream>>>(xh, yh, total, c, win);
  }
  MINFER_CUDA_CHECK(cudaGetLastError());
}

void hglobal_avg_pool(const void* x, float* y, int n, int hw, int c, cudaStream_t stream) {
  const int total = n * c;
  if (total == 0) return;
  hglobal_avg_pool_kernel<<<grid_for(total), kThreads, 0, stream>>>(
      static_cast<const __half*>(x), y, total, hw, c);
  MINFER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace minfer::cuda
