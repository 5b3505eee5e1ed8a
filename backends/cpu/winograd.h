// Winograd F(4x4, 3x3) for fp32 NCHW 3x3 stride-1 convolutions (Lavin & Gray, 2015): a 4x4
// output tile costs 36 multiplications per (input, output) channel pair instead of 144, so
// the GEMMs do 4x fewer flops than im2col's (fewer gained where the plane is not a multiple of
// 4: a 14x14 output computes 16x16), at the cost of the input and output transforms.
//
//   U = G g G^T  (weights, once per session)   V = B^T d B  (6x6 input tiles)
//   Y = A^T [U . V] A                            (the "." is 36 GEMMs M x tiles x C)
//
// with the interpolation points 0, +-1, +-2 and infinity. The weights are transformed once at
// prepare in double precision and packed as 36 PackedWeights [M, C]; a run transforms a
// block of tiles of the input into 36 matrices [C, tiles], multiplies them, and transforms the
// 36 products back, adding the bias and the residual and clamping in the same pass. Both
// transforms run per ISA level on runs of tiles side by side along a tile row, one tile to a
// lane (backends/cpu/isa/winograd_rows.cpp); without a level, in scalar code.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/cpu/conv_gemm.h"
#include "backends/cpu/epilogue.h"
#include "backends/cpu/isa/isa_kernels.h"
#include "backends/cpu/packed_gemm.h"
#include "minfer/kernel.h"

namespace minfer::cpu {

// Below these, Winograd does not pay or costs too much memory. The transformed weights take
// 36/9 = 4x the weights' memory, and the last stage of ResNets (7x7 outputs: 4 tiles of which
// 15/16 of the second row and column are padding) holds most of a network's 3x3 weights
// while gaining little: the output plane must be at least kWinogradMinPlane on each side.
// (12x12 and 13x13 pay, 3 or 4 tiles a side: SqueezeNet 1.1's and AlexNet's last convs, a
// ResNet's third stage at 192-208 inputs; at 1 thread of a Zen 5 SqueezeNet 1.1 3.74 -> 3.26
// ms, AlexNet 15.2 -> 12.6, ResNet-18 at 208x208 11.7 -> 10.0, ResNet-50 at 192x192 25.3 ->
// 23.4; at MINFER_ISA=avx2 ResNet-18 at 208x208 19.1 -> 16.0.)
// The transforms cost per tile in proportion to C + M and the GEMMs to C * M, where im2col's
// product does 4x the multiplications: from 8 input channels Winograd is the faster, whatever
// the output channels (1 thread of a Zen 5, AVX-512 and MINFER_ISA=avx2: 8 -> 8-64 channels
// 1.4-1.8x faster than im2col, 16 -> 16-64 2-3.4x (SqueezeNet's 16 -> 64 on 55x55 0.32 ->
// 0.18 ms), 64 -> 1 or 4 2-3.3x); from 4 only with few output channels (4 -> 64 on 224x224
// 1.22x slower), from 2 or 3 never (3 -> 64 on 224x224 1.57x slower).
constexpr int64_t kWinogradMinPlane = 12;
constexpr int64_t kWinogradMinInputChannels = 8;

// False when the environment sets MINFER_CPU_WINOGRAD=0 (A/B benchmarks, a fallback).
bool winograd_enabled();

// A 3x3, stride-1, undilated, ungrouped 2-D convolution; sizes in elements.
struct WinogradShape {
  int64_t n, c, h, w;  // input
  int64_t m, oh, ow;   // output
  int64_t pad_t, pad_l;
};

// Whether the convolution is large enough for Winograd (see the constants above).
bool winograd_pays(const WinogradShape& s);

class WinogradConv {
 public:
  // Transforms and packs the weights [M, C, 3, 3] (shared through ctx with the session's other
  // plans) and returns the workspace floats that one thread needs (a multiple of 16).
  int64_t prepare(PrepareContext& ctx, const WinogradShape& s, const float* weights);
  // y = act(conv(x) + b + z); b and z may be null. workspace: threads x prepare()'s floats.
  // The ISA level of its kernels: the transforms', which the products' tiles share when they
  // run on ConvGemm's (else on Eigen's GEMM); null without a level (scalar transforms).
  const char* isa() const { return runs_ ? isa_name(runs_->isa) : nullptr; }
  void run(const float* x, const float* b, const float* z, float* y, const Activation& act,
           float* workspace, int threads) const;

