// The product of a conv's constant weights with an activation block, the whole epilogue
// applied in registers:
//
//   Y[m, q] = act(W[m, :] . X[:, q] + B[m] + Z[m, q])        (W [M, K]; X [K, cols] row-major)
//
// For K <= 192, X is read where it lies (a 1x1 conv's input planes, or a row-major im2col
// block), so nothing but the weights is packed, and Y is written once; deeper products pack X
// by blocks (packs(), below). The Eigen path (packed_gemm.h) pre-fills Y
// with the bias, accumulates onto it and clamps it afterwards: three passes over an output
// that, for the small depths of MobileNet's expansion layers (K = 16..32, 96..192 channels of
// 112x112 or 56x56), costs more than the arithmetic.
//
// The micro-kernel (backends/cpu/isa/sgemm_micro.cpp, one per ISA level) holds a tile of 6
// rows x 2 vectors of Y (16 columns on AVX2, 32 on AVX-512) in 12 registers; per step of K it
// loads 2 vectors of X and broadcasts 6 weights. W is packed once into panels of 6 rows,
// k-major, the same on every level. Callers check has_any_isa().
#pragma once

#include <cstdint>
#include <memory>

#include "backends/cpu/aligned_array.h"
#include "backends/cpu/epilogue.h"
#include "backends/cpu/fp32_micro.h"

namespace minfer::cpu {

class ConvGemm {
 public:
  ConvGemm() = default;
  // Packs W [m, k] (row-major, row stride k) for the tiles of one ISA level.
  ConvGemm(const float* w, int64_t m, int64_t k,
           const f32::MicroKernels& tiles = fp32_micro_kernels());

  // The rows of W's packed panels and of a tile (f32::MicroKernels::mr on every level): a
  // caller splitting the rows over threads cuts them at multiples of it.
  static constexpr int64_t kPanelRows = 6;

  int64_t rows() const { return m_; }
  int64_t depth() const { return k_; }
  Isa isa() const { return tiles_->isa; }
  size_t packed_bytes() const;

  // Y columns [0, cols), rows [r0, r1) (r0 a multiple of 6; r1 < 0 = all): X [k, cols] (row
  // stride ldx), Y and Z [m, cols] (row stride ldy, pointing at row 0; Z may be null, as may
  // B). When packs(), `scratch` holds scratch_floats() floats.
  void run(const float* x, int64_t ldx, int64_t cols, const float* bias, const float* z, float* y,
           int64_t ldy, const Activation& act, float* scratch = nullptr, int64_t r0 = 0,
           int64_t r1 = -1) const;

  // The same for an implicit GEMM (k <= kMaxDepth, all rows): row s of X at x + x_rows[s],
  // `cols` contiguous floats (an output row of a strided conv, from its input's column phases).
  void run_at(const float* x, const int64_t* x_rows, int64_t cols, const float* bias,
              const float* z, float* y, int64_t ldy, const Activation& act) const;

  // Deep products (k > kMaxDepth) may pack X rather than read it in place (K rows are many
  // streams): by blocks of kPackDepth rows x kPackColumns columns into the tiles' column panels
  // (one block in L2; on zmm one panel in L1 while every row panel of W passes over it, on ymm
  // one row panel of W in L1 while the block's panels pass), accumulating Y block by block,
  // the epilogue with the last block. Whether they do: packs_deep().
  static constexpr int64_t kPackDepth = 256, kPackColumns = 128;
  bool packs() const { return !in_place_; }
  // Each conv alone: on a Xeon (Sapphire Rapids) packing was up to 1.3x faster at K >= 1024
  // (ResNet-50's 1x1 and strided 3x3 convs); on a Zen 4 reading in place was 1-8 % faster at
  // every K from 256 to 2304 (ResNet-18 3-5 % and ResNet-50 1.5-6 % faster, switch_ab). So the
  // deep products pack except on AMD's cores. MINFER_CPU_CONV_GEMM_PACK=1 (or 0) forces
  // packing (or reading in place), for A/B benchmarks.
  static bool packs_deep();
  // Products read in place copy a block of columns whose rows alias (rows_alias), and on zmm
  // tiles a deep one whose rows are not 64-byte aligned (run_rows): K x block_columns()
  // floats, 16 more columns where the last block takes a tail.
  size_t scratch_floats() const {
    return packs() ? size_t(kPackDepth * kPackColumns)
                   : size_t(k_ * (block_columns() + 16));  // (+ a joined tail)
  }
  int64_t tile_columns() const { return tiles_->nr; }

