// QConv / QGemm as one implicit-GEMM kernel on the int8 tensor cores (mma.sync m16n8k32, int32
// accumulate): no im2col buffer, no int32 accumulator in memory, the output stage of
// docs/int8.md applied in registers and written straight to the int8 (or float) output.
//
//   acc[p, m] = init[m] + sum over k of A[p, k] * W[m, k]
//
// A[p, k] is read from the NHWC input on the fly (k = (ky * kw + kx) * C + c; padding and
// k >= K read the zero point, which W's zero columns and `init` make add nothing), W is the
// packed weight [M][ld] (ld a multiple of kBK, zero padded). Tiles of A and W go through
// shared memory in a cp.async pipeline of kStages; rows of 64 bytes are stored with their
// four 16-byte chunks XOR-swizzled by row, so that ldmatrix reads are free of bank conflicts.
#include "backends/cuda/device_util.cuh"
#include "backends/cuda/launch.h"

#include <algorithm>

namespace minfer::cuda {

namespace {

constexpr int kBK = 64;  // bytes of k per tile row: four 16-byte chunks
constexpr int kStages = 4;

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Byte offset of (row, 16-byte chunk) in a tile of 64-byte rows.
__device__ __forceinline__ int swizzle(int row, int chunk) {
  return row * kBK + ((chunk ^ ((row >> 1) & 3)) << 4);
}

__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
  // src-size 0 fills the 16 bytes with zeros and reads nothing.
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

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
  constexpr int kVectors = BN / 16;
  for (int v = tid; v < BM * kVectors; v += kThreads) {
    const int row = v / kVectors, col = (v % kVectors) * 16;
    const int p = m0 + row, m = n0 + col;
    if (p >= cv.rows || m >= cv.m) continue;  // m + 16 <= cv.m: both are multiples of 16
    uint4 out = *reinterpret_cast<const uint4*>(tile + row * kLd + col);
    const int64_t at = static_cast<int64_t>(p) * cv.m + m;
    if (st.residual) {
      const uint4 zv = *reinterpret_cast<const uint4*>(z + at);
      uint32_t* o = &out.x;
      const uint32_t* zw = &zv.x;
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

// BM x BN tile of the output per block, WM x WN warps of (BM / WM) x (BN / WN) each.
// kVecA: C is a multiple of 16, so every 16-byte chunk of a row of A is 16 consecutive
// channels of one input pixel (one cp.async); otherwise the chunk is gathered byte by byte.
template <int BM, int BN, int WM, int WN, bool kVecA>
__global__ void __launch_bounds__(WM* WN * 32)
    igemm_kernel(const int8_t* __restrict__ x, const int8_t* __restrict__ w, IgemmConv cv,
                 QStage st, const int8_t* __restrict__ z, void* __restrict__ y,
                 int32_t* __restrict__ split_acc) {
  constexpr int kThreads = WM * WN * 32;
  constexpr int TM = BM / WM, TN = BN / WN, MT = TM / 16, NT = TN / 8;
  constexpr int A_ITERS = BM * 4 / kThreads, B_ITERS = BN * 4 / kThreads;
  static_assert(A_ITERS >= 1 && B_ITERS >= 1 && NT % 2 == 0, "tile shape");
  extern __shared__ __align__(128) char smem[];
  char* sa = smem;                           // [kStages][BM][kBK]
  char* sb = smem + kStages * BM * kBK;      // [kStages][BN][kBK]
  // !kVecA: per k < ld, where A's byte k lies relative to the window's top-left input byte.
  int2* gather = reinterpret_cast<int2*>(sb + kStages * BN * kBK);  // [ld]

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp / WN, warp_n = warp % WN;
  const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
  const Window2d& win = cv.win;
  const int plane = win.oh * win.ow;
  const int chunk = tid & 3;  // each thread always loads the same chunk column
  const uint32_t zx4 = static_cast<uint8_t>(cv.x_zero_point) * 0x01010101u;

  // The output pixels whose A rows this thread loads.
  int a_img[A_ITERS], a_iy[A_ITERS], a_ix[A_ITERS];
#pragma unroll
  for (int i = 0; i < A_ITERS; ++i) {
    const int p = m0 + (tid >> 2) + i * (kThreads / 4);
    if (p < cv.rows) {
      const int n = p / plane, r = p - n * plane, oy = r / win.ow, ox = r - oy * win.ow;
      a_img[i] = n * win.h * win.w * cv.c;
      a_iy[i] = oy * win.sh - win.pad_t;
      a_ix[i] = ox * win.sw - win.pad_l;
    } else {
      a_img[i] = -1;
      a_iy[i] = a_ix[i] = 0;
    }
  }

  if constexpr (!kVecA) {
    // x: the byte offset ((ky * dh * W) + kx * dw) * C + c; y: (ky * dh) << 16 | kx * dw, with
    // dy = 0x7fff for k >= K (below the image, so the zero point; any in-bounds byte would do
    // as well, since W is zero there).
    for (int kk = tid; kk < cv.ld; kk += kThreads) {
      const int tap = kk / cv.c, c = kk - tap * cv.c, ty = tap / win.kw, tx = tap - ty * win.kw;
      gather[kk] = kk < cv.k ? make_int2((ty * win.dh * win.w + tx * win.dw) * cv.c + c,
                                         (ty * win.dh) << 16 | tx * win.dw)
                             : make_int2(0, 0x7fff << 16);
    }
    __syncthreads();
  }

  // Where this thread's chunk of the next k tile to load starts: k = (ky * kw + kx) * C + ch.
  // Tiles are loaded in order, so this steps forward without a division.
  int k = 0, ch = 0, kx = 0, ky = 0;
  auto load_tile = [&](int stage) {
#pragma unroll
    for (int i = 0; i < A_ITERS; ++i) {
      const int row = (tid >> 2) + i * (kThreads / 4);
      char* dst = sa + stage * BM * kBK + swizzle(row, chunk);
      if constexpr (kVecA) {
        const int iy = a_iy[i] + ky * win.dh, ix = a_ix[i] + kx * win.dw;
        if (a_img[i] >= 0 && k < cv.k && iy >= 0 && iy < win.h && ix >= 0 && ix < win.w)
          cp_async16(smem_addr(dst), x + a_img[i] + (iy * win.w + ix) * cv.c + ch, true);
        else
          *reinterpret_cast<uint4*>(dst) = make_uint4(zx4, zx4, zx4, zx4);
      } else {
        // Straight-line predicated loads from the gather table: all 16 are in flight before
        // any is used.
        int8_t bytes[16];
        const int8_t* corner = x + a_img[i] + (a_iy[i] * win.w + a_ix[i]) * cv.c;
#pragma unroll
        for (int j = 0; j < 16; ++j) {
          const int2 e = gather[k + j];
          const int iy = a_iy[i] + (e.y >> 16), ix = a_ix[i] + (e.y & 0xffff);
          const bool inside = a_img[i] >= 0 && unsigned(iy) < unsigned(win.h) &&
                              unsigned(ix) < unsigned(win.w);
          bytes[j] = inside ? __ldg(corner + e.x) : cv.x_zero_point;
        }
        uint32_t v[4];
#pragma unroll
        for (int q = 0; q < 4; ++q)
          v[q] = uint32_t(uint8_t(bytes[4 * q])) | uint32_t(uint8_t(bytes[4 * q + 1])) << 8 |
                 uint32_t(uint8_t(bytes[4 * q + 2])) << 16 |
                 uint32_t(uint8_t(bytes[4 * q + 3])) << 24;
        *reinterpret_cast<uint4*>(dst) = make_uint4(v[0], v[1], v[2], v[3]);
      }
    }
#pragma unroll
    for (int i = 0; i < B_ITERS; ++i) {
      const int row = (tid >> 2) + i * (kThreads / 4);
      const bool ok = n0 + row < cv.m;
      const int8_t* src = ok ? w + static_cast<int64_t>(n0 + row) * cv.ld + k : w;
      cp_async16(smem_addr(sb + stage * BN * kBK + swizzle(row, chunk)), src, ok);
    }
    k += kBK;
    for (ch += kBK; ch >= cv.c; ch -= cv.c)
      if (++kx == win.kw) kx = 0, ++ky;
  };

  int32_t acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0;

  // Split K: block z takes k tiles [kt0, kt1) and adds its partial sums into split_acc.
  const int ktiles_all = cv.ld / kBK, per_split = (ktiles_all + gridDim.z - 1) / gridDim.z;
  const int kt0 = blockIdx.z * per_split, kt1 = min(ktiles_all, kt0 + per_split);
  const int ktiles = max(kt1 - kt0, 0);
  k = kt0 * kBK + chunk * 16;
  const int tap = k / cv.c;
  ch = k - tap * cv.c, ky = tap / win.kw, kx = tap - ky * win.kw;
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < ktiles) load_tile(s);
    cp_async_commit();
  }
  for (int kt = 0; kt < ktiles; ++kt) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // tile kt is in; every warp is done with the stage loaded next
    if (kt + kStages - 1 < ktiles)
      load_tile((kt + kStages - 1) % kStages);
    cp_async_commit();
    const char* ta = sa + (kt % kStages) * BM * kBK;
    const char* tb = sb + (kt % kStages) * BN * kBK;
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {  // two k32 steps per 64-byte row
      uint32_t af[MT][4], bf[NT][2];
#pragma unroll
      for (int i = 0; i < MT; ++i) {
        // Lanes 0-15: rows 0-15 at k 0-15 of the step; lanes 16-31: the same rows at k 16-31.
        const int row = warp_m * TM + i * 16 + (lane & 15);
        ldmatrix_x4(af[i], smem_addr(ta + swizzle(row, ks * 2 + (lane >> 4))));
      }
#pragma unroll
      for (int j = 0; j < NT; j += 2) {
        // Matrices: (n-tile j, k 0-15), (j, k 16-31), (j + 1, k 0-15), (j + 1, k 16-31).
        const int row = warp_n * TN + j * 8 + ((lane >> 4) << 3) + (lane & 7);
        uint32_t r[4];
        ldmatrix_x4(r, smem_addr(tb + swizzle(row, ks * 2 + ((lane >> 3) & 1))));
        bf[j][0] = r[0], bf[j][1] = r[1], bf[j + 1][0] = r[2], bf[j + 1][1] = r[3];
      }
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) mma_s8(acc[i][j], af[i], bf[j][0], bf[j][1]);
    }
  }
  cp_async_wait<0>();

