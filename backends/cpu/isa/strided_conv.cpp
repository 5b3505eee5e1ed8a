// The strided conv's rows kernel (backends/cpu/conv_strided.h), one source for every ISA level
// (compiled once per level by cmake/MinferIsa.cmake). A tile is R output positions (up to 14 on
// 32 registers, 6 on 16) x 2 vectors of output channels (or 1 vector of 1, 2 or 4 groups'):
// per step of (channel, ky, kx) it loads the step's weights for the block's channels once and
// broadcasts each position's input from the padded NCHW copy, where the R positions of a step
// lie 1 or 2 positions (the stride) apart in one row (on 16 registers, the tile's last
// positions may lie at the start of the next output row's: a second run, a fixed distance
// on): no im2col. The sums are then moved to NCHW through 8 x 8 transposes, with the bias, the
// residual and the clamp on the way.
#include <cstring>
#include <utility>

#include "backends/cpu/isa/isa_kernels.h"
#include "backends/cpu/isa/simd.h"

namespace minfer::cpu::MINFER_ISA_NS {

namespace {

// On 32 registers a row of up to 14 positions is one tile (28 sums), a longer row tiles of up
// to 8 (ResNet-50's 3x3 conv of 256 channels to a 14x14 output, one thread of a Zen 5, 0.93 of
// its time with rows in one tile; the 28x28 one 1.01 with tiles of 14, so kept at 7), or of up
// to 12 where the products are deep (Inception v3's 3x3 stride-2 conv of 288 channels to 17x17,
// K = 2592: 2 tiles a row, 0.96 of the time; the 7x7 stem, K = 147, 1.06: a tile of more than 8
// moves its sums out through two 8x8 transposes). Tiles of one vector of channels (14 sums at
// most) take up to 14 positions of any row: a grouped conv of 8 channels a group on 28x28, 2
// tiles of 14 a row, 0.94 of its time with 4 of 7 (1 thread of a Zen 4). On 16 registers, 6
// positions (12 sums, 2 weight vectors, 1 broadcast).
constexpr int kLanes = kF32Lanes, kNr = 2 * kLanes, kMaxRows = MINFER_ISA_WIDE ? 14 : 6;
constexpr int kLongRowTile = MINFER_ISA_WIDE ? 8 : 6, kDeepRowTile = MINFER_ISA_WIDE ? 12 : 6;
constexpr int64_t kDeepSteps = 512;
// The tile's sums go out through 8 x 8 transposes: its positions in groups of 8.
constexpr int kGroupRows = (kMaxRows + 7) / 8 * 8;

// Vec8 as __m256 (the same bits).
static inline __m256 m256(Vec8 v) { return (__m256)v; }

// Channel j's R outputs (lanes 0..R-1 of v) plus its bias into y, with the residual and the
// clamp (AVX-512's masked forms on 8 lanes, AVX2's vmaskmovps).
template <int R>
static inline void store_row(Vec8 v, float bias, const float* z, float* y, bool clamp, __m256 lo,
                             __m256 hi) {
  __m256 o = _mm256_add_ps(m256(v), _mm256_set1_ps(bias));
#if MINFER_ISA_WIDE
  constexpr __mmask8 kLanesR = static_cast<__mmask8>((1u << R) - 1);
  if (z) o = _mm256_add_ps(o, _mm256_maskz_loadu_ps(kLanesR, z));
  if (clamp) o = _mm256_min_ps(hi, _mm256_max_ps(lo, o));  // vmaxps returns a NaN operand o
  _mm256_mask_storeu_ps(y, kLanesR, o);
#else
  const MaskF32 lanes = first_lanes_f32(R);
  if (z) o = _mm256_add_ps(o, _mm256_maskload_ps(z, lanes));
  if (clamp) o = _mm256_min_ps(hi, _mm256_max_ps(lo, o));  // vmaxps returns a NaN operand o
  _mm256_maskstore_ps(y, lanes, o);
#endif
}

// R <= 8 of the tile's sums in t, to y channel by channel through 8 x 8 transposes, positions
// [q0, q0 + R); I groups side by side in the lanes (lane l: channel l / I of group l % I; with
// kPairs, two groups' 8 lanes in turn, lane l channel l % 8 of group l / 8). Rows of t past R
// are zeros, transposed but not stored; so are the lanes of groups that the block lacks.
template <int R, int I, bool kPairs = false>
void store_group(const f32::StridedRows& a, int64_t q0, const float (*t)[kNr]) {
  const __m256 lo = _mm256_set1_ps(a.lo), hi = _mm256_set1_ps(a.hi);
  const int64_t lanes = I * a.cols;
  for (int64_t j0 = 0; j0 < lanes; j0 += 8) {
    Vec8 col[8];
#pragma GCC unroll 8
    for (int r = 0; r < 8; ++r) std::memcpy(&col[r], t[r] + j0, sizeof col[r]);
    transpose8(col);
    const int64_t n = min64(8, lanes - j0);
    for (int64_t j = 0; j < n; ++j) {
      const int64_t group = kPairs ? (j0 + j) / 8 : (j0 + j) % I;
      if (I > 1 && group >= a.groups) continue;
      const int64_t in_group = kPairs ? (j0 + j) % 8 : (j0 + j) / I;
      const int64_t channel = I > 1 ? group * a.group_stride + in_group : j0 + j;
      const int64_t at = channel * a.y_channel + q0;
      store_row<R>(col[j], a.bias ? a.bias[channel] : 0.f, a.z ? a.z + at : nullptr, a.y + at,
                   a.clamp, lo, hi);
    }
  }
}

// The tile's R x kNr sums in groups of 8 positions.
template <int R, int I, bool kPairs = false>
void store_tile(const f32::StridedRows& a, int64_t q0, const float (*t)[kNr]) {
  store_group<(R < 8 ? R : 8), I, kPairs>(a, q0, t);
  if constexpr (R > 8) store_group<R - 8, I, kPairs>(a, q0 + 8, t + 8);
}

// The I floats at p repeated across a vector: one group's input (I = 1) or I groups' side by
// side, each a load that broadcasts.
template <int I>
static inline VF32 splat_run(const float* p) {
  if constexpr (I == 1) {
    return splat_f32(*p);
  } else if constexpr (I == 2) {
    double d;
    std::memcpy(&d, p, sizeof d);
#if MINFER_ISA_WIDE
    return _mm512_castpd_ps(_mm512_set1_pd(d));
#else
    return _mm256_castpd_ps(_mm256_set1_pd(d));
#endif
  } else {
#if MINFER_ISA_WIDE
    // (The all-lanes masked form: GCC 12's _mm512_broadcast_f32x4 warns, maybe-uninitialized.)
    return _mm512_maskz_broadcast_f32x4(0xffff, _mm_loadu_ps(p));
#else
    return _mm256_broadcast_ps(reinterpret_cast<const __m128*>(p));
#endif
  }
}

// The tile's steps over (channel, ky, kx): step(row, bp) with the step's input row (its
// window corner for position 0) and its weights (kNr floats), `stride` floats from one kx to
// the next; kPrefetch: one of the lines that pf to pf_end hold asked for per step (its own
// instance: the check costs on short products).
template <bool kPrefetch, typename Step>
__attribute__((always_inline)) inline void for_each_step(const f32::StridedRows& a, const float* x,
                                                         int stride, const char*& pf,
                                                         const char* pf_end, Step&& step) {
  const float* bp = a.b;
  for (int64_t c = 0; c < a.channels; ++c, x += a.plane)
    for (int ky = 0; ky < a.kh; ++ky) {
      const float* row = x + ky * a.row;
      for (int kx = 0; kx < a.kw; ++kx, row += stride, bp += kNr) {
        // Hides that step kx + SW broadcasts what step kx did a position on: GCC kept those
        // values in registers across steps, and the sums spilled to the stack.
        asm("" : "+r"(row));
        if (kPrefetch && pf < pf_end) {
          __builtin_prefetch(pf, 0, 2);  // into L2
          pf += 64;
        }
        step(row, bp);
      }
    }
}

// Positions [q0, q0 + R), V vectors of channels, the first S of them in the output row whose
// window corner for position 0 is x and the others (S < R) at the start of the next row:
// position r >= S reads delta floats further on than it would in x's row. SW: the column
// stride (1 or 2); I: the groups side by side (StridedRows::interleave); kPrefetch as in
// for_each_step.
template <int R, int S, int V, int SW, int I, bool kPrefetch>
void tile(const f32::StridedRows& a, int64_t q0, const float* x, int64_t delta, const char*& pf,
          const char* pf_end) {
  VF32 acc[R][V];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) acc[r][v] = zero_f32();
  for_each_step<kPrefetch>(a, x, I, pf, pf_end, [&](const float* row, const float* bp) {
    VF32 b[V];
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) b[v] = load_f32(bp + v * kLanes);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const VF32 in = splat_run<I>(r < S ? row + SW * I * r : row + delta + SW * I * r);
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) acc[r][v] = fmadd_f32(in, b[v], acc[r][v]);
    }
  });
  alignas(64) float t[kGroupRows][kNr];
