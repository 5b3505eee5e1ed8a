// com.minfer:HConv as one implicit-GEMM kernel on the fp16 tensor cores (mma.sync m16n8k16,
// fp32 accumulate): the GEMM is igemm_core.cuh's, read in bytes (a 64-byte k tile is 32 fp16
// values); this file adds the fp16 mma and the epilogue, which applies bias, residual and
// activation in fp32 and rounds to fp16 once.
#include <cuda_fp16.h>

#include "backends/cuda/igemm_core.cuh"

namespace minfer::cuda {

using namespace igemm;

namespace {

__device__ __forceinline__ void mma_f16(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                        uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The CPU's clamp order (fused_ops.cpp): a NaN stays NaN.
__device__ __forceinline__ float activate(const Clamp& act, float v) {
  if (!act.enabled) return v;
  v = v < act.lo ? act.lo : v;
  return v > act.hi ? act.hi : v;
}

// Output channel pair (m, m + 1) of row p: bias, residual and activation, then one rounding.
__device__ __forceinline__ void store_pair(const HStage& st, const IgemmConv& cv,
                                           const __half* __restrict__ z, __half* __restrict__ y,
                                           int p, int m, float v0, float v1, float b0, float b1) {
  const int64_t at = static_cast<int64_t>(p) * cv.m + m;
  const bool pair = m + 1 < cv.m;
  v0 += b0, v1 += b1;
  if (st.residual) {
    if (pair && (at & 1) == 0) {
      const float2 zz = __half22float2(*reinterpret_cast<const __half2*>(z + at));
      v0 += zz.x, v1 += zz.y;
    } else {
      v0 += __half2float(z[at]);
      if (pair) v1 += __half2float(z[at + 1]);
    }
  }
  v0 = activate(st.act, v0), v1 = activate(st.act, v1);
  if (pair && (at & 1) == 0) {
    *reinterpret_cast<__half2*>(y + at) = __floats2half2_rn(v0, v1);
  } else {
    y[at] = __float2half_rn(v0);
    if (pair) y[at + 1] = __float2half_rn(v1);
  }
}

struct HalfEpi {
  using Acc = float;
  HStage st;
  const __half* z;
  __half* y;
  float* split_acc;  // [splits][rows][m] when K is split

  static __device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1) {
    mma_f16(c, a, b0, b1);
  }
  // The staged epilogue's fp32 tile, [BM][BN + 4]: a little more than a 128x128 pipeline.
  static constexpr int kPad = 4;
  static constexpr int epilogue_smem(int bm, int bn) { return bm * (bn + kPad) * 4; }

  // For C_out a multiple of 8: the accumulators go to a shared fp32 tile, then each thread
  // finishes eight channels of a row at once (bias, residual and activation in fp32, one
  // rounding), with 16-byte residual loads and output stores.
  template <int BM, int BN, int WM, int WN, int MT, int NT>
  __device__ __forceinline__ void staged(float (&acc)[MT][NT][4], char* smem,
                                         const IgemmConv& cv, Frag f) const {
    constexpr int TM = BM / WM, TN = BN / WN, kLd = BN + kPad, kThreads = WM * WN * 32;
    float* tile = reinterpret_cast<float*>(smem);
    __syncthreads();  // every warp is done reading the pipeline's tiles
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int row = f.warp_m * TM + i * 16 + f.g + half * 8;
          const int col = f.warp_n * TN + j * 8 + f.t * 2;
          *reinterpret_cast<float2*>(tile + row * kLd + col) =
              make_float2(acc[i][j][half * 2], acc[i][j][half * 2 + 1]);
        }
    __syncthreads();
    constexpr int kVectors = BN / 8;
    for (int v = threadIdx.x; v < BM * kVectors; v += kThreads) {
      const int row = v / kVectors, col = (v % kVectors) * 8;
      const int p = f.m0 + row, m = f.n0 + col;
      if (p >= cv.rows || m >= cv.m) continue;  // m + 8 <= cv.m: both are multiples of 8
      float r[8];
      const float4 lo = *reinterpret_cast<const float4*>(tile + row * kLd + col);
      const float4 hi = *reinterpret_cast<const float4*>(tile + row * kLd + col + 4);
      r[0] = lo.x, r[1] = lo.y, r[2] = lo.z, r[3] = lo.w;
      r[4] = hi.x, r[5] = hi.y, r[6] = hi.z, r[7] = hi.w;
      if (st.bias)
#pragma unroll
        for (int e = 0; e < 8; ++e) r[e] += __ldg(st.bias + m + e);
      const int64_t at = static_cast<int64_t>(p) * cv.m + m;
      if (st.residual) {
        const uint4 zv = *reinterpret_cast<const uint4*>(z + at);
        const __half2* zh = reinterpret_cast<const __half2*>(&zv);
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float2 zz = __half22float2(zh[e]);
          r[2 * e] += zz.x, r[2 * e + 1] += zz.y;
        }
      }
      uint4 out;
      __half2* oh = reinterpret_cast<__half2*>(&out);
#pragma unroll
      for (int e = 0; e < 4; ++e)
        oh[e] = __floats2half2_rn(activate(st.act, r[2 * e]), activate(st.act, r[2 * e + 1]));
      *reinterpret_cast<uint4*>(y + at) = out;
    }
  }

