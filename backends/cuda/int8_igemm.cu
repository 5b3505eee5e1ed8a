// QConv / QGemm as one implicit-GEMM kernel on the int8 tensor cores (mma.sync m16n8k32, int32
// accumulate): no im2col buffer, no int32 accumulator in memory, the output stage of
// docs/int8.md applied in registers and written straight to the int8 (or float) output.
//
//   acc[p, m] = init[m] + sum over k of A[p, k] * W[m, k]
//
// The GEMM itself (NHWC input read on the fly, padding reading the zero point, which W's zero
// columns and `init` make add nothing) is igemm_core.cuh's; this file adds mma m16n8k32 and
// the int8 epilogue.
#include "backends/cuda/igemm_core.cuh"

namespace minfer::cuda {

using namespace igemm;

namespace {

__device__ __forceinline__ void mma_s8(int32_t (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                       uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// One output value through the stage (docs/int8.md): `a` is the accumulator with init added,
// (mult, shift, pre) its channel's multiplier, `z` the residual input's value.
__device__ __forceinline__ int8_t stage_int8(const QStage& st, int32_t a, int32_t mult,
                                             int32_t shift, int32_t pre, int8_t z) {
  int32_t t = clamp_i32(requantize(a, mult, shift, pre) + st.zero_point, st.qmin, st.qmax);
  if (st.residual)
    t = clamp_i32(
        add_requantize(t - st.zero_point, z - st.z_zero_point, st.ma, st.mb, st.k) +
            st.y_zero_point,
        st.y_min, st.y_max);
  return static_cast<int8_t>(t);
}
// float output: one float32 multiply, then Relu as y > 0 ? y : 0 (int8::stage_float).
__device__ __forceinline__ float stage_float(const QStage& st, int32_t a, float scale) {
  const float v = __fmul_rn(__int2float_rn(a), scale);
  return st.relu ? (v > 0.f ? v : 0.f) : v;
}

// The int8 output stage through shared memory, for C_out a multiple of 16: each thread first
// writes its accumulators' requantized values t (the conv's own output) into a BM x BN tile,
// then the block writes the tile as whole 16-byte row vectors, adding the residual read the
// same way. Global stores and residual loads are then full, coalesced vectors.
template <int BM, int BN, int WM, int WN, int MT, int NT>
__device__ __forceinline__ void staged_int8_epilogue(const int32_t (&acc)[MT][NT][4], char* smem,
                                                     const IgemmConv& cv, const QStage& st,
                                                     const int8_t* __restrict__ z,
                                                     int8_t* __restrict__ y) {
  constexpr int kThreads = WM * WN * 32, TM = BM / WM, TN = BN / WN;
  constexpr int kLd = BN + 16;  // padded rows, still 16-byte aligned
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp / WN, warp_n = warp % WN, g = lane >> 2, t = lane & 3;
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
  int8_t* tile = reinterpret_cast<int8_t*>(smem);  // [BM][kLd]
  // This thread's residual vectors, loaded first: their latency hides behind the requantize
  // into the tile instead of stalling the stores below.
  constexpr int kVectors = BN / 16, kPerThread = (BM * kVectors + kThreads - 1) / kThreads;
  uint4 zv[kPerThread];
  if (st.residual) {
#pragma unroll
    for (int r = 0; r < kPerThread; ++r) {
      const int v = tid + r * kThreads, row = v / kVectors, col = (v % kVectors) * 16;
      const int p = m0 + row, m = n0 + col;
      if (v < BM * kVectors && p < cv.rows && m < cv.m)
        zv[r] = __ldg(reinterpret_cast<const uint4*>(z + static_cast<int64_t>(p) * cv.m + m));
    }
  }
  __syncthreads();  // every warp is done reading the pipeline's tiles
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    const int col = warp_n * TN + j * 8 + t * 2, m = n0 + col;
    if (m >= cv.m) continue;  // m + 1 < cv.m too: cv.m is even
    const int32_t init0 = __ldg(st.init + m), init1 = __ldg(st.init + m + 1);
    const int32_t mult0 = __ldg(st.mult + m), mult1 = __ldg(st.mult + m + 1);
    const int32_t shift0 = __ldg(st.shift + m), shift1 = __ldg(st.shift + m + 1);
    const int32_t pre0 = __ldg(st.pre + m), pre1 = __ldg(st.pre + m + 1);
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = warp_m * TM + i * 16 + g + half * 8;
        const int32_t a0 = static_cast<int32_t>(static_cast<uint32_t>(acc[i][j][half * 2]) +
                                                static_cast<uint32_t>(init0));
        const int32_t a1 = static_cast<int32_t>(
            static_cast<uint32_t>(acc[i][j][half * 2 + 1]) + static_cast<uint32_t>(init1));
        const int32_t t0 =
            clamp_i32(requantize(a0, mult0, shift0, pre0) + st.zero_point, st.qmin, st.qmax);
        const int32_t t1 =
            clamp_i32(requantize(a1, mult1, shift1, pre1) + st.zero_point, st.qmin, st.qmax);
        *reinterpret_cast<char2*>(tile + row * kLd + col) =
            make_char2(static_cast<int8_t>(t0), static_cast<int8_t>(t1));
      }
  }
  __syncthreads();
#pragma unroll
  for (int slot = 0; slot < kPerThread; ++slot) {
    const int v = tid + slot * kThreads, row = v / kVectors, col = (v % kVectors) * 16;
    const int p = m0 + row, m = n0 + col;
    // m + 16 <= cv.m: both are multiples of 16
    if (v >= BM * kVectors || p >= cv.rows || m >= cv.m) continue;
    uint4 out = *reinterpret_cast<const uint4*>(tile + row * kLd + col);
    const int64_t at = static_cast<int64_t>(p) * cv.m + m;
    if (st.residual) {
      uint32_t* o = &out.x;
      const uint32_t* zw = &zv[slot].x;
#pragma unroll
      for (int word = 0; word < 4; ++word) {
        uint32_t r = 0;
#pragma unroll
        for (int b = 0; b < 4; ++b) {
          const int32_t tv = static_cast<int8_t>(o[word] >> (8 * b));
          const int32_t zb = static_cast<int8_t>(zw[word] >> (8 * b));
          const int32_t yv = clamp_i32(add_requantize(tv - st.zero_point, zb - st.z_zero_point,
                                                      st.ma, st.mb, st.k) +
                                           st.y_zero_point,
                                       st.y_min, st.y_max);
          r |= (static_cast<uint32_t>(yv) & 0xffu) << (8 * b);
        }
        o[word] = r;
      }
    }
    *reinterpret_cast<uint4*>(y + at) = out;
  }
}

// The int8 epilogue: the output stage of docs/int8.md on each accumulator (int8 or float
// out, fused residual QAdd), or, when K is split, the int32 partial sums added into
// split_acc (exact in any order) for qconv_epilogue to finish.
struct Int8Epi {
  using Acc = int32_t;
  QStage st;
  const int8_t* z;
  void* y;
  int32_t* split_acc;

