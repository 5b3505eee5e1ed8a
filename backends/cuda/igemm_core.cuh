// The implicit-GEMM convolution core shared by the int8 and fp16 kernels (int8_igemm.cu,
// half_igemm.cu): NHWC input read on the fly, packed weights, a cp.async pipeline into
// swizzled shared memory, ldmatrix and mma.sync on the tensor cores. It works in bytes: a
// 64-byte k tile is 64 int8 or 32 fp16 values, and the fragments of mma m16n8k32 (s8) and
// m16n8k16 (f16) hold the same bytes of A and B, so only the mma instruction and the
// epilogue differ. The epilogue is a policy type:
//
//   struct Epi {
//     using Acc = int32_t or float;                          // accumulator element
//     static void mma(Acc (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);
//     template <BM, BN, WM, WN, MT, NT>
//     void finish(Acc (&acc)[MT][NT][4], char* smem, const IgemmConv& cv, Frag f) const;
//     static constexpr int epilogue_smem(int bm, int bn);  // bytes finish() may use
//   };
//
// acc[p, m] = sum over k of A[p, k] * W[m, k], where A[p, k] is the NHWC input at output
// pixel p and byte k = (ky * kw + kx) * C + c (C in bytes); padding and k >= K read
// cv.x_zero_point in every byte (0 for fp16), which W's zero columns make add nothing.
#pragma once

#include "backends/cuda/device_util.cuh"
#include "backends/cuda/launch.h"

#include <algorithm>

namespace minfer::cuda::igemm {

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
// A 4- or 8-byte copy (one pixel of 4 int8 or 4 fp16 channels); src must be so aligned.
template <int kBytes>
__device__ __forceinline__ void cp_async_small(uint32_t dst, const void* src) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst), "l"(src), "n"(kBytes));
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

// Where a thread's accumulators lie: warp (warp_m, warp_n) of the block's tile at (m0, n0);
// acc[i][j] = rows m0 + warp_m * TM + i * 16 + g (+ 8), channels n0 + warp_n * TN + j * 8 +
// 2t (+ 1), with g = lane / 4, t = lane % 4.
struct Frag {
  int m0, n0, warp_m, warp_n, g, t, split;
};

// How a 16-byte chunk of a row of A is loaded:
//   kVec16: C is a multiple of 16 bytes, so the chunk is 16 consecutive bytes of one pixel
//           (one cp.async);
//   kPixel: pixels of 4 or 8 bytes (a stem padded to 4 channels) with kw * C a multiple of 16,
//           so the chunk is 16 / C whole pixels of one window row (one small cp.async each);
//   kGather: anything else, byte by byte through a table of tap offsets.
enum ALoad { kVec16, kPixel, kGather };

inline ALoad a_load_for(const IgemmConv& cv) {
  if (cv.c % 16 == 0) return kVec16;
  if ((cv.c == 4 || cv.c == 8) && cv.win.kw * cv.c % 16 == 0) return kPixel;
  return kGather;
}