  // Epilogue: c0, c1 at (row g, cols 2t, 2t + 1), c2, c3 at row g + 8.
  const int g = lane >> 2, t = lane & 3;
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

template <int BM, int BN, int WM, int WN>
struct Tile {
  static constexpr int kSmem = kStages * (BM + BN) * kBK;
  static constexpr int kChannels = BN;
  static int blocks(const IgemmConv& cv) {
    return ((cv.rows + BM - 1) / BM) * ((cv.m + BN - 1) / BN);
  }
  template <bool kVecA>
  static auto kernel() {
    return igemm_kernel<BM, BN, WM, WN, kVecA>;
  }
  static void allow_smem() {
    MINFER_CUDA_CHECK(cudaFuncSetAttribute(kernel<true>(),
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
    MINFER_CUDA_CHECK(cudaFuncSetAttribute(kernel<false>(),
                                           cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           kSmem + kMaxGatherK * int(sizeof(int2))));
  }
  static void launch(const int8_t* x, const int8_t* w, const IgemmConv& cv, const QStage& st,
                     const int8_t* z, void* y, int splits, int32_t* split_acc,
                     cudaStream_t stream) {
    const dim3 grid((cv.rows + BM - 1) / BM, (cv.m + BN - 1) / BN, splits);
    const bool vec = cv.c % 16 == 0;
    auto k = vec ? kernel<true>() : kernel<false>();
    const int smem = kSmem + (vec ? 0 : cv.ld * int(sizeof(int2)));
    k<<<grid, WM * WN * 32, smem, stream>>>(x, w, cv, st, z, y, split_acc);
    MINFER_CUDA_CHECK(cudaGetLastError());
  }
};

using TileL = Tile<128, 128, 2, 4>;   // 8 warps of 64 x 32
using TileLN = Tile<128, 64, 2, 2>;   // 4 warps of 64 x 32
using TileS = Tile<64, 64, 2, 2>;     // 4 warps of 32 x 32
using TileXS = Tile<32, 64, 1, 2>;    // 2 warps of 32 x 32

// Calls f with the Tile type of `tile`.
template <typename F>
void with_tile(IgemmTile tile, F&& f) {
  switch (tile) {
    case IgemmTile::L128x128: f(TileL{}); break;
    case IgemmTile::L128x64: f(TileLN{}); break;
    case IgemmTile::S64x64: f(TileS{}); break;
    case IgemmTile::XS32x64: f(TileXS{}); break;
  }
}

}  // namespace

bool igemm_accepts(int c, int k) {
  return c % 16 == 0 || (k + kBK - 1) / kBK * kBK <= kMaxGatherK;
}

IgemmPlan igemm_plan(const IgemmConv& cv, int sm_count) {
  // The largest tile that still gives every multiprocessor a block: large tiles reuse each
  // loaded byte more, small ones keep a small problem (batch 1) from idling the chip. A
  // 128-channel tile is skipped for 64 channels or fewer, where half of it would be padding.
  for (IgemmTile tile :
       {IgemmTile::L128x128, IgemmTile::L128x64, IgemmTile::S64x64, IgemmTile::XS32x64}) {
    int blocks = 0, channels = 0;
    with_tile(tile, [&](auto t) { blocks = t.blocks(cv), channels = t.kChannels; });
    if (channels == 128 && cv.m <= 64) continue;
    if (blocks >= sm_count) return {tile, 1};
  }
  // Still too few blocks: split K over more blocks, at least two k tiles each, and sum their
  // int32 partials (exact in any order) before the output stage.
  const int blocks = TileXS::blocks(cv), ktiles = cv.ld / kBK;
  const int splits = std::max(1, std::min(sm_count / std::max(blocks, 1), ktiles / 2));
  return {IgemmTile::XS32x64, splits};
}

size_t igemm_workspace_bytes(const IgemmConv& cv, const IgemmPlan& plan) {
  return plan.splits > 1 ? size_t(cv.rows) * size_t(cv.m) * sizeof(int32_t) : 0;
}

const char* igemm_tile_name(IgemmTile tile) {
  switch (tile) {
    case IgemmTile::L128x128: return "128x128";
    case IgemmTile::L128x64: return "128x64";
    case IgemmTile::S64x64: return "64x64";
    case IgemmTile::XS32x64: return "32x64";
  }
  return "?";
}

void igemm_prepare(IgemmTile tile) {
  with_tile(tile, [](auto t) { t.allow_smem(); });
}

void qconv_igemm(const int8_t* x, const int8_t* w, const IgemmConv& cv, const QStage& st,
                 const int8_t* z, void* y, const IgemmPlan& plan, void* workspace,
                 cudaStream_t stream) {
  if (cv.rows == 0 || cv.m == 0) return;
  int32_t* split_acc = plan.splits > 1 ? static_cast<int32_t*>(workspace) : nullptr;
  if (split_acc)
    MINFER_CUDA_CHECK(cudaMemsetAsync(split_acc, 0, igemm_workspace_bytes(cv, plan), stream));
  with_tile(plan.tile, [&](auto t) {
    t.launch(x, w, cv, st, z, y, plan.splits, split_acc, stream);
  });
  if (split_acc) qconv_epilogue(split_acc, cv.m, cv.rows, cv.m, st, z, y, stream);
}

}  // namespace minfer::cuda
