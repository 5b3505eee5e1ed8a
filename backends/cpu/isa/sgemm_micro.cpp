// The fp32 GEMM tiles of ConvGemm (conv_gemm.h) and PackedRhs (packed_rhs_gemm.h), one source
// for every ISA level (compiled once per level by cmake/MinferIsa.cmake). A tile is 6 rows x
// 2 vectors (16 columns on ymm, 32 on zmm): 12 accumulators, per step 2 vector loads and 6
// broadcasts, so 12 FMAs in flight cover the FMA latency on either width. On zmm that leaves
// 20 of 32 registers unused; its FMAs do twice the work per instruction, which is the gain.
// There PackedRhs also has a tall tile, up to 16 rows x 1 vector, for products of 7-16 rows.
#include "backends/cpu/isa/isa_kernels.h"
#include "backends/cpu/isa/simd.h"

namespace minfer::cpu::MINFER_ISA_NS {

namespace {

constexpr int kMr = 6, kLanes = kF32Lanes, kNr = 2 * kF32Lanes;
// PackedRhs's tiles take up to 8 rows on 32 registers (16 sums), 6 on 16.
constexpr int kRhsRows = MINFER_ISA_WIDE ? 8 : kMr;
// How far ahead PackedRhs's tiles ask for B where it streams from memory: 4 KB, 64-256 steps
// (2 and 8 KB measured the same).
constexpr int64_t kAheadFloats = 1024;

// ConvGemm's tile: W panel k-major (6 weights per step) times X read in place, kV vectors of
// columns (1 for a tail of at most one vector). kMasked: fewer columns than that, read and
// written through lane masks (never past the row's end). The accumulators are an array indexed
// by constants only (fully unrolled): they live in registers.
// kAt: row s of X at x + at[s] (else at x + s * ldx).
template <int kV, bool kMasked, bool kPrefetch, bool kAt>
__attribute__((always_inline)) inline void conv_tile(int64_t k, const float* wp, const float* x,
                                                     int64_t ldx, const int64_t* at,
                                                     const f32::ConvTileOut& o, bool clamp,
                                                     float lo, float hi) {
  auto row = [&](int64_t s) { return kAt ? x + at[s] : x + s * ldx; };
  const MaskF32 mask[2] = {first_lanes_f32(int(o.cols)), first_lanes_f32(int(o.cols) - kLanes)};
  auto load = [&](const float* p, int v) {
    if constexpr (kMasked) return load_f32(p + kLanes * v, mask[v]);
    return load_f32(p + kLanes * v);
  };
  // The tile's outputs (and residual) asked for now, to arrive while the products run: a
  // block of columns writes a piece of every row of Y, more streams than the hardware's
  // prefetchers follow, and each store missing the cache stalled the tiles after it. (A 1x1
  // conv of K = 64 to 256 channels of 56x56 with a residual: 1.3-1.7 -> 1.1-1.2 ms; ResNet-50
  // 2-4 % faster at 1 and 2 threads, Zen 4.)
#pragma GCC unroll 6
  for (int i = 0; i < kMr; ++i) {
    if (i >= o.rows) break;
#pragma GCC unroll 2
    for (int v = 0; v < kV; ++v) {
      __builtin_prefetch(o.y + i * o.ldy + kLanes * v, 1, 3);
      if (o.z) __builtin_prefetch(o.z + i * o.ldy + kLanes * v, 0, 3);
    }
  }
  VF32 acc[kMr][kV];
#pragma GCC unroll 6
  for (int i = 0; i < kMr; ++i)
#pragma GCC unroll 2
    for (int v = 0; v < kV; ++v) acc[i][v] = zero_f32();
  int64_t s = 0;
  if constexpr (kV == 1) {
    // One vector: 6 sums are too few FMA chains to cover their latency, so the even and odd
    // steps go to two sets (a 1024 x 256 product on a 14x14 plane's 196 columns, whose last 4
    // are such a tile, 3 % faster; Zen 5).
    VF32 odd[kMr];
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) odd[i] = zero_f32();
    for (; s + 2 <= k; s += 2, wp += 2 * kMr) {
      if constexpr (kPrefetch) __builtin_prefetch(wp + kMr * k + 64, 0, 2);
      const VF32 x0 = load(row(s), 0), x1 = load(row(s + 1), 0);
#pragma GCC unroll 6
      for (int i = 0; i < kMr; ++i) {
        acc[i][0] = fmadd_f32(splat_f32(wp[i]), x0, acc[i][0]);
        odd[i] = fmadd_f32(splat_f32(wp[kMr + i]), x1, odd[i]);
      }
    }
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) acc[i][0] = add_f32(acc[i][0], odd[i]);
  }
  for (; s < k; ++s, wp += kMr) {
    // The next panel, 256 bytes ahead of this step's place in it, into L2 (prefetch never
    // faults past the end of the weights).
    if constexpr (kPrefetch) __builtin_prefetch(wp + kMr * k + 64, 0, 2);
    const float* xs = row(s);
    VF32 xv[kV];
#pragma GCC unroll 2
    for (int v = 0; v < kV; ++v) xv[v] = load(xs, v);
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) {
      const VF32 w = splat_f32(wp[i]);
#pragma GCC unroll 2
      for (int v = 0; v < kV; ++v) acc[i][v] = fmadd_f32(w, xv[v], acc[i][v]);
    }
  }
  const VF32 vlo = splat_f32(lo), vhi = splat_f32(hi);