// BM x BN tile of the output per block, WM x WN warps of (BM / WM) x (BN / WN) each.
template <int BM, int BN, int WM, int WN, ALoad kLoad, typename Epi>
__global__ void __launch_bounds__(WM* WN * 32)
    kernel(const char* __restrict__ x, const char* __restrict__ w, IgemmConv cv, Epi epi) {
  using Acc = typename Epi::Acc;
  constexpr int kThreads = WM * WN * 32;
  constexpr int TM = BM / WM, TN = BN / WN, MT = TM / 16, NT = TN / 8;
  constexpr int A_ITERS = BM * 4 / kThreads, B_ITERS = BN * 4 / kThreads;
  static_assert(A_ITERS >= 1 && B_ITERS >= 1 && NT % 2 == 0, "tile shape");
  extern __shared__ __align__(128) char smem[];
  char* sa = smem;                           // [kStages][BM][kBK]
  char* sb = smem + kStages * BM * kBK;      // [kStages][BN][kBK]
  // kGather: per k < ld, where A's byte k lies relative to the window's top-left input byte.
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

  if constexpr (kLoad == kGather) {
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
      if constexpr (kLoad == kVec16) {
        const int iy = a_iy[i] + ky * win.dh, ix = a_ix[i] + kx * win.dw;
        if (a_img[i] >= 0 && k < cv.k && iy >= 0 && iy < win.h && ix >= 0 && ix < win.w)
          cp_async16(smem_addr(dst), x + a_img[i] + (iy * win.w + ix) * cv.c + ch, true);
        else
          *reinterpret_cast<uint4*>(dst) = make_uint4(zx4, zx4, zx4, zx4);
      } else if constexpr (kLoad == kPixel) {
        // ch is 0 here: chunks start on pixel boundaries of one window row.
        const int iy = a_iy[i] + ky * win.dh;
        const bool row_in = a_img[i] >= 0 && k < cv.k && iy >= 0 && iy < win.h;
        const char* src_row = x + a_img[i] + iy * win.w * cv.c;
        if (cv.c == 4) {
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            const int ix = a_ix[i] + (kx + j) * win.dw;
            if (row_in && ix >= 0 && ix < win.w)
              cp_async_small<4>(smem_addr(dst + 4 * j), src_row + ix * 4);
            else
              *reinterpret_cast<uint32_t*>(dst + 4 * j) = zx4;
          }
        } else {
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            const int ix = a_ix[i] + (kx + j) * win.dw;
            if (row_in && ix >= 0 && ix < win.w)
              cp_async_small<8>(smem_addr(dst + 8 * j), src_row + ix * 8);
            else
              *reinterpret_cast<uint2*>(dst + 8 * j) = make_uint2(zx4, zx4);
          }
        }
      } else {
        // Straight-line predicated loads from the gather table: all 16 are in flight before
        // any is used.
        uint8_t bytes[16];
        const char* corner = x + a_img[i] + (a_iy[i] * win.w + a_ix[i]) * cv.c;
#pragma unroll
        for (int j = 0; j < 16; ++j) {
          const int2 e = gather[k + j];
          const int iy = a_iy[i] + (e.y >> 16), ix = a_ix[i] + (e.y & 0xffff);
          const bool inside = a_img[i] >= 0 && unsigned(iy) < unsigned(win.h) &&
                              unsigned(ix) < unsigned(win.w);
          bytes[j] = inside ? static_cast<uint8_t>(__ldg(corner + e.x))
                            : static_cast<uint8_t>(cv.x_zero_point);
        }
        uint32_t v[4];
#pragma unroll
        for (int q = 0; q < 4; ++q)
          v[q] = uint32_t(bytes[4 * q]) | uint32_t(bytes[4 * q + 1]) << 8 |
                 uint32_t(bytes[4 * q + 2]) << 16 | uint32_t(bytes[4 * q + 3]) << 24;
        *reinterpret_cast<uint4*>(dst) = make_uint4(v[0], v[1], v[2], v[3]);
      }
    }
#pragma unroll
    for (int i = 0; i < B_ITERS; ++i) {
      const int row = (tid >> 2) + i * (kThreads / 4);
      const bool ok = n0 + row < cv.m;
      const char* src = ok ? w + static_cast<int64_t>(n0 + row) * cv.ld + k : w;
      cp_async16(smem_addr(sb + stage * BN * kBK + swizzle(row, chunk)), src, ok);
    }
    k += kBK;
    for (ch += kBK; ch >= cv.c; ch -= cv.c)
      if (++kx == win.kw) kx = 0, ++ky;
  };

  Acc acc[MT][NT][4];
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0;

  // Split K: block z takes k tiles [kt0, kt1); the epilogue sums the partials.
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
    if (kt + kStages - 1 < ktiles) load_tile((kt + kStages - 1) % kStages);
    cp_async_commit();
    const char* ta = sa + (kt % kStages) * BM * kBK;
    const char* tb = sb + (kt % kStages) * BN * kBK;
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {  // two 32-byte mma steps per 64-byte row
      uint32_t af[MT][4], bf[NT][2];
#pragma unroll
      for (int i = 0; i < MT; ++i) {
        // Lanes 0-15: rows 0-15 at bytes 0-15 of the step; lanes 16-31: the same rows at 16-31.
        const int row = warp_m * TM + i * 16 + (lane & 15);
        ldmatrix_x4(af[i], smem_addr(ta + swizzle(row, ks * 2 + (lane >> 4))));
      }
#pragma unroll
      for (int j = 0; j < NT; j += 2) {
        // Matrices: (n-tile j, bytes 0-15), (j, 16-31), (j + 1, 0-15), (j + 1, 16-31).
        const int row = warp_n * TN + j * 8 + ((lane >> 4) << 3) + (lane & 7);
        uint32_t r[4];
        ldmatrix_x4(r, smem_addr(tb + swizzle(row, ks * 2 + ((lane >> 3) & 1))));
        bf[j][0] = r[0], bf[j][1] = r[1], bf[j + 1][0] = r[2], bf[j + 1][1] = r[3];
      }
#pragma unroll
      for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) Epi::mma(acc[i][j], af[i], bf[j][0], bf[j][1]);
    }
  }
  cp_async_wait<0>();
  epi.template finish<BM, BN, WM, WN>(acc, smem, cv,
                                      Frag{m0, n0, warp_m, warp_n, lane >> 2, lane & 3,
                                           int(blockIdx.z)});
}

