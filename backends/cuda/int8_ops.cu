// QuantizeLinear, DequantizeLinear, QAdd, QMaxPool and QGlobalAveragePool on the GPU: the
// integers (and the float rounding) of the reference kernels in ops/int8.
#include "backends/cuda/device_util.cuh"
#include "backends/cuda/launch.h"

namespace minfer::cuda {

namespace {

__device__ __forceinline__ int param_index(const AxisParams& p, int i) {
  return p.count == 1 ? 0 : i / p.inner % p.count;
}

// Must equal int8::quantize_value (ops/int8/int8_math.h): one IEEE division, round half to
// even, NaN to the zero point, then the zero point added and saturated in float.
__global__ void quantize_kernel(const float* __restrict__ x, void* __restrict__ y, int n,
                                AxisParams p, bool to_u8) {
  const float lo = to_u8 ? 0.f : -128.f, hi = to_u8 ? 255.f : 127.f;
  MINFER_GRID_STRIDE(i, n) {
    const int c = param_index(p, i);
    const int32_t zp = p.zero_point[c];
    const float r = rintf(__fdiv_rn(x[i], p.scale[c]));
    int32_t q = zp;
    if (!isnan(r))
      q = static_cast<int32_t>(fminf(fmaxf(__fadd_rn(r, static_cast<float>(zp)), lo), hi));
    static_cast<uint8_t*>(y)[i] = static_cast<uint8_t>(q);
  }
}

// Must equal int8::dequantize_value: float(q - zero_point) * scale, one rounding each.
__global__ void dequantize_kernel(const void* __restrict__ x, float* __restrict__ y, int n,
                                  AxisParams p, int in_bytes, bool is_unsigned) {
  MINFER_GRID_STRIDE(i, n) {
    const int c = param_index(p, i);
    int64_t q;
    if (in_bytes == 4)
      q = static_cast<const int32_t*>(x)[i];
    else if (is_unsigned)
      q = static_cast<const uint8_t*>(x)[i];
    else
      q = static_cast<const int8_t*>(x)[i];
    y[i] = __fmul_rn(__ll2float_rn(q - p.zero_point[c]), p.scale[c]);
  }
}

__global__ void qadd_kernel(const int8_t* __restrict__ a, const int8_t* __restrict__ b,
                            int8_t* __restrict__ y, int n, QAddParams p) {
  MINFER_GRID_STRIDE(i, n) {
    const int32_t v = add_requantize(a[i] - p.a_zero_point, b[i] - p.b_zero_point, p.ma, p.mb, p.k);
    y[i] = static_cast<int8_t>(clamp_i32(v + p.y_zero_point, p.y_min, p.y_max));
  }
}

// One thread per output element, or per 4 channels (V = uint32_t, when C is a multiple of 4:
// one 4-byte load and a SIMD byte max per tap); channels innermost, so a warp reads contiguous
// bytes. `c` and the element count are in units of V.
template <typename V>
__device__ __forceinline__ V max_v(V a, V b);
template <>
__device__ __forceinline__ int8_t max_v(int8_t a, int8_t b) {
  return a > b ? a : b;
}
template <>
__device__ __forceinline__ uint32_t max_v(uint32_t a, uint32_t b) {
  return __vmaxs4(a, b);
}
template <>
__device__ __forceinline__ uint4 max_v(uint4 a, uint4 b) {
  return make_uint4(__vmaxs4(a.x, b.x), __vmaxs4(a.y, b.y), __vmaxs4(a.z, b.z),
                    __vmaxs4(a.w, b.w));
}

template <typename V>
__global__ void qmax_pool_kernel(const V* __restrict__ x, V* __restrict__ y, int total, int c,
                                 Window2d s, V lowest) {
  MINFER_GRID_STRIDE(i, total) {
    const int ch = i % c, pos = i / c;
    const int ox = pos % s.ow, oy = pos / s.ow % s.oh, n = pos / (s.ow * s.oh);
    V best = lowest;  // padding never wins; an all-padding window gives -128
    for (int ky = 0; ky < s.kh; ++ky) {
      const int iy = oy * s.sh - s.pad_t + ky * s.dh;
      if (iy < 0 || iy >= s.h) continue;
      for (int kx = 0; kx < s.kw; ++kx) {
        const int ix = ox * s.sw - s.pad_l + kx * s.dw;
        if (ix >= 0 && ix < s.w) best = max_v(best, __ldg(x + ((n * s.h + iy) * s.w + ix) * c + ch));
      }
    }
    y[i] = best;
  }
}

// One thread per (image, channel), summing over positions: neighbouring threads read
// neighbouring channels.
__global__ void qglobal_avg_pool_kernel(const int8_t* __restrict__ x, int8_t* __restrict__ y, int n,
                                        int hw, int c, QPoolParams p) {
  MINFER_GRID_STRIDE(i, n * c) {
    const int8_t* xp = x + i / c * hw * c + i % c;
    int32_t sum = 0;
    for (int j = 0; j < hw; ++j) sum += xp[j * c] - p.x_zero_point;
    y[i] = static_cast<int8_t>(
        clamp_i32(requantize(sum, p.mult, p.shift, p.pre) + p.y_zero_point, -128, 127));
  }
}

}  // namespace

void quantize_f32(const float* x, void* y, int n, AxisParams p, bool to_u8, cudaStream_t stream) {
  if (n == 0) return;
  quantize_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, y, n, p, to_u8);
  MINFER_CUDA_CHECK(cudaGetLastError());
}