#pragma GCC unroll 16
  for (int r = 0; r < (R + 7) / 8 * 8; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) store_f32(t[r] + v * kLanes, r < R ? acc[r][v] : zero_f32());
  store_tile<R, I>(a, q0, t);
}

constexpr int kHalfLanes = 8, kMaxHalves = 28;  // (sums in registers at most)

#if MINFER_ISA_WIDE
// Blocks that 512-bit vectors fill poorly, on CPUs that split 512-bit operations in two
// (StridedRows::halves), in N 256-bit vectors: two groups of 8 channels (kPairs; N = 2), each
// position's input of each group broadcast from its float, where tile<R, S, 1, SW, 2>
// broadcasts the pair to 512 bits; or 17-24 channels of one group (N = 3), which fill 3 of 4
// half vectors where tile<R, S, 2, SW, 1> fills 2 of 2 at 0.75. (On a Zen 4 a 512-bit
// broadcast of a pair took a vector pipe beside every FMA: 14 FMAs with such broadcasts ran at
// 0.75 of the rate with broadcasts of one float, an operand of the FMA; a loop of nothing
// else.) For kPairs the weights are packed to match: group 0's 8 lanes, then group 1's.
template <int R, int S, int SW, int N, bool kPairs, bool kPrefetch>
void tile_halves(const f32::StridedRows& a, int64_t q0, const float* x, int64_t delta,
                 const char*& pf, const char* pf_end) {
  static_assert(R * N <= kMaxHalves);
  constexpr int kStep = kPairs ? 2 : 1;  // floats per input position
  __m256 acc[R][N];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
    for (int v = 0; v < N; ++v) acc[r][v] = _mm256_setzero_ps();
  for_each_step<kPrefetch>(a, x, kStep, pf, pf_end, [&](const float* row, const float* bp) {
    __m256 b[N];
#pragma GCC unroll 3
    for (int v = 0; v < N; ++v) b[v] = _mm256_load_ps(bp + v * kHalfLanes);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const float* in = r < S ? row + SW * kStep * r : row + delta + SW * kStep * r;
#pragma GCC unroll 3
      for (int v = 0; v < N; ++v)
        acc[r][v] = _mm256_fmadd_ps(_mm256_set1_ps(in[kPairs ? v : 0]), b[v], acc[r][v]);
    }
  });
  alignas(64) float t[kGroupRows][kNr];  // (store_tile reads the first N * 8 lanes)