template <int BM, int BN, int WM, int WN>
struct Tile {
  static constexpr int kSmem = kStages * (BM + BN) * kBK;
  static constexpr int kChannels = BN;
  static int blocks(const IgemmConv& cv) {
    return ((cv.rows + BM - 1) / BM) * ((cv.m + BN - 1) / BN);
  }
  template <ALoad kLoad, typename Epi>
  static auto kernel_for() {
    return kernel<BM, BN, WM, WN, kLoad, Epi>;
  }
  // Shared memory of a launch: the pipeline (and the gather table after it), or what the
  // epilogue reuses it for, whichever is larger.
  template <typename Epi>
  static int smem_bytes(int gather_bytes) {
    return std::max(kSmem + gather_bytes, Epi::epilogue_smem(BM, BN));
  }
  template <typename Epi>
  static void allow_smem() {
    for (auto k : {kernel_for<kVec16, Epi>(), kernel_for<kPixel, Epi>()})
      MINFER_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             smem_bytes<Epi>(0)));
    MINFER_CUDA_CHECK(cudaFuncSetAttribute(
        kernel_for<kGather, Epi>(), cudaFuncAttributeMaxDynamicSharedMemorySize,
        smem_bytes<Epi>(kMaxGatherK * int(sizeof(int2)))));
  }
  template <typename Epi>
  static void launch(const void* x, const void* w, const IgemmConv& cv, const Epi& epi,
                     int splits, cudaStream_t stream) {
    const dim3 grid((cv.rows + BM - 1) / BM, (cv.m + BN - 1) / BN, splits);
    const ALoad load = a_load_for(cv);
    auto k = load == kVec16   ? kernel_for<kVec16, Epi>()
             : load == kPixel ? kernel_for<kPixel, Epi>()
                              : kernel_for<kGather, Epi>();
    const int smem = smem_bytes<Epi>(load == kGather ? cv.ld * int(sizeof(int2)) : 0);
    k<<<grid, WM * WN * 32, smem, stream>>>(static_cast<const char*>(x),
                                            static_cast<const char*>(w), cv, epi);
    MINFER_CUDA_CHECK(cudaGetLastError());
  }
};

using TileT = Tile<256, 64, 4, 2>;    // 8 warps of 64 x 32: 64 channels or fewer
using TileL = Tile<128, 128, 2, 4>;   // 8 warps of 64 x 32
using TileLN = Tile<128, 64, 2, 2>;   // 4 warps of 64 x 32
using TileS = Tile<64, 64, 2, 2>;     // 4 warps of 32 x 32
using TileXS = Tile<32, 64, 1, 2>;    // 2 warps of 32 x 32

// Calls f with the Tile type of `tile`.
template <typename F>
void with_tile(IgemmTile tile, F&& f) {
  switch (tile) {
    case IgemmTile::L256x64: f(TileT{}); break;
    case IgemmTile::L128x128: f(TileL{}); break;
    case IgemmTile::L128x64: f(TileLN{}); break;
    case IgemmTile::S64x64: f(TileS{}); break;
    case IgemmTile::XS32x64: f(TileXS{}); break;
  }
}

}  // namespace minfer::cuda::igemm
