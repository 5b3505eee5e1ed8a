// com.minfer:SpaceToDepthNhwc on CUDA (ops/space_to_depth_nhwc.h). 16 output channels (what
// the stem rewrite makes): one thread per output pixel, assembling the pixel in registers and
// storing it as whole 16-byte vectors, neighbouring threads reading neighbouring input
// columns. Any other count: one thread per output element.
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "backends/cuda/device_util.cuh"
#include "backends/cuda/launch.h"

namespace minfer::cuda {

namespace {

template <typename In, typename Out>
__device__ __forceinline__ Out convert(In v, const SpaceToDepth&) {
  return v;
}
template <>
__device__ __forceinline__ __half convert(float v, const SpaceToDepth&) {
  return __float2half_rn(v);
}
// Must equal int8::quantize_value, as quantize_kernel (int8_ops.cu) does.
template <>
__device__ __forceinline__ int8_t convert(float v, const SpaceToDepth& s) {
  const float r = rintf(__fdiv_rn(v, s.scale));
  if (isnan(r)) return static_cast<int8_t>(s.zero_point);
  return static_cast<int8_t>(
      fminf(fmaxf(__fadd_rn(r, static_cast<float>(s.zero_point)), -128.f), 127.f));
}

template <typename In, typename Out>
__global__ void space_to_depth_kernel(const In* __restrict__ x, Out* __restrict__ y, int total,
                                      SpaceToDepth s, Out pad) {
  const int bh = s.h / s.block, bw = s.w / s.block, used = s.block * s.block * s.c;
  MINFER_GRID_STRIDE(i, total) {
    const int ch = i % s.channels, pixel = i / s.channels;
    Out v = pad;
    if (ch < used) {
      const int bx = pixel % bw, by = pixel / bw % bh, n = pixel / (bw * bh);
      const int c = ch % s.c, sub = ch / s.c, sy = sub / s.block, sx = sub % s.block;
      v = convert<In, Out>(
          x[((static_cast<int64_t>(n) * s.c + c) * s.h + by * s.block + sy) * s.w +
            bx * s.block + sx],
          s);
    }
    y[i] = v;
  }
}

constexpr int kPixelChannels = 16;

template <typename In, typename Out>
__global__ void space_to_depth16_kernel(const In* __restrict__ x, Out* __restrict__ y, int total,
                                        SpaceToDepth s, Out pad) {
  const int bh = s.h / s.block, bw = s.w / s.block, used = s.block * s.block * s.c;
  MINFER_GRID_STRIDE(pixel, total) {
    const int bx = pixel % bw, by = pixel / bw % bh, n = pixel / (bw * bh);
    const In* img = x + static_cast<int64_t>(n) * s.c * s.h * s.w;
    alignas(16) Out v[kPixelChannels];
#pragma unroll
    for (int ch = 0; ch < kPixelChannels; ++ch) {
      v[ch] = pad;
      if (ch < used) {
        const int c = ch % s.c, sub = ch / s.c, sy = sub / s.block, sx = sub % s.block;
        v[ch] = convert<In, Out>(
            img[(static_cast<int64_t>(c) * s.h + by * s.block + sy) * s.w + bx * s.block + sx],
            s);
      }
    }
    uint4* dst = reinterpret_cast<uint4*>(y + static_cast<int64_t>(pixel) * kPixelChannels);
    const uint4* src = reinterpret_cast<const uint4*>(v);
#pragma unroll
    for (int q = 0; q < int(sizeof(v) / sizeof(uint4)); ++q) dst[q] = src[q];
  }
}

// Blocks of 2 over float input of C channels (RGB stems: C = 3): each row pair of a block is
// one 8-byte load, so a warp reads whole contiguous rows; the same pixel layout as above.
template <int C, typename Out>
__global__ void space_to_depth16_pairs_kernel(const float* __restrict__ x, Out* __restrict__ y,
                                              int total, SpaceToDepth s, Out pad) {
  static_assert(4 * C <= kPixelChannels);
  const int bh = s.h / 2, bw = s.w / 2;
  MINFER_GRID_STRIDE(pixel, total) {
    const int bx = pixel % bw, by = pixel / bw % bh, n = pixel / (bw * bh);
    const float* img = x + static_cast<int64_t>(n) * C * s.h * s.w;
    alignas(16) Out v[kPixelChannels];
#pragma unroll
    for (int ch = 4 * C; ch < kPixelChannels; ++ch) v[ch] = pad;
#pragma unroll
    for (int c = 0; c < C; ++c)
#pragma unroll
      for (int sy = 0; sy < 2; ++sy) {
        const float2 p = __ldg(reinterpret_cast<const float2*>(
            img + (static_cast<int64_t>(c) * s.h + by * 2 + sy) * s.w + bx * 2));
        v[(sy * 2) * C + c] = convert<float, Out>(p.x, s);
        v[(sy * 2 + 1) * C + c] = convert<float, Out>(p.y, s);
      }
    uint4* dst = reinterpret_cast<uint4*>(y + static_cast<int64_t>(pixel) * kPixelChannels);
    const uint4* src = reinterpret_cast<const uint4*>(v);
#pragma unroll
    for (int q = 0; q < int(sizeof(v) / sizeof(uint4)); ++q) dst[q] = src[q];
  }
}

template <typename In, typename Out>
void launch(const void* x, void* y, const SpaceToDepth& s, const void* pad, cudaStream_t stream) {
  const int pixels = s.n * (s.h / s.block) * (s.w / s.block), total = pixels * s.channels;
  if (total == 0) return;
  Out p;
  memcpy(&p, pad, sizeof(Out));
  const bool pairs = std::is_same_v<In, float> && s.block == 2 && s.c == 3 && s.w % 2 == 0 &&
                     reinterpret_cast<uintptr_t>(x) % 8 == 0;
  if (s.channels == kPixelChannels && pairs)
    space_to_depth16_pairs_kernel<3, Out><<<grid_for(pixels), kThreads, 0, stream>>>(
        static_cast<const float*>(x), static_cast<Out*>(y), pixels, s, p);
  else if (s.channels == kPixelChannels)  // y is an arena tensor: 16-byte aligned
    space_to_depth16_kernel<In, Out><<<grid_for(pixels), kThreads, 0, stream>>>(
        static_cast<const In*>(x), static_cast<Out*>(y), pixels, s, p);
  else
    space_to_depth_kernel<In, Out><<<grid_for(total), kThreads, 0, stream>>>(
        static_cast<const In*>(x), static_cast<Out*>(y), total, s, p);
  MINFER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void space_to_depth_nhwc(const void* x, void* y, const SpaceToDepth& s, const void* pad,
                         cudaStream_t stream) {
  if (s.half) return launch<float, __half>(x, y, s, pad, stream);
  if (s.quantize) return launch<float, int8_t>(x, y, s, pad, stream);
  switch (s.elem_size) {
    case 1: return launch<int8_t, int8_t>(x, y, s, pad, stream);
    case 2: return launch<__half, __half>(x, y, s, pad, stream);
    default: return launch<float, float>(x, y, s, pad, stream);
  }
}

}  // namespace minfer::cuda