#pragma GCC unroll 16
  for (int r = 0; r < (R + 7) / 8 * 8; ++r)
#pragma GCC unroll 3
    for (int v = 0; v < N; ++v)
      _mm256_store_ps(t[r] + v * kHalfLanes, r < R ? acc[r][v] : _mm256_setzero_ps());
  store_tile<R, kPairs ? 2 : 1, kPairs>(a, q0, t);
}

#endif

using Tile = void (*)(const f32::StridedRows&, int64_t, const float*, int64_t, const char*&,
                      const char*);

#if MINFER_ISA_WIDE
// tile_halves where its sums fit in registers, else null (rows() asks for no more).
template <int R, int S, int SW, int N, bool kPairs, bool kPrefetch>
constexpr Tile halves_entry() {
  if constexpr (R * N > kMaxHalves)
    return nullptr;
  else
    return tile_halves<R, S, SW, N, kPairs, kPrefetch>;
}
#endif

// Tiles may span two rows on 16 registers only (where rows of 14 left lanes of the 6 empty).
constexpr bool kSpansRows = !MINFER_ISA_WIDE;

// Entry i of a tile table: R = tile_rows(i) positions, the first tile_first(i) in one row (all
// R where tiles do not span rows, so that the 512-bit levels make no split tiles).
constexpr int tile_rows(int i) { return i / kMaxRows + 1; }
constexpr int tile_first(int i) {
  return kSpansRows && i % kMaxRows + 1 < tile_rows(i) ? i % kMaxRows + 1 : tile_rows(i);
}

