#include "backends/cpu/conv_gemm.h"

#include <algorithm>
#include <limits>
#include <new>
#include <string>

#include "backends/cpu/env_switch.h"
#include "minfer/error.h"

namespace minfer::cpu {

namespace {

constexpr int64_t kMr = ConvGemm::kPanelRows;

}  // namespace

ConvGemm::ConvGemm(const float* w, int64_t m, int64_t k, const f32::MicroKernels& tiles)
    : m_(m), k_(k), tiles_(&tiles) {
  check(tiles.mr == kMr, ErrorCode::Internal, "ConvGemm packs panels of 6 rows");
  const int64_t panels = (m + kMr - 1) / kMr;
  const size_t floats = std::max<size_t>(size_t(panels * kMr * k), 16);
  data_ = AlignedArray<float>::uninitialized(floats);
  prefetch_ = packed_bytes() > kPrefetchBytes;
  in_place_ = k <= kMaxDepth || !packs_deep();
  const int64_t depth = in_place_ ? std::max<int64_t>(k, 1) : kPackDepth;
  // By depth blocks of kPackDepth, then panels (one block when read in place): the panels the
  // packed path reads for one block lie together.
  float* dst = data_.data();
  for (int64_t k0 = 0; k0 < k; k0 += depth)
    for (int64_t r0 = 0; r0 < m; r0 += kMr) {
      const int64_t rows = std::min(kMr, m - r0);
      for (int64_t s = k0; s < std::min(k, k0 + depth); ++s, dst += kMr) {
        for (int64_t i = 0; i < rows; ++i) dst[i] = w[(r0 + i) * k + s];
        std::fill(dst + rows, dst + kMr, 0.f);
      }
    }
}

size_t ConvGemm::packed_bytes() const {
  return size_t((m_ + kMr - 1) / kMr * kMr * k_) * sizeof(float);
}

bool ConvGemm::packs_deep() {
  return env_switch("MINFER_CPU_CONV_GEMM_PACK", !cpu_is_amd());
}

bool ConvGemm::pays(int64_t k, int64_t cols, Isa isa) {
  if (k <= kMaxDepth && cols >= kMinColumns) return env_switch("MINFER_CPU_CONV_GEMM", true);
  return pays_deep(k, std::numeric_limits<int64_t>::max(), isa);
}

bool ConvGemm::pays_1x1(int64_t k, int64_t cols, bool strided, Isa isa) {
  if (pays(k, cols, isa)) return true;
  return env_switch("MINFER_CPU_CONV_GEMM", true) &&
         env_switch("MINFER_CPU_CONV_GEMM_1X1", cpu_is_amd()) &&
         (strided || k >= kAmd1x1MinDepth);
}

bool ConvGemm::pays_deep(int64_t k, int64_t min_depth, Isa isa) {
  if (!env_switch("MINFER_CPU_CONV_GEMM", true)) return false;
  return env_switch("MINFER_CPU_CONV_GEMM_ALL", isa >= Isa::avx512 || k >= min_depth);
}

void ConvGemm::run(const float* x, int64_t ldx, int64_t cols, const float* bias, const float* z,
                   float* y, int64_t ldy, const Activation& act, float* scratch, int64_t r0,
                   int64_t r1) const {
  if (r1 < 0) r1 = m_;
  if (packs()) {
    check(scratch != nullptr, ErrorCode::Internal, "a deep ConvGemm needs its packing scratch");
    run_packed(x, ldx, cols, bias, z, y, ldy, act, scratch, r0, r1);
  } else {
    run_rows(x, ldx, nullptr, cols, bias, z, y, ldy, act, scratch, r0, r1);
  }
}

void ConvGemm::run_at(const float* x, const int64_t* x_rows, int64_t cols, const float* bias,
                      const float* z, float* y, int64_t ldy, const Activation& act) const {
  check(!packs() && !aligns_blocks(), ErrorCode::Internal,
        "ConvGemm::run_at takes products of K <= kMaxDepth");
  run_rows(x, 0, x_rows, cols, bias, z, y, ldy, act, nullptr, 0, m_);
}

int64_t ConvGemm::block_columns() const {
  const int64_t nr = tiles_->nr;
  return std::clamp<int64_t>(8192 / std::max<int64_t>(k_, 1) / nr * nr, nr, 512);
}

bool ConvGemm::rows_alias(int64_t ldx) const {
  return ldx % (kAliasBytes / int64_t(sizeof(float))) == 0 && k_ > kL1Ways;
}

void ConvGemm::run_rows(const float* x, int64_t ldx, const int64_t* x_rows, int64_t cols,
                        const float* bias, const float* z, float* y, int64_t ldy,
                        const Activation& act, float* scratch, int64_t r0, int64_t r1) const {
  const bool clamp = act.enabled && act.is_clamp();
  const bool smooth = act.enabled && !act.is_clamp();
  // Blocks of columns whose K x nc block of X stays in cache while every row panel passes over
  // it; within a panel, the block's tiles write each row of Y as one sequential run. (Packing
  // the block into panels first lost on the layers with few output channels.)
  const int64_t nr = tiles_->nr, nc = block_columns();
  // A deep block (K rows from L2) whose rows are not 64-byte aligned is copied first, its rows
  // aligned: a tile's step then reads 2 cache lines of X, not 3. A 14x14 plane's rows (196
  // floats) made a 256 x 1152 x 192 product 1.19x slower than with rows of 192 or 208 (Zen 5).
  // So is a block whose rows alias in the caches (rows_alias).
  const bool restride =
      scratch && !x_rows && ((aligns_blocks() && ldx % 16 != 0) || rows_alias(ldx));
  for (int64_t c0 = 0, c1 = 0; c0 < cols; c0 = c1) {
    c1 = std::min(cols, c0 + nc);
    // A last block narrow enough for the tiles' tail joins this one: the tail then reads each
    // panel of W from L1 right after the tiles, not all of W again (1 MB at K = 1024).
    if (cols - c1 <= tiles_->tail_columns) c1 = cols;
    const float* xb = x + c0;
    int64_t ldb = ldx;
    if (restride) {
      ldb = (c1 - c0 + 15) / 16 * 16;
      for (int64_t s = 0; s < k_; ++s) std::copy_n(x + s * ldx + c0, c1 - c0, scratch + s * ldb);
      xb = scratch;
    }
    for (int64_t i0 = r0; i0 < r1; i0 += kMr) {
      const f32::ConvTileOut o{bias ? bias + i0 : nullptr, z ? z + i0 * ldy + c0 : nullptr,
                               y + i0 * ldy + c0,          ldy,
                               std::min(kMr, r1 - i0),     c1 - c0};
      tiles_->conv_rows(k_, data_.data() + i0 * k_, xb, ldb, x_rows, nr, o, clamp, act.lo,
                        act.hi, prefetch_);
      // A smooth activation over the panel's rows of the block while they are in L1 (one
      // call per row: per tile, the calls cost as much as the exponentials).
      if (smooth)
        for (int64_t i = i0; i < std::min(r1, i0 + kMr); ++i) act.apply(y + i * ldy + c0, c1 - c0);
    }
  }
}

void ConvGemm::run_packed(const float* x, int64_t ldx, int64_t cols, const float* bias,
                          const float* z, float* y, int64_t ldy, const Activation& act,
                          float* scratch, int64_t r0, int64_t r1) const {
  const bool clamp = act.enabled && act.is_clamp();
  const bool smooth = act.enabled && !act.is_clamp();
  const int64_t nr = tiles_->nr, padded_rows = (m_ + kMr - 1) / kMr * kMr;
  for (int64_t c0 = 0; c0 < cols; c0 += kPackColumns) {
    const int64_t n = std::min(kPackColumns, cols - c0);
    for (int64_t k0 = 0; k0 < k_; k0 += kPackDepth) {
      const int64_t kb = std::min(kPackDepth, k_ - k0);
      const bool first = k0 == 0, last = k0 + kb == k_;
      // X [k0, k0 + kb) x [c0, c0 + n) into panels of nr columns, k-major, zero past n.
      for (int64_t q0 = 0; q0 < n; q0 += nr) {
        const int64_t w = std::min(nr, n - q0);
        float* dst = scratch + q0 * kb;
        const float* src = x + k0 * ldx + c0 + q0;
        for (int64_t kk = 0; kk < kb; ++kk, dst += nr, src += ldx) {
          std::copy_n(src, w, dst);
          std::fill(dst + w, dst + nr, 0.f);
        }
      }
      // The first block starts from bias and residual, the later ones from Y so far; the clamp
      // and the smooth activation come with the last.
      auto tile = [&](int64_t i0, int64_t q0, int64_t width) {
        float* yt = y + i0 * ldy + c0 + q0;
        const f32::ConvTileOut o{first && bias ? bias + i0 : nullptr,
                                 !first ? yt
                                 : z    ? z + i0 * ldy + c0 + q0
                                        : nullptr,
                                 yt,
                                 ldy,
                                 std::min(kMr, r1 - i0),
                                 width};
        tiles_->conv_rows(kb, data_.data() + k0 * padded_rows + i0 * kb, scratch + q0 * kb, nr,
                          nullptr, kb * nr, o, clamp && last, act.lo, act.hi, prefetch_);
        if (smooth && last)
          for (int64_t i = 0; i < std::min(kMr, r1 - i0); ++i) act.apply(yt + i * ldy, width);
      };
      if (nr >= 32) {
        // Two zmm columns: each X panel (kb x 32 floats, 32 KB) stays in L1 while every row
        // panel of W (6 KB) passes over it. The other order streams X from L2 at 2 x 64 bytes
        // per 6 cycles of FMAs, more than L2 feeds: ConvGemm alone was 13-17 % slower that way
        // on the GPU machine's Xeon (AVX-512, AMX) for K = 256..4608 (ResNet-50's deep 1x1,
        // ResNet-18's im2col, MobileNet's 7x7 and 14x14 projections). On ymm it is the other
        // way round (Zen 3: 1-5 % slower panel-outer).
        for (int64_t q0 = 0; q0 < n; q0 += nr)
          for (int64_t i0 = r0; i0 < r1; i0 += kMr) tile(i0, q0, std::min(nr, n - q0));
      } else {
        // One call per row panel for all of the block's panels: W's panel stays in L1, X's
        // block (128 KB) streams from L2.
        for (int64_t i0 = r0; i0 < r1; i0 += kMr) tile(i0, 0, n);
      }
    }
  }
}

}  // namespace minfer::cpu