  static __device__ __forceinline__ void mma(int32_t (&c)[4], const uint32_t (&a)[4],
                                             uint32_t b0, uint32_t b1) {
    mma_s8(c, a, b0, b1);
  }
  // The staged epilogue's int8 tile, [BM][BN + 16], fits in the pipeline's memory.
  static constexpr int epilogue_smem(int bm, int bn) { return bm * (bn + 16); }

  // c0, c1 at (row g, cols 2t, 2t + 1), c2, c3 at row g + 8.
  template <int BM, int BN, int WM, int WN, int MT, int NT>
  __device__ __forceinline__ void finish(int32_t (&acc)[MT][NT][4], char* smem,
                                         const IgemmConv& cv, Frag f) const {
    constexpr int TM = BM / WM, TN = BN / WN;
    const int g = f.g, t = f.t, m0 = f.m0, n0 = f.n0, warp_m = f.warp_m, warp_n = f.warp_n;
    if (split_acc) {  // integer sums: exact in any order
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const int m = n0 + warp_n * TN + j * 8 + t * 2;
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const int p = m0 + warp_m * TM + i * 16 + g + half * 8;
            if (p >= cv.rows) continue;
            int32_t* out = split_acc + static_cast<int64_t>(p) * cv.m + m;
            if (m < cv.m) atomicAdd(out, acc[i][j][half * 2]);
            if (m + 1 < cv.m) atomicAdd(out + 1, acc[i][j][half * 2 + 1]);
          }
      }
      return;
    }
    if (st.int8_out && cv.m % 16 == 0) {
      staged_int8_epilogue<BM, BN, WM, WN>(acc, smem, cv, st, z, static_cast<int8_t*>(y));
      return;
    }
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int m = n0 + warp_n * TN + j * 8 + t * 2;
      if (m >= cv.m) continue;
      const bool pair = m + 1 < cv.m;
      // This thread's two channels: their parameters once, for all its rows.
      const int m1 = pair ? m + 1 : m;
      const int32_t init0 = __ldg(st.init + m), init1 = __ldg(st.init + m1);
      int32_t mult0 = 0, mult1 = 0, shift0 = 33, shift1 = 33, pre0 = 0, pre1 = 0;
      float scale0 = 0.f, scale1 = 0.f;
      if (st.int8_out) {
        mult0 = __ldg(st.mult + m), mult1 = __ldg(st.mult + m1);
        shift0 = __ldg(st.shift + m), shift1 = __ldg(st.shift + m1);
        pre0 = __ldg(st.pre + m), pre1 = __ldg(st.pre + m1);
      } else {
        scale0 = __ldg(st.scale + m), scale1 = __ldg(st.scale + m1);
      }
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int p = m0 + warp_m * TM + i * 16 + g + half * 8;
          if (p >= cv.rows) continue;
          // Modular int32 adds, as the CPU kernels do.
          const int32_t a0 = static_cast<int32_t>(static_cast<uint32_t>(acc[i][j][half * 2]) +
                                                  static_cast<uint32_t>(init0));
          const int32_t a1 = static_cast<int32_t>(static_cast<uint32_t>(acc[i][j][half * 2 + 1]) +
                                                  static_cast<uint32_t>(init1));
          const int64_t at = static_cast<int64_t>(p) * cv.m + m;
          if (st.int8_out) {
            const int8_t* zo = z ? z + at : nullptr;
            int8_t* yo = static_cast<int8_t*>(y) + at;
            const int8_t y0 = stage_int8(st, a0, mult0, shift0, pre0, zo ? zo[0] : 0);
            if (!pair) {
              yo[0] = y0;
            } else {
              const int8_t y1 = stage_int8(st, a1, mult1, shift1, pre1, zo ? zo[1] : 0);
              if ((at & 1) == 0)
                *reinterpret_cast<char2*>(yo) = make_char2(y0, y1);
              else
                yo[0] = y0, yo[1] = y1;
            }
          } else {
            float* yo = static_cast<float*>(y) + at;
            yo[0] = stage_float(st, a0, scale0);
            if (pair) yo[1] = stage_float(st, a1, scale1);
          }
        }
    }
  }
};

}  // namespace