 private:
  // The input transform of tiles [t0, t0 + cols) (numbered over the batch) into v: 36
  // matrices [C, ld_], row-major; their rows [c0, c1) only, when given.
  void transform_input(const float* x, int64_t t0, int64_t cols, float* v, int64_t c0 = 0,
                       int64_t c1 = -1) const;
  // The output transform of rows [m0, m1) of the 36 products mo ([M, ld_] each) for the same
  // tiles, with the epilogue, written to y.
  void transform_output(const float* mo, int64_t t0, int64_t cols, int64_t m0, int64_t m1,
                        const float* b, const float* z, float* y, const Activation& act) const;
  // Its loop over channels and tiles; store(o, rows, width, y, z) writes one tile's outputs
  // (o: the tile's 4x4 values plus bias, kLanes floats apart).
  template <typename Store>
  void output_tiles(const float* mo, int64_t t0, int64_t cols, int64_t m0, int64_t m1,
                    const float* b, float* y, const float* z, Store& store) const;

  // Calls f(g, n, parts, image, tile_row, tile_column) for the runs that make up tiles
  // [t0, t0 + cols): n tiles side by side in each of `parts` consecutive tile rows, at most the
  // kernels' lanes in all (whole tile rows where several fit: a 14x14 output's rows are 4 tiles,
  // 4 rows to a zmm); g: the run's first column.
  template <typename F>
  void for_each_run(int64_t t0, int64_t cols, F&& f) const {
    const int64_t lanes = runs_->lanes, tiles_h = tiles_ / tiles_w_;
    for (int64_t g = 0; g < cols;) {
      const int64_t t = t0 + g, r = t % tiles_, tr = r / tiles_w_, tc = r % tiles_w_;
      const int64_t n = std::min({lanes, tiles_w_ - tc, cols - g});
      const int64_t parts =
          n == tiles_w_ ? std::min({lanes / tiles_w_, (cols - g) / tiles_w_, tiles_h - tr}) : 1;
      f(g, int(n), int(parts), t / tiles_, tr, tc);
      g += n * parts;
    }
  }

  WinogradShape s_{};
  // The transforms of the ISA level prepared for, in runs of tiles along a tile row; null
  // where no level's kernels run (scalar transforms).
  const f32::WinogradKernels* runs_ = nullptr;
  int64_t tiles_w_ = 0, tiles_ = 0;  // tiles per row of the output plane, per image
  int64_t block_ = 0;                // tiles per GEMM block (the packing's max columns)
  int64_t ld_ = 0;                   // row stride of the transformed blocks (block_, by 8)
  // The distance between two of the 36 transformed matrices (V [C, ld_], products [M, ld_]): an
  // odd number of cache lines, so that the 36 values of a tile, which the transforms
  // write and read side by side, do not fall on one L1 set (C * ld_ is often a multiple of 4 KB).
  int64_t v_point_ = 0, m_point_ = 0;
  int64_t v_floats_ = 0, m_floats_ = 0, slice_floats_ = 0;  // per-thread workspace
  // The 36 matrices U [M, C], packed for Eigen's GEMM, or for ConvGemm where its tiles are
  // wider than Eigen's AVX2 (ConvGemm::pays): one of the two is non-empty.
  std::shared_ptr<const std::vector<PackedWeights>> u_;
  std::shared_ptr<const std::vector<ConvGemm>> u_direct_;
};

}  // namespace minfer::cpu