  // Whether rows of X ldx floats apart alias in the caches: a multiple of 4 KB apart (planes
  // of 32x32, 64x64, 96x96, 128x128: a 256x256 or 512x512 input's), every row of a block falls
  // in one L1 set and in 1/64 of the L2's, and the block thrashes both caches it was sized to
  // stay in; run() then copies each block of X first (with scratch). ResNet-50 at 256x256, 1
  // thread of a Zen 5: its 64x64 and 32x32 1x1 convs ran 1.4-1.55x slower per product than
  // at 224x224, 1.02-1.10x with the copies. Rows a multiple of 1 KB apart only (on 4 L1 sets:
  // 16x16, 80x80) measured no gain at 256x256 and 5-11 % slower at 320x320 with the copies.
  static constexpr int64_t kAliasBytes = 4096, kL1Ways = 8;
  bool rows_alias(int64_t ldx) const;

  // Whether this path beats the Eigen one for a product of this depth and width on the tiles
  // of `isa`. Measured on 1x1 convs (Zen 3, 1 thread, AVX2), it won by 3-29% from K = 16 to
  // 192 on planes of 28x28 and more, and lost by up to 24% at K >= 256 or on 14x14 and 7x7
  // planes (where X's K rows are many streams for few columns); packing X for the deep ones
  // still lost by 13-17% on ResNet-50's 1x1 convs. Where the tiles are wider than the AVX2
  // that Eigen is built for (AVX-512), it takes every product. MINFER_CPU_CONV_GEMM=0 turns it
  // off, MINFER_CPU_CONV_GEMM_ALL=1 (or 0) forces (or forbids) the wide rule (A/B benchmarks).
  static constexpr int64_t kMaxDepth = 192, kMinColumns = 784;
  static bool pays(int64_t k, int64_t cols, Isa isa);
  // The wide rule, or on AVX2 a product of depth k >= min_depth: where Eigen's AVX2 kernel
  // gets few columns (Winograd's products on 14x14 planes, the convs of 7x7 planes) ConvGemm's
  // tiles measured faster from a depth that each caller gives.
  static bool pays_deep(int64_t k, int64_t min_depth, Isa isa);
  // And on AMD's cores, 1x1 convs (group 1) that Eigen's AVX2 GEMM gets with few columns per
  // depth: strided ones (an im2col copy on either path) and those of depth kAmd1x1MinDepth or
  // more. At MINFER_ISA=avx2 on a Zen 5, ResNet-50's 56x56 -> 28x28 one of 256 channels 7.6 %
  // faster, its 14x14 ones of 1024 channels 4.5 %; the Xeon had measured the 1x1 convs of small
  // planes 5-15 % slower. MINFER_CPU_CONV_GEMM_1X1=1 (or 0) offers (or forbids) it on any CPU.
  static constexpr int64_t kAmd1x1MinDepth = 1024;
  static bool pays_1x1(int64_t k, int64_t cols, bool strided, Isa isa);

 private:
  // Reading in place, the columns of X go by blocks of block_columns() (a multiple of the tile's
  // width; 32 KB of X up to K = 256, one tile's width beyond) that stay in cache while every
  // row panel passes over them.
  int64_t block_columns() const;
  // On ymm tiles a misaligned row costs less than the copy (a 256 x 1152 product on 196
  // columns 3 % slower with it at MINFER_ISA=avx2, Zen 5).
  bool aligns_blocks() const { return !packs() && k_ > kMaxDepth && tiles_->nr >= 32; }

  // Rows of X ldx apart, or at x_rows[s] (not null).
  void run_rows(const float* x, int64_t ldx, const int64_t* x_rows, int64_t cols,
                const float* bias, const float* z, float* y, int64_t ldy, const Activation& act,
                float* scratch, int64_t r0, int64_t r1) const;
  void run_packed(const float* x, int64_t ldx, int64_t cols, const float* bias, const float* z,
                  float* y, int64_t ldy, const Activation& act, float* scratch, int64_t r0,
                  int64_t r1) const;

  // Weights larger than this come from memory in a model's run (the layers' weights do not
  // stay cached between runs), so the tiles prefetch the next row panel as they go. On the GPU
  // machine's Xeon, with many convs' weights in turn (12-48 copies, 100+ MB), ConvGemm went
  // 83 -> 111-114 GFLOP/s on 7x7 planes (weights of 1.2-9.4 MB) and 118 -> 137 on 14x14 (2.4
  // MB); ResNet-18 and -50 at 1 thread 12-15 % faster. On weights that stay cached (64 KB)
  // prefetching cost 2-6 %. (Zen 3, the same harness: the products above the threshold 1-6 %
  // faster; AVX2 sends few convs with such weights here.)
  static constexpr size_t kPrefetchBytes = size_t{128} << 10;

  int64_t m_ = 0, k_ = 0;
  bool prefetch_ = false;
  bool in_place_ = true;
  const f32::MicroKernels* tiles_ = nullptr;
  // By depth blocks of kPackDepth rows (one when read in place), then panels of 6 rows (zero
  // past m): in block k0 of depth kb, panel r's kb steps of 6 floats are at k0 * m6 + r * 6 * kb
  // (m6 = m rounded up to 6).
  AlignedArray<float> data_;
};

}  // namespace minfer::cpu