bool igemm_accepts(int c, int k) {
  return c % 16 == 0 || c == 4 || c == 8 || (k + kBK - 1) / kBK * kBK <= kMaxGatherK;
}

Window2d igemm_window(const Window2d& win, int c_bytes) {
  Window2d w = win;
  if (c_bytes == 4 || c_bytes == 8) {
    const int pixels = 16 / c_bytes;
    w.kw = (w.kw + pixels - 1) / pixels * pixels;
  }
  return w;
}

IgemmPlan igemm_plan(const IgemmConv& cv, int sm_count) {
  // The largest tile that still gives every multiprocessor a block: large tiles reuse each
  // loaded byte more, small ones keep a small problem (batch 1) from idling the chip. A
  // 128-channel tile is skipped for 64 channels or fewer, where half of it would be padding;
  // those take 256 rows instead, and only they (256 x 64 reuses less than 128 x 128).
  for (IgemmTile tile : kIgemmTiles) {
    int blocks = 0, channels = 0;
    with_tile(tile, [&](auto t) { blocks = t.blocks(cv), channels = t.kChannels; });
    if ((channels == 128 && cv.m <= 64) || (tile == IgemmTile::L256x64 && cv.m > 64)) continue;
    if (blocks >= sm_count) return {tile, 1};
  }
  // Still too few blocks: split K over more blocks, at least two k tiles each, and sum their
  // int32 partials (exact in any order) before the output stage.
  const int blocks = TileXS::blocks(cv), ktiles = cv.ld / kBK;
  const int splits = std::max(1, std::min(sm_count / std::max(blocks, 1), ktiles / 2));
  return {IgemmTile::XS32x64, splits};
}