#pragma GCC unroll 6
  for (int i = 0; i < kMr; ++i) {
    if (i >= o.rows) break;
    float* y = o.y + i * o.ldy;
    const float* z = o.z ? o.z + i * o.ldy : nullptr;
    const VF32 b = o.bias ? splat_f32(o.bias[i]) : zero_f32();
#pragma GCC unroll 2
    for (int v = 0; v < kV; ++v) {
      VF32 r = add_f32(acc[i][v], b);
      if (z) r = add_f32(r, load(z, v));
      if (clamp) r = min_f32(vhi, max_f32(vlo, r));  // Clip's NaN behaviour: a NaN stays NaN
      if constexpr (kMasked)
        store_f32(y + kLanes * v, r, mask[v]);
      else
        store_f32(y + kLanes * v, r);
    }
  }
}

#if MINFER_ISA_WIDE
// A row panel's last 1-4 columns (a 14x14 plane's 196 = 6 x 32 + 4), which a tile would compute
// in 4 of a vector's 16 lanes, one FMA per weight. Here the lanes are (column q, row i), q * 4 +
// i: rows 0-3 of the 4 columns in one vector (a step's 4 weights broadcast as a block, its 4 X
// values each spread over 4 lanes) and rows 4-5 in another (8 lanes used): 2 FMAs a step, not 6.
// 4 steps in flight (8 chains) cover the FMA latency. (ResNet-50's 14x14 1x1 convs: the 4
// columns took a tenth of the conv's time that way.)
__attribute__((always_inline)) inline void conv_tail(int64_t k, const float* wp, const float* x,
                                                     int64_t ldx, const f32::ConvTileOut& o,
                                                     bool clamp, float lo, float hi) {
  const __m512i rows03 = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
  const __m512i rows45 = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 0, 0, 1, 1, 2, 2, 3, 3);
  const MaskF32 columns = first_lanes_f32(int(o.cols));
  constexpr int kSteps = 4;
  VF32 a[kSteps], b[kSteps];
