#include "backends/cpu/packed_rhs_gemm.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "backends/cpu/parallel.h"

namespace minfer::cpu {

namespace {

constexpr int64_t kMr = 6;    // the rows of a tile (f32::MicroKernels::mr on every level)
constexpr int64_t kNr = 16;   // the columns of a panel: a tile covers 1 (AVX2) or 2 (AVX-512)
constexpr int64_t kKc = 256;  // depth block: a B panel of 16 KB, 6 rows of A 6 KB (L1)
// Panels per column slice: the slice's rows of C (197 x 128 floats for ViT, 100 KB) stay in L2
// while every depth block adds to them, and its B block (128 KB) is read from L2 by each row
// tile. Looping depth blocks over all of N instead streamed C through L3 per block: 12-17%
// slower on ViT's [197,768] x [768,3072] and x [768,2304] (Zen 3, 1 and 2 threads).
constexpr int64_t kSlicePanels = 8;
// Products of at most this many rows cut them into near-equal tiles (multiply_panels).
constexpr int64_t kNearEqualRows = 64;
// The fewest rows of C per thread for which the threads split the rows, not the columns.
constexpr int64_t kMinPartRows = 96;

// Where panel p's rows [k0, k0 + kKc) start: by depth block, then panel, so that the panels a
// slice reads for one depth block lie together (one stream for the prefetcher, no two panels
// 48 KB apart on the same L1 sets).
int64_t panel_offset(int64_t p, int64_t k0, int64_t k, int64_t n) {
  const int64_t panels = (n + kNr - 1) / kNr;
  return (k0 * panels + p * std::min(kKc, k - k0)) * kNr;
}

// B [k, n] (row stride ldb; or B^T [n, k] when transposed) into panels of 16 columns, zero
// past n, each depth block of a panel kc rows of 16 floats at panel_offset.
void pack_panels(const float* b, int64_t k, int64_t n, int64_t ldb, bool transposed, float* out) {
  for (int64_t p = 0; p * kNr < n; ++p) {
    const int64_t j0 = p * kNr, cols = std::min(kNr, n - j0);
    for (int64_t k0 = 0; k0 < k; k0 += kKc) {
      float* dst = out + panel_offset(p, k0, k, n);
      for (int64_t kk = k0; kk < std::min(k, k0 + kKc); ++kk, dst += kNr) {
        for (int64_t j = 0; j < cols; ++j)
          dst[j] = transposed ? b[(j0 + j) * ldb + kk] : b[kk * ldb + j0 + j];
        std::fill(dst + cols, dst + kNr, 0.f);
      }
    }
  }
}

// Whether m rows of A, lda floats apart, fall on different enough sets of the L1 cache for the
// tall tile, which reads them side by side: lines of at most 2 rows on a set. (x86 L1s have 64
// sets of 64-byte lines. [16, 1024] x [1024, 1000], all 16 rows on one set: 2.2x slower in
// tall tiles than in 6-row ones; [16, 512], 8 on a set: 10 % slower; on a Zen 4.)
bool rows_apart_in_l1(int64_t m, int64_t lda) {
  int on_set[64] = {};
  for (int64_t i = 0, last = -1; i < m; ++i) {
    const int64_t line = i * lda * int64_t(sizeof(float)) / 64;
    if (line != last && ++on_set[line % 64] > 2) return false;  // rows sharing a line: once
    last = line;
  }
  return true;
}

// C's columns of panels [p0, p1) = A * those panels of packed B, on the calling thread. Depth
// blocks inside, so that these columns of C stay in L2 while every block adds to them.
void multiply_panels(const f32::MicroKernels& tiles, const float* a, int64_t m, int64_t lda,
                     const float* bp, int64_t k, int64_t n, int64_t p0, int64_t p1, float* c,
                     int64_t ldc, const float* bias, const Activation* act) {
  const int64_t j0 = p0 * kNr, j1 = std::min(n, p1 * kNr);
  const bool activate = act && act->enabled;
  // A clamp (Relu, Clip) in the tiles' registers on the last depth block; others after it.
  const float clamp[2] = {act ? act->lo : 0.f, act ? act->hi : 0.f};
  const bool in_tiles = activate && act->kind == Activation::Kind::Clamp;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = j0; j < j1; ++j) c[i * ldc + j] = bias ? bias[j] : 0.f;
      if (activate) act->apply(c + i * ldc + j0, j1 - j0);
    }
    return;
  }
  // 7-16 rows: all of them in one tall tile per panel, which reads B once.
  const bool tall = tiles.rhs_tall && m > kMr && m <= f32::kTallRows && rows_apart_in_l1(m, lda);
  // Up to kNearEqualRows rows (a small plane's positions): near-equal tiles of up to
  // tiles.rhs_rows. A 7x7 plane's 49 rows as 7 x 7, not 8 x 6 + 1: the tile of one row waited
  // on its two FMA chains, and every tile reads B once ([49, 512] x [512, 2048] 7 % faster
  // with B in L3, 4 % from memory; Zen 5).
  const int64_t row_tiles = tall                   ? 1
                            : m <= kNearEqualRows ? ceil_div(m, int64_t{tiles.rhs_rows})
                                                   : ceil_div(m, kMr);
  auto row_begin = [&](int64_t t) {
    return tall || m <= kNearEqualRows ? m * t / row_tiles : std::min(m, t * kMr);
  };
  const int64_t per_tile = tall ? 1 : tiles.nr / kNr;  // panels per tile
  const int64_t panels = (n + kNr - 1) / kNr;
  const int64_t shares = row_tiles * ((p1 - p0 + per_tile - 1) / per_tile);  // tile calls
  for (int64_t k0 = 0; k0 < k; k0 += kKc) {
    const int64_t kc = std::min(kKc, k - k0);
    const bool last = k0 + kc == k;
    // The B the tiles read next (this slice's next depth block, or the next slice's first),
    // asked into L2 a share per tile call: the first row tile reads B from memory faster than
    // one core's share of it arrives, the others read it from L2, so without this the product
    // waited on memory for a ninth of the time (a 7x7 plane's 49 rows). ResNet-50's 7x7 convs
    // on these tiles 4-6 % faster at 1 thread, 2-5 % at 2 (Zen 4).
    const float* next_b = nullptr;
    int64_t next_floats = 0;
    if (row_tiles > 1 && !last) {
      next_b = bp + panel_offset(p0, k0 + kc, k, n);
      next_floats = (p1 - p0) * std::min(kKc, k - k0 - kc) * kNr;
    } else if (row_tiles > 1 && p1 < panels) {
      next_b = bp + panel_offset(p1, 0, k, n);
      next_floats = (std::min(panels, 2 * p1 - p0) - p1) * std::min(kKc, k) * kNr;
    }
    for (int64_t t = 0; t < row_tiles; ++t) {
      const int64_t r0 = row_begin(t), rows = row_begin(t + 1) - r0;
      for (int64_t p = p0; p < p1; p += per_tile) {
        const int64_t share = t * (shares / row_tiles) + (p - p0) / per_tile;
        for (int64_t f = next_floats * share / shares / 16 * 16;
             f < next_floats * (share + 1) / shares; f += 16)
          __builtin_prefetch(next_b + f, 0, 2);  // a cache line each
        const int64_t pj = p * kNr, cols = std::min({per_tile * kNr, (p1 - p) * kNr, n - pj});
        const float* tile_a = a + r0 * lda + k0;
        const float* tile_b = bp + panel_offset(p, k0, k, n);
        float* tile_c = c + r0 * ldc + pj;
        const float* tile_bias = bias && last ? bias + pj : nullptr;  // bias and clamp: last
        const float* tile_clamp = in_tiles && last ? clamp : nullptr;  // block
        if (tall) {
          tiles.rhs_tall(kc, tile_a, lda, tile_b, tile_c, ldc, rows, cols, k0 == 0, tile_bias,
                         tile_clamp);
          continue;
        }
        // The next panel of this depth block when the tile covers two (else 0: the same panel
        // again on zmm, its columns not stored).
        const int64_t next_panel = cols > kNr ? kc * kNr : 0;
        tiles.rhs_tile(kc, tile_a, lda, tile_b, next_panel, tile_c, ldc, rows, cols, k0 == 0,
                       tile_bias, tile_clamp, r0 == 0);
      }
      if (activate && !in_tiles && last)  // these rows of the slice are final and in L1
        for (int64_t i = r0; i < r0 + rows; ++i) act->apply(c + i * ldc + j0, j1 - j0);
    }
  }
}

}  // namespace