// tile<rows, first, V, SW, I, kPrefetch> for run-time 1 <= first <= rows <= kMaxRows; with
// H > 0, tile_halves<rows, first, SW, H, I == 2, kPrefetch> (rows <= kMaxHalves / H).
template <int V, int SW, int I, int H, bool kPrefetch, int... Is>
Tile tile_for(int rows, int first, std::integer_sequence<int, Is...>) {
#if MINFER_ISA_WIDE
  if constexpr (H > 0) {
    static constexpr Tile kTiles[] = {
        halves_entry<tile_rows(Is), tile_first(Is), SW, H, I == 2, kPrefetch>()...};
    return kTiles[(rows - 1) * kMaxRows + first - 1];
  }
#endif
  static constexpr Tile kTiles[] = {tile<tile_rows(Is), tile_first(Is), V, SW, I, kPrefetch>...};
  return kTiles[(rows - 1) * kMaxRows + first - 1];
}

template <int V, int SW, int I, int H = 0>
Tile tile_for(int rows, int first, bool prefetch) {
  const auto seq = std::make_integer_sequence<int, kMaxRows * kMaxRows>{};
  return prefetch ? tile_for<V, SW, I, H, true>(rows, first, seq)
                  : tile_for<V, SW, I, H, false>(rows, first, seq);
}

// The 256-bit vectors of a block where it runs in halves (StridedRows::halves): 2 for a pair
// of groups, 3 for 17-24 channels of one; else 0.
int halves_of(const f32::StridedRows& a) {
  if (!MINFER_ISA_WIDE || !a.halves) return 0;
  if (a.interleave == 2) return 2;
  return a.interleave == 1 && a.cols > 2 * kHalfLanes && a.cols <= 3 * kHalfLanes ? 3 : 0;
}

// Two vectors of channels of one group, or one vector of 1, 2 or 4 groups, or `halves`
// 256-bit vectors.
template <int SW>
Tile tile_for(int v, int interleave, [[maybe_unused]] int halves, int rows, int first,
              bool prefetch) {
#if MINFER_ISA_WIDE
  if (halves == 2) return tile_for<1, SW, 2, 2>(rows, first, prefetch);
  if (halves == 3) return tile_for<2, SW, 1, 3>(rows, first, prefetch);
#endif
  if (v == 2) return tile_for<2, SW, 1>(rows, first, prefetch);
  if (interleave == 4) return tile_for<1, SW, 4>(rows, first, prefetch);
  if (interleave == 2) return tile_for<1, SW, 2>(rows, first, prefetch);
  return tile_for<1, SW, 1>(rows, first, prefetch);
}

// The positions in near-equal tiles of at most max_tile (28 as 4 x 7, not 3 x 8 + 4: a tile of
// few positions spends the step's weight loads on few products). Where tiles span rows, they
// are cut from all the positions together (3 rows of 14 as 7 tiles of 6, not 3 x (5, 5, 4)).
void rows(const f32::StridedRows& a) {
  const bool spans = kSpansRows && a.width >= kMaxRows;
  const int64_t run = spans ? a.positions : a.width;  // positions tiled together
  const bool deep = a.channels * a.kh * a.kw >= kDeepSteps;
  const int v = a.cols > kLanes ? 2 : 1, halves = halves_of(a);
  const int64_t max_tile = halves == 3                 ? kMaxHalves / 3
                           : run <= kMaxRows || v == 1 ? kMaxRows
                           : deep                      ? kDeepRowTile
                                                       : kLongRowTile;
  const int64_t tiles = (run + max_tile - 1) / max_tile;
  const int64_t step = a.sw * a.interleave;           // floats from a position to the next
  const int64_t delta = a.next_row - step * a.width;  // from a row's end to the next's start
  const char* pf = reinterpret_cast<const char*>(a.prefetch);
  const char* pf_end = pf + a.prefetch_lines * 64;
  for (int64_t first = 0; first < a.positions; first += run)
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t q0 = first + run * t / tiles, q1 = first + run * (t + 1) / tiles;
      const int rows = int(q1 - q0);
      const int64_t r = q0 / a.width, u = q0 % a.width;
      const int in_row = int(min64(rows, a.width - u));
      const float* x = a.x + r * a.next_row + u * step;
      const bool ahead = pf < pf_end;
      const Tile f = a.sw == 1 ? tile_for<1>(v, a.interleave, halves, rows, in_row, ahead)
                               : tile_for<2>(v, a.interleave, halves, rows, in_row, ahead);
      f(a, q0, x, delta, pf, pf_end);
    }
}

}  // namespace

extern const f32::StridedConvKernels kStridedConvKernels;
const f32::StridedConvKernels kStridedConvKernels{static_cast<Isa>(MINFER_ISA_LEVEL), kNr,
                                                  kMaxRows, kSpansRows, rows};

}  // namespace minfer::cpu::MINFER_ISA_NS