#pragma GCC unroll 4
  for (int u = 0; u < kSteps; ++u) a[u] = b[u] = zero_f32();
  // (The all-lanes masked forms: GCC 12's plain ones warn, as in simd.h.)
  auto block4 = [](const float* p) {
    return _mm512_maskz_broadcast_f32x4(0xffff, _mm_loadu_ps(p));
  };
  auto spread = [](__m512i lanes, VF32 v) { return _mm512_maskz_permutexvar_ps(0xffff, lanes, v); };
  auto step = [&](int64_t s, VF32& sum03, VF32& sum45) {
    const VF32 xs = load_f32(x + s * ldx, columns);  // (the permutes read its lanes 0-3)
    const float* w = wp + s * kMr;
    double w45;  // the step's weights 4 and 5, broadcast as a pair
    __builtin_memcpy(&w45, w + 4, sizeof w45);
    sum03 = fmadd_f32(block4(w), spread(rows03, xs), sum03);
    sum45 = fmadd_f32(_mm512_castpd_ps(_mm512_set1_pd(w45)), spread(rows45, xs), sum45);
  };
  int64_t s = 0;
  for (; s + kSteps <= k; s += kSteps)
#pragma GCC unroll 4
    for (int u = 0; u < kSteps; ++u) step(s + u, a[u], b[u]);
  for (; s < k; ++s) step(s, a[0], b[0]);
#pragma GCC unroll 4
  for (int u = 1; u < kSteps; ++u) a[0] = add_f32(a[0], a[u]), b[0] = add_f32(b[0], b[u]);
  alignas(64) float sums[2 * kLanes];
  store_f32(sums, a[0]);
  store_f32(sums + kLanes, b[0]);
  for (int64_t i = 0; i < o.rows; ++i)
    for (int64_t q = 0; q < o.cols; ++q) {
      float v = i < 4 ? sums[q * 4 + i] : sums[kLanes + q * 2 + i - 4];
      if (o.bias) v += o.bias[i];
      if (o.z) v += o.z[i * o.ldy + q];
      if (clamp) v = v < lo ? lo : v, v = v > hi ? hi : v;  // a NaN stays NaN, as in the tiles
      o.y[i * o.ldy + q] = v;
    }
}
#endif

// A row panel's tiles across o.cols columns, tile t's X at x + t * x_step: one call per row
// panel, so that the tiles (inlined) cost no call each: with K = 16 a tile is ~100 cycles.
template <bool kPrefetch, bool kAt>
void conv_row_tiles(int64_t k, const float* wp, const float* x, int64_t ldx, const int64_t* at,
                    int64_t x_step, const f32::ConvTileOut& o, bool clamp, float lo, float hi) {
  f32::ConvTileOut t = o;
  for (int64_t q0 = 0; q0 < o.cols; q0 += kNr, x += x_step) {
    t.cols = o.cols - q0 < kNr ? o.cols - q0 : kNr;
    t.y = o.y + q0;
    t.z = o.z ? o.z + q0 : nullptr;
    if (t.cols == kNr)
      conv_tile<2, false, kPrefetch, kAt>(k, wp, x, ldx, at, t, clamp, lo, hi);
    else if (t.cols > kLanes)
      conv_tile<2, true, kPrefetch, kAt>(k, wp, x, ldx, at, t, clamp, lo, hi);
    else if (t.cols == kLanes)
      conv_tile<1, false, kPrefetch, kAt>(k, wp, x, ldx, at, t, clamp, lo, hi);
#if MINFER_ISA_WIDE
    else if (!kAt && t.cols <= f32::kTailColumns)
      conv_tail(k, wp, x, ldx, t, clamp, lo, hi);
#endif
    else
      conv_tile<1, true, kPrefetch, kAt>(k, wp, x, ldx, at, t, clamp, lo, hi);
  }
}

void conv_rows(int64_t k, const float* wp, const float* x, int64_t ldx, const int64_t* x_rows,
               int64_t x_step, const f32::ConvTileOut& o, bool clamp, float lo, float hi,
               bool prefetch) {
  if (x_rows)  // (an implicit GEMM's small weights: no prefetch)
    conv_row_tiles<false, true>(k, wp, x, ldx, x_rows, x_step, o, clamp, lo, hi);
  else if (prefetch)
    conv_row_tiles<true, false>(k, wp, x, ldx, nullptr, x_step, o, clamp, lo, hi);
  else
    conv_row_tiles<false, false>(k, wp, x, ldx, nullptr, x_step, o, clamp, lo, hi);
}