PackedRhs::PackedRhs(const float* b, int64_t k, int64_t n, int64_t ldb, bool transposed,
                     const f32::MicroKernels& tiles)
    : k_(k), n_(n), panels_((n + kNr - 1) / kNr), tiles_(&tiles) {
  data_ = AlignedArray<float>::uninitialized(std::max<size_t>(packed_floats(k, n), 16));
  pack_panels(b, k, n, ldb, transposed, data_.data());
}

size_t PackedRhs::packed_floats(int64_t k, int64_t n) {
  return size_t(k) * size_t((n + kNr - 1) / kNr * kNr);
}

void PackedRhs::pack(const float* b, int64_t k, int64_t n, int64_t ldb, float* out) {
  pack_panels(b, k, n, ldb, false, out);
}

void PackedRhs::multiply_packed(const f32::MicroKernels& tiles, const float* a, int64_t m,
                                int64_t lda, const float* bp, int64_t k, int64_t n, float* c,
                                int64_t ldc) {
  const int64_t panels = (n + kNr - 1) / kNr;
  for (int64_t s0 = 0; s0 < panels; s0 += kSlicePanels)
    multiply_panels(tiles, a, m, lda, bp, k, n, s0, std::min(panels, s0 + kSlicePanels), c, ldc,
                    nullptr, nullptr);
}