void dequantize_f32(const void* x, float* y, int n, AxisParams p, int in_bytes, bool is_unsigned,
                    cudaStream_t stream) {
  if (n == 0) return;
  dequantize_kernel<<<grid_for(n), kThreads, 0, stream>>>(x, y, n, p, in_bytes, is_unsigned);
  MINFER_CUDA_CHECK(cudaGetLastError());
}

void qadd(const int8_t* a, const int8_t* b, int8_t* y, int n, QAddParams p, cudaStream_t stream) {
  if (n == 0) return;
  qadd_kernel<<<grid_for(n), kThreads, 0, stream>>>(a, b, y, n, p);
  MINFER_CUDA_CHECK(cudaGetLastError());
}

void qmax_pool_nhwc(const int8_t* x, int8_t* y, int n, int c, const Window2d& win,
                    cudaStream_t stream) {
  const int total = n * win.oh * win.ow * c;
  if (total == 0) return;
  // 16 channels a thread where they are one aligned vector (arena tensors are), else 4, else 1.
  if (c % 16 == 0)
    qmax_pool_kernel<uint4><<<grid_for(total / 16), kThreads, 0, stream>>>(
        reinterpret_cast<const uint4*>(x), reinterpret_cast<uint4*>(y), total / 16, c / 16, win,
        make_uint4(0x80808080u, 0x80808080u, 0x80808080u, 0x80808080u));
  else if (c % 4 == 0)
    qmax_pool_kernel<uint32_t><<<grid_for(total / 4), kThreads, 0, stream>>>(
        reinterpret_cast<const uint32_t*>(x), reinterpret_cast<uint32_t*>(y), total / 4, c / 4,
        win, 0x80808080u);
  else
    qmax_pool_kernel<int8_t><<<grid_for(total), kThreads, 0, stream>>>(x, y, total, c, win,
                                                                      int8_t{-128});
  MINFER_CUDA_CHECK(cudaGetLastError());
}

void qglobal_avg_pool(const int8_t* x, int8_t* y, int n, int hw, int c, QPoolParams p,
                      cudaStream_t stream) {
  if (n * c == 0) return;
  qglobal_avg_pool_kernel<<<grid_for(n * c), kThreads, 0, stream>>>(x, y, n, hw, c, p);
  MINFER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace minfer::cuda