// PackedRhs's tile, for R = 1..kRhsRows rows of A (a tile of fewer rows computes only those:
// MobileNet v2 and EfficientNet-B0 ran 2.4-4 % faster with 1 and 2 threads of a Zen 4 than
// with 6 rows' FMAs everywhere). The sums are an array indexed by constants only (the loops
// over rows fully unrolled): they live in registers. kAhead: B streams from memory (the
// first row tile to read it): each step asks for the B of a later one. At 6 rows a tile reads
// B faster than one core's share of memory brings it; the rows after it find B in cache.
template <int R, bool kAhead>
void rhs_rows(int64_t kc, const float* a, int64_t lda, const float* bp, int64_t next_panel,
              float* c, int64_t ldc, int64_t rows, int64_t cols, bool first, const float* bias,
              const float* clamp) {
  // The second vector: the panel's columns 8..15 on ymm, the next panel's 0..15 on zmm.
  const int64_t second = kLanes == 16 ? next_panel : kLanes;
  VF32 r[R][2];
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i) r[i][0] = r[i][1] = zero_f32();
#pragma GCC unroll 4  // 3-12 % faster on a Zen 3 (fewer loop-control ops between FMAs)
  for (int64_t k = 0; k < kc; ++k, bp += 16) {
    if constexpr (kAhead) {
      __builtin_prefetch(bp + kAheadFloats, 0, 3);
      if (kLanes == 16) __builtin_prefetch(bp + second + kAheadFloats, 0, 3);
    }
    const VF32 b0 = load_f32(bp), b1 = load_f32(bp + second);
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      const VF32 v = splat_f32(a[i * lda + k]);
      r[i][0] = fmadd_f32(v, b0, r[i][0]);
      r[i][1] = fmadd_f32(v, b1, r[i][1]);
    }
  }
  if (rows == R && cols == kNr) {  // a whole tile: straight from the registers
    const VF32 b0 = bias ? load_f32(bias) : zero_f32();
    const VF32 b1 = bias ? load_f32(bias + kLanes) : zero_f32();
    const VF32 vlo = splat_f32(clamp ? clamp[0] : 0.f), vhi = splat_f32(clamp ? clamp[1] : 0.f);
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) {
      float* ci = c + i * ldc;
      VF32 lo = r[i][0], hi = r[i][1];
      if (!first) lo = add_f32(lo, load_f32(ci)), hi = add_f32(hi, load_f32(ci + kLanes));
      if (bias) lo = add_f32(lo, b0), hi = add_f32(hi, b1);
      if (clamp) lo = min_f32(vhi, max_f32(vlo, lo)), hi = min_f32(vhi, max_f32(vlo, hi));
      store_f32(ci, lo);
      store_f32(ci + kLanes, hi);
    }
    return;
  }
  alignas(64) float tile[R][kNr];
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i) store_f32(tile[i], r[i][0]), store_f32(tile[i] + kLanes, r[i][1]);
  for (int64_t i = 0; i < rows; ++i) {
    float* ci = c + i * ldc;
    for (int64_t j = 0; j < cols; ++j) {
      const float t = first ? tile[i][j] : ci[j] + tile[i][j];
      float v = bias ? t + bias[j] : t;
      if (clamp) v = v < clamp[0] ? clamp[0] : v, v = v > clamp[1] ? clamp[1] : v;
      ci[j] = v;
    }
  }
}