std::vector<IgemmPlan> igemm_candidates(const IgemmConv& cv, int sm_count, int splits) {
  std::vector<IgemmPlan> plans;
  const int ktiles = cv.ld / kBK;
  for (IgemmTile tile : kIgemmTiles) {
    int blocks = 0;
    with_tile(tile, [&](auto t) { blocks = t.blocks(cv); });
    if (splits > 0) {
      plans.push_back({tile, splits});
      continue;
    }
    plans.push_back({tile, 1});
    // Too few blocks for the chip: also this tile with K split over more of them.
    const int s = std::min(sm_count / std::max(blocks, 1), ktiles / 2);
    if (s > 1) plans.push_back({tile, s});
    // A last wave of blocks left partly empty: the large tiles with K split in two or three
    // fill it (at the cost of the int32 partials' traffic), where K is long.
    if (s <= 1 && (tile == IgemmTile::L128x128 || tile == IgemmTile::L128x64))
      for (int extra : {2, 3})
        if (ktiles >= 8 * extra) plans.push_back({tile, extra});
  }
  return plans;
}

size_t igemm_workspace_bytes(const IgemmConv& cv, const IgemmPlan& plan) {
  return plan.splits > 1 ? size_t(cv.rows) * size_t(cv.m) * sizeof(int32_t) : 0;
}

const char* igemm_tile_name(IgemmTile tile) {
  switch (tile) {
    case IgemmTile::L256x64: return "256x64";
    case IgemmTile::L128x128: return "128x128";
    case IgemmTile::L128x64: return "128x64";
    case IgemmTile::S64x64: return "64x64";
    case IgemmTile::XS32x64: return "32x64";
  }
  return "?";
}

void igemm_prepare(IgemmTile tile) {
  with_tile(tile, [](auto t) { t.template allow_smem<Int8Epi>(); });
}

void qconv_igemm(const int8_t* x, const int8_t* w, const IgemmConv& cv, const QStage& st,
                 const int8_t* z, void* y, const IgemmPlan& plan, void* workspace,
                 cudaStream_t stream) {
  if (cv.rows == 0 || cv.m == 0) return;
  int32_t* split_acc = plan.splits > 1 ? static_cast<int32_t*>(workspace) : nullptr;
  if (split_acc)
    MINFER_CUDA_CHECK(cudaMemsetAsync(split_acc, 0, igemm_workspace_bytes(cv, plan), stream));
  const Int8Epi epi{st, z, y, split_acc};
  with_tile(plan.tile, [&](auto t) { t.launch(x, w, cv, epi, plan.splits, stream); });
  if (split_acc) qconv_epilogue(split_acc, cv.m, cv.rows, cv.m, st, z, y, stream);
}

}  // namespace minfer::cuda