void PackedRhs::multiply_columns(const float* a, int64_t m, int64_t lda, float* c, int64_t ldc,
                                 int64_t j0, int64_t j1) const {
  const int64_t p1 = std::min(panels_, (j1 + kNr - 1) / kNr);
  for (int64_t s0 = j0 / kNr; s0 < p1; s0 += kSlicePanels)
    multiply_panels(*tiles_, a, m, lda, data_.data(), k_, n_, s0, std::min(p1, s0 + kSlicePanels),
                    c, ldc, nullptr, nullptr);
}

void PackedRhs::multiply(const float* a, int64_t m, int64_t lda, float* c, int64_t ldc, int threads,
                         const float* bias, const Activation* act) const {
  if (m <= 0 || n_ <= 0) return;
  const int used = threads_for(2 * m * n_ * k_, threads, int64_t{1} << 20);
  auto run_columns = [&](int64_t r0, int64_t r1, int64_t p0, int64_t p1) {
    for (int64_t s0 = p0; s0 < p1; s0 += kSlicePanels)
      multiply_panels(*tiles_, a + r0 * lda, r1 - r0, lda, data_.data(), k_, n_, s0,
                      std::min(p1, s0 + kSlicePanels), c + r0 * ldc, ldc, bias, act);
  };
  // With enough rows for each thread, the threads split C's rows (each then reads only its
  // rows of A): ViT-B/16 at 2 threads ran 2-10 % faster this way on a Zen 3 and on a Xeon
  // than with every thread reading all of A for its slices of the columns. (Parts of fewer
  // rows lost: [128, 768] x [768, 3072] 3-7 % slower on the Zen 3.)
  if (used > 1 && m / used >= kMinPartRows) {
    parallel_region(used, [&](int part, int parts) {
      run_columns(aligned_split_begin(m, parts, part, kMr),
                  aligned_split_begin(m, parts, part + 1, kMr), 0, panels_);
    });
    return;
  }
  // Otherwise the work units are slices of B's panels (all rows of C there), claimed by the
  // threads as they come: a thread the OS starts late takes fewer. At least 2 slices per
  // thread, where N allows; whole tiles per slice (2 panels on AVX-512), so that no tile is
  // cut in half; and a number of slices that the threads share evenly where one exists (3
  // slices of 2 tiles for 2 threads left one thread idle a third of the time: EfficientNet's
  // 7x7 projections, 1152 -> 192 channels, took 1.55x less time on 2 threads than on 1, and
  // ORT's 1.95x less).
  const int64_t per_tile = tiles_->nr / kNr;
  const int64_t tiles = (panels_ + per_tile - 1) / per_tile;
  int64_t tiles_per_slice = std::clamp<int64_t>(tiles / (2 * used), 1, kSlicePanels / per_tile);
  while (tiles_per_slice > 1 && (tiles + tiles_per_slice - 1) / tiles_per_slice % used != 0)
    --tiles_per_slice;
  const int64_t width = tiles_per_slice * per_tile;
  const int64_t slices = (panels_ + width - 1) / width;
  parallel_for(used, slices, [&](int64_t slice) {
    const int64_t s0 = slice * width;
    run_columns(0, m, s0, std::min(panels_, s0 + width));
  });
}

std::shared_ptr<const PackedRhs> share_packed_rhs(PrepareContext& ctx, const std::string& key,
                                                  const Tensor& b, int64_t k, int64_t n,
                                                  bool transposed) {
  const size_t bytes = PackedRhs::packed_floats(k, n) * sizeof(float);
  const f32::MicroKernels& tiles = fp32_micro_kernels();
  return ctx.share<PackedRhs>(key + "." + isa_name(tiles.isa), bytes, [&] {
    return std::make_shared<PackedRhs>(b.data<float>(), k, n, transposed ? k : n, transposed,
                                       tiles);
  });
}

}  // namespace minfer::cpu