void rhs_tile(int64_t kc, const float* a, int64_t lda, const float* bp, int64_t next_panel,
              float* c, int64_t ldc, int64_t rows, int64_t cols, bool first, const float* bias,
              const float* clamp, bool ahead) {
  using Tile = void (*)(int64_t, const float*, int64_t, const float*, int64_t, float*, int64_t,
                        int64_t, int64_t, bool, const float*, const float*);
  static constexpr Tile kTiles[2][kRhsRows] = {
      {rhs_rows<1, false>, rhs_rows<2, false>, rhs_rows<3, false>, rhs_rows<4, false>,
       rhs_rows<5, false>, rhs_rows<6, false>
#if MINFER_ISA_WIDE
       , rhs_rows<7, false>, rhs_rows<8, false>
#endif
      },
      {rhs_rows<1, true>, rhs_rows<2, true>, rhs_rows<3, true>, rhs_rows<4, true>,
       rhs_rows<5, true>, rhs_rows<6, true>
#if MINFER_ISA_WIDE
       , rhs_rows<7, true>, rhs_rows<8, true>
#endif
      }};
  kTiles[ahead][min64(rows, kRhsRows) - 1](kc, a, lda, bp, next_panel, c, ldc, rows, cols, first,
                                           bias, clamp);
}

#if MINFER_ISA_WIDE
// The tall tile (f32::RhsTall): R rows x one vector, R accumulators (up to 16 of 32 registers).
template <int R>
void tall_rows(int64_t kc, const float* a, int64_t lda, const float* bp, float* c, int64_t ldc,
               int64_t cols, bool first, const float* bias, const float* clamp) {
  VF32 r[R];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) r[i] = zero_f32();
  // A pointer per 3 rows, the other two at lda and 2 lda from it (one address register each:
  // with a pointer per row, 16 rows outgrew the general registers and some went to the stack).
  constexpr int kGroups = (R + 2) / 3;
  const float* g[kGroups];
#pragma GCC unroll 6
  for (int j = 0; j < kGroups; ++j) g[j] = a + 3 * j * lda;
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k, bp += 16) {
    __builtin_prefetch(bp + kAheadFloats, 0, 3);
    const VF32 b = load_f32(bp);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const float* row = g[i / 3] + k;
      r[i] = fmadd_f32(splat_f32(row[(i % 3) * lda]), b, r[i]);
    }
  }
  const MaskF32 mask = first_lanes_f32(int(cols));
  const VF32 b = bias ? load_f32(bias, mask) : zero_f32();
  const VF32 vlo = splat_f32(clamp ? clamp[0] : 0.f), vhi = splat_f32(clamp ? clamp[1] : 0.f);
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
    float* ci = c + i * ldc;
    VF32 v = r[i];
    if (!first) v = add_f32(v, load_f32(ci, mask));
    if (bias) v = add_f32(v, b);
    if (clamp) v = min_f32(vhi, max_f32(vlo, v));  // Clip's NaN behaviour: a NaN stays NaN
    store_f32(ci, v, mask);
  }
}

void rhs_tall(int64_t kc, const float* a, int64_t lda, const float* bp, float* c, int64_t ldc,
              int64_t rows, int64_t cols, bool first, const float* bias, const float* clamp) {
  using Tall = void (*)(int64_t, const float*, int64_t, const float*, float*, int64_t, int64_t,
                        bool, const float*, const float*);
  static constexpr Tall kTalls[f32::kTallRows] = {
      tall_rows<1>,  tall_rows<2>,  tall_rows<3>,  tall_rows<4>,  tall_rows<5>,  tall_rows<6>,
      tall_rows<7>,  tall_rows<8>,  tall_rows<9>,  tall_rows<10>, tall_rows<11>, tall_rows<12>,
      tall_rows<13>, tall_rows<14>, tall_rows<15>, tall_rows<16>};
  kTalls[min64(rows, f32::kTallRows) - 1](kc, a, lda, bp, c, ldc, cols, first, bias, clamp);
}
#else
constexpr f32::RhsTall rhs_tall = nullptr;
#endif

}  // namespace

extern const f32::MicroKernels kFp32MicroKernels;
const f32::MicroKernels kFp32MicroKernels{static_cast<Isa>(MINFER_ISA_LEVEL),
                                          kMr,
                                          kNr,
                                          MINFER_ISA_WIDE ? f32::kTailColumns : 0,
                                          conv_rows,
                                          kRhsRows,
                                          rhs_tile,
                                          rhs_tall};

}  // namespace minfer::cpu::MINFER_ISA_NS
