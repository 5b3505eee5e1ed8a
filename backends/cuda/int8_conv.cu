// QConv / QGemm device code: im2col of NHWC int8 rows, a dp4a GEMM (the fallback where
// cuBLASLt's int8 GEMM is not used) and the requantizing epilogue of docs/int8.md.
#include "backends/cuda/device_util.cuh"
#include "backends/cuda/launch.h"

namespace minfer::cuda {

namespace {

// V = int8_t (one channel per thread) or int32_t (four, when cg and C are multiples of 4);
// every count below is in units of V.
template <typename V>
__global__ void im2col_kernel(const V* __restrict__ x, ConvNhwc s, int c, int cg, int g, int p0,
                              int rows, int ld, int k, V pad, V* __restrict__ col) {
  const Window2d& w = s.win;
  const int plane = w.oh * w.ow;
  MINFER_GRID_STRIDE(i, rows * ld) {
    const int kk = i % ld;
    V v = 0;
    if (kk < k) {
      const int p = p0 + i / ld, tap = kk / cg, ch = kk % cg;
      const int n = p / plane, oy = p % plane / w.ow, ox = p % w.ow;
      const int iy = oy * w.sh - w.pad_t + tap / w.kw * w.dh;
      const int ix = ox * w.sw - w.pad_l + tap % w.kw * w.dw;
      v = pad;  // the zero point: real 0, it adds nothing
      if (iy >= 0 && iy < w.h && ix >= 0 && ix < w.w)
        v = x[((n * w.h + iy) * w.w + ix) * c + g * cg + ch];
    }
    col[i] = v;
  }
}

// A 64 x 64 tile of acc per block of 256 threads (4 x 4 each), k in steps of 8 words.
constexpr int kTile = 64, kWords = 8;

__global__ void gemm_dp4a_kernel(const int8_t* __restrict__ a, int lda,
                                 const int8_t* __restrict__ w, int ldw, int32_t* __restrict__ acc,
                                 int ldc, int rows, int cols, int k) {
  __shared__ int32_t as[kWords][kTile + 1];
  __shared__ int32_t ws[kWords][kTile + 1];
  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int r0 = blockIdx.x * kTile, c0 = blockIdx.y * kTile;
  int32_t sum[4][4] = {};
  for (int k0 = 0; k0 < k; k0 += kWords * 4) {
    for (int j = tid; j < kWords * kTile; j += kThreads) {
      const int row = j / kWords, word = j % kWords, kk = k0 + word * 4;
      const bool in_k = kk < k;
      as[word][row] = in_k && r0 + row < rows
                          ? *reinterpret_cast<const int32_t*>(a + (r0 + row) * lda + kk)
                          : 0;
      ws[word][row] = in_k && c0 + row < cols
                          ? *reinterpret_cast<const int32_t*>(w + (c0 + row) * ldw + kk)
                          : 0;
    }
    __syncthreads();
#pragma unroll
    for (int word = 0; word < kWords; ++word) {
      int32_t av[4], wv[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) av[i] = as[word][ty + 16 * i], wv[i] = ws[word][tx + 16 * i];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) sum[i][j] = __dp4a(av[i], wv[j], sum[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      const int r = r0 + ty + 16 * i, col = c0 + tx + 16 * j;
      if (r < rows && col < cols) acc[r * ldc + col] = sum[i][j];
    }
}

__global__ void epilogue_kernel(const int32_t* __restrict__ acc, int ldc, int total, int channels,
                                QStage st, const int8_t* __restrict__ z, void* __restrict__ y) {
  MINFER_GRID_STRIDE(i, total) {
    const int p = i / channels, m = i % channels;
    // Modular int32 adds, as the CPU kernels do.
    const int32_t a = static_cast<int32_t>(static_cast<uint32_t>(acc[p * ldc + m]) +
                                           static_cast<uint32_t>(st.init[m]));
    if (st.int8_out) {
      // int8::stage_int8 (ops/int8/int8_ops.h)
      int32_t t = clamp_i32(requantize(a, st.mult[m], st.shift[m], st.pre[m]) + st.zero_point,
                            st.qmin, st.qmax);
      if (st.residual)
        t = clamp_i32(
            add_requantize(t - st.zero_point, z[i] - st.z_zero_point, st.ma, st.mb, st.k) +
                st.y_zero_point,
            st.y_min, st.y_max);
      static_cast<int8_t*>(y)[i] = static_cast<int8_t>(t);
    } else {
      // int8::stage_float: one float32 multiply, then Relu as y > 0 ? y : 0
      const float v = __fmul_rn(__int2float_rn(a), st.scale[m]);
      static_cast<float*>(y)[i] = st.relu ? (v > 0.f ? v : 0.f) : v;
    }
  }
}

}  // namespace

void im2col_i8_nhwc(const int8_t* x, const ConvNhwc& s, int g, int p0, int rows, int ld, int8_t pad,
                    int8_t* col, cudaStream_t stream) {
  const int k = s.win.kh * s.win.kw * s.cg;
  if (rows == 0) return;
  if (s.cg % 4 == 0 && s.c % 4 == 0 && ld % 4 == 0) {
    const uint32_t p = static_cast<uint8_t>(pad) * 0x01010101u;
    im2col_kernel<int32_t><<<grid_for(rows * ld / 4), kThreads, 0, stream>>>(
        reinterpret_cast<const int32_t*>(x), s, s.c / 4, s.cg / 4, g, p0, rows, ld / 4, k / 4,
        static_cast<int32_t>(p), reinterpret_cast<int32_t*>(col));
  } else {
    im2col_kernel<int8_t><<<grid_for(rows * ld), kThreads, 0, stream>>>(x, s, s.c, s.cg, g, p0,
                                                                        rows, ld, k, pad, col);
  }
  MINFER_CUDA_CHECK(cudaGetLastError());
}

void gemm_i8_dp4a(const int8_t* a, int lda, const int8_t* w, int ldw, int32_t* acc, int ldc,
                  int rows, int cols, int k, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  const dim3 grid((rows + kTile - 1) / kTile, (cols + kTile - 1) / kTile);
  gemm_dp4a_kernel<<<grid, kThreads, 0, stream>>>(a, lda, w, ldw, acc, ldc, rows, cols, k);
  MINFER_CUDA_CHECK(cudaGetLastError());
}

void qconv_epilogue(const int32_t* acc, int ldc, int rows, int channels, const QStage& st,
                    const int8_t* z, void* y, cudaStream_t stream) {
  const int total = rows * channels;
  if (total == 0) return;
  epilogue_kernel<<<grid_for(total), kThreads, 0, stream>>>(acc, ldc, total, channels, st, z, y);
  MINFER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace minfer::cuda