  // c0, c1 at (row g, cols 2t, 2t + 1), c2, c3 at row g + 8.
  template <int BM, int BN, int WM, int WN, int MT, int NT>
  __device__ __forceinline__ void finish(float (&acc)[MT][NT][4], char* smem,
                                         const IgemmConv& cv, Frag f) const {
    constexpr int TM = BM / WM, TN = BN / WN;
    if (!split_acc && cv.m % 8 == 0) {
      staged<BM, BN, WM, WN>(acc, smem, cv, f);
      return;
    }
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int m = f.n0 + f.warp_n * TN + j * 8 + f.t * 2;
      if (m >= cv.m) continue;
      const bool pair = m + 1 < cv.m;
      float b0 = 0.f, b1 = 0.f;
      if (!split_acc && st.bias) b0 = __ldg(st.bias + m), b1 = pair ? __ldg(st.bias + m + 1) : 0.f;
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int p = f.m0 + f.warp_m * TM + i * 16 + f.g + half * 8;
          if (p >= cv.rows) continue;
          const float v0 = acc[i][j][half * 2], v1 = acc[i][j][half * 2 + 1];
          if (split_acc) {
            float* out =
                split_acc + (static_cast<int64_t>(f.split) * cv.rows + p) * cv.m + m;
            out[0] = v0;
            if (pair) out[1] = v1;
          } else {
            store_pair(st, cv, z, y, p, m, v0, v1, b0, b1);
          }
        }
    }
  }
};

// Split K: sums the splits' partials in order, then the output stage, two channels a thread.
__global__ void split_epilogue_kernel(const float* __restrict__ partial, int splits,
                                      IgemmConv cv, HStage st, const __half* __restrict__ z,
                                      __half* __restrict__ y) {
  const int pairs = (cv.m + 1) / 2, total = cv.rows * pairs;
  const int64_t slice = static_cast<int64_t>(cv.rows) * cv.m;
  MINFER_GRID_STRIDE(i, total) {
    const int p = i / pairs, m = (i - p * pairs) * 2;
    const bool pair = m + 1 < cv.m;
    float v0 = 0.f, v1 = 0.f;
    for (int s = 0; s < splits; ++s) {
      const float* at = partial + s * slice + static_cast<int64_t>(p) * cv.m + m;
      v0 += at[0];
      if (pair) v1 += at[1];
    }
    const float b0 = st.bias ? st.bias[m] : 0.f, b1 = st.bias && pair ? st.bias[m + 1] : 0.f;
    store_pair(st, cv, z, y, p, m, v0, v1, b0, b1);
  }
}

}  // namespace

IgemmConv half_igemm_conv(int c, int m, int rows, const Window2d& win) {
  const int k = 2 * win.kh * win.kw * c;
  return {2 * c, m, k, int((k + kBK - 1) / kBK * kBK), rows, 0, win};
}

size_t hconv_workspace_bytes(const IgemmConv& cv, const IgemmPlan& plan) {
  return plan.splits > 1 ? size_t(plan.splits) * cv.rows * cv.m * sizeof(float) : 0;
}

void hconv_prepare(IgemmTile tile) {
  with_tile(tile, [](auto t) { t.template allow_smem<HalfEpi>(); });
}

void hconv_igemm(const void* x, const void* w, const IgemmConv& cv, const HStage& st,
                 const void* z, void* y, const IgemmPlan& plan, void* workspace,
                 cudaStream_t stream) {
  if (cv.rows == 0 || cv.m == 0) return;
  float* split_acc = plan.splits > 1 ? static_cast<float*>(workspace) : nullptr;
  const HalfEpi epi{st, static_cast<const __half*>(z), static_cast<__half*>(y), split_acc};
  with_tile(plan.tile, [&](auto t) { t.launch(x, w, cv, epi, plan.splits, stream); });
  if (split_acc) {
    const int total = cv.rows * ((cv.m + 1) / 2);
    split_epilogue_kernel<<<grid_for(total), kThreads, 0, stream>>>(
        split_acc, plan.splits, cv, st, epi.z, epi.y);
    MINFER_CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace minfer::cuda
