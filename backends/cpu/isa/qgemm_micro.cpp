// The int8 GEMM micro-kernel and activation packing, one source for every ISA level
// (compiled once per level by cmake/MinferIsa.cmake; see backends/cpu/int8/qgemm.h for the
// arithmetic):
//
//   avx2, avx512            int16 operands, vpmaddwd (k in pairs). vpmaddubsw would be faster
//                           but saturates its int16 pair sums.
//   avxvnni, avx512vnni     vpdpbusd (k in quads), unsigned activations x + 128 (x ^ 0x80)
//                           times signed weights; the caller folds -128 * sum(W[j]) into init.
//   amx                     tdpbusd on AMX tiles, the same operands as vpdpbusd.
//
// A tile is mr rows x 2 vectors of int32 channels (16 or 32), accumulated in registers:
// 6 rows on 16 ymm registers, 12 rows on 32 zmm registers (a narrow tile, one vector, 12 or
// 24 rows, for a last block of at most one vector of channels). On AMX it is a block of four
// 16 x 16 int32 tile registers (32 rows x 32 channels), the activations' rows
// 16-row x 64-byte tiles per 16 quads of k, the weights 16-quad x 16-channel tiles: the packed
// layouts of the other levels are already those tiles' (rows of quads; quads of channels, read
// 64 bytes of each 128-byte quad at a time), with k padded to whole tiles.
#include <cstring>

#include "backends/cpu/isa/isa_kernels.h"
#include "backends/cpu/isa/simd.h"

namespace minfer::cpu::MINFER_ISA_NS {

namespace {

constexpr bool kAmx = MINFER_ISA_LEVEL == MINFER_LEVEL_AMX;
constexpr int kNr = 2 * kI32Lanes;
constexpr int kMr = kAmx ? 32 : MINFER_ISA_WIDE ? 12 : 6;
constexpr int kStep = MINFER_ISA_VNNI ? 4 : 2;
constexpr int kQuadAlign = kAmx ? 16 : 1;  // k quads per tile row
// TileRows::signed_rows taken (AMX's tiles load the rows as they are).
constexpr bool kSignedRows = MINFER_ISA_VNNI && !kAmx;

// The rows of a narrow tile (one vector of channels: the block's first half): one weight load
// per step for that many products (24 rows on 32 registers, 12 on 16).
constexpr int kNarrowMr = kAmx ? 0 : MINFER_ISA_WIDE ? 24 : 12;

// The I lanes (4 bytes each) at p repeated across a vector: one lane broadcast, or I groups'
// lanes side by side (TileRows::interleave), each a load that broadcasts.
template <int I>
static inline VI32 splat_lanes(const uint8_t* p) {
  if constexpr (I == 1) {
    int32_t lane;  // 2 int16 or 4 uint8 activations
    std::memcpy(&lane, p, 4);
    return splat_i32(lane);
  } else if constexpr (I == 2) {
    long long lanes;
    std::memcpy(&lanes, p, 8);
#if MINFER_ISA_WIDE
    return _mm512_set1_epi64(lanes);
#else
    return _mm256_set1_epi64x(lanes);
#endif
  } else {
    const __m128i lanes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
#if MINFER_ISA_WIDE
    // (The all-lanes masked form: GCC 12's _mm512_broadcast_i32x4 warns, maybe-uninitialized.)
    return _mm512_maskz_broadcast_i32x4(0xffff, lanes);
#else
    return _mm256_broadcastsi128_si256(lanes);
#endif
  }
}

// The sums of interleaved groups (lane l: channel l / I of group l % I) in channel order
// (channel j of group i at lane i * lanes / I + j).
template <int I>
static inline VI32 channel_order(VI32 v) {
  constexpr int kGroupLanes = kI32Lanes / I;
  alignas(64) int32_t from[kI32Lanes];
  for (int j = 0; j < kI32Lanes; ++j) from[j] = j % kGroupLanes * I + j / kGroupLanes;
#if MINFER_ISA_WIDE
  return _mm512_maskz_permutexvar_epi32(0xffff, load_i32(from), v);  // (GCC 12: see splat_lanes)
#else
  return _mm256_permutevar8x32_epi32(v, load_i32(from));
#endif
}

// R rows x V vectors (2: a whole block; 1: its first half). kRuns: more than one run per row (a
// separate instance: the run loop's registers made the one-run tiles of im2col rows 1-5 %
// slower on short products). kPrefetch: one of rows.prefetch_lines asked for per step (its own
// instance too: the check made MobileNet v2's 1x1 convs of 16 to 32 channels, 4 to 8 steps a
// tile, 4-5 % slower). kFlip: rows.signed_rows (VNNI; the xor takes the broadcast's load as
// its operand, one instruction). I: rows.interleave (a step of I lanes; the sums permuted into
// channel order as they are stored).
template <int R, int V, bool kRuns, bool kPrefetch, bool kFlip, int I = 1>
void tile(const q8::TileRows& rows, const uint8_t* b, const int32_t* init, int32_t* c) {
  VI32 acc[R][V];
#pragma GCC unroll 2
  for (int v = 0; v < V; ++v) {
    const VI32 start = load_i32(init + v * kI32Lanes);
#pragma GCC unroll 24
    for (int r = 0; r < R; ++r) acc[r][v] = start;
  }
  const int64_t a_stride = rows.a_stride, kq = rows.run_lanes;
  const uint8_t* a = rows.a;
  const int64_t runs = kRuns ? rows.runs : 1;
  const uint8_t* pf = rows.prefetch;
  const uint8_t* pf_end = pf + rows.prefetch_lines * 64;
  const int64_t b_step = (rows.weight_lanes > 0 ? rows.weight_lanes : kq) * kNr * 4;
  for (int64_t s = 0; s < runs; ++s, a += rows.run_step, b += b_step) {
    for (int64_t q = 0; q < kq; ++q) {
      if (kPrefetch && pf < pf_end) {
        __builtin_prefetch(pf, 0, 2);  // into L2
        pf += 64;
      }
      VI32 bv[V];
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) bv[v] = load_i32(b + q * kNr * 4 + v * kI32Lanes * 4);
#pragma GCC unroll 24
      for (int r = 0; r < R; ++r) {
        VI32 av = splat_lanes<I>(a + r * a_stride + q * 4 * I);
#if MINFER_ISA_VNNI
        if constexpr (kFlip) av = xor_i32(av, splat_i32(int32_t(0x80808080u)));
#endif
#pragma GCC unroll 2
        for (int v = 0; v < V; ++v) {
#if MINFER_ISA_VNNI
          acc[r][v] = dot4_u8i8(acc[r][v], av, bv[v]);
#else
          acc[r][v] = madd_i16(acc[r][v], av, bv[v]);
#endif
        }
      }
    }
  }
#pragma GCC unroll 24
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) {
      if constexpr (I > 1) acc[r][v] = channel_order<I>(acc[r][v]);
      store_i32(c + r * kNr + v * kI32Lanes, acc[r][v]);
    }
}

// tile<rows> for a run-time rows in [1, R].
template <int R, int V, bool kRuns, bool kPrefetch, bool kFlip = false, int I = 1>
void tile_rows(int rows, const q8::TileRows& a, const uint8_t* b, const int32_t* init, int32_t* c) {
  if constexpr (R <= 1) {
    tile<1, V, kRuns, kPrefetch, kFlip, I>(a, b, init, c);
  } else {
    if (rows >= R)
      tile<R, V, kRuns, kPrefetch, kFlip, I>(a, b, init, c);
    else
      tile_rows<R - 1, V, kRuns, kPrefetch, kFlip, I>(rows, a, b, init, c);
  }
}

// The instance for a's runs and prefetching.
template <int R, int V>
void any_tile(int rows, const q8::TileRows& a, const uint8_t* b, const int32_t* init, int32_t* c) {
  if constexpr (V == 1) {
    // Interleaved groups (the implicit GEMM's: runs, no prefetching, no signed rows).
    if (a.interleave == 4) return tile_rows<R, V, true, false, false, 4>(rows, a, b, init, c);
    if (a.interleave == 2) return tile_rows<R, V, true, false, false, 2>(rows, a, b, init, c);
  }
  if constexpr (kSignedRows) {
    if (a.signed_rows) {
      if (a.prefetch_lines > 0) return tile_rows<R, V, false, true, true>(rows, a, b, init, c);
      return tile_rows<R, V, false, false, true>(rows, a, b, init, c);
    }
  }
  if (a.prefetch_lines > 0) {
    if (a.runs == 1)
      tile_rows<R, V, false, true>(rows, a, b, init, c);
    else
      tile_rows<R, V, true, true>(rows, a, b, init, c);
  } else if (a.runs == 1) {
    tile_rows<R, V, false, false>(rows, a, b, init, c);
  } else {
    tile_rows<R, V, true, false>(rows, a, b, init, c);
  }
}

#if MINFER_ISA_LEVEL == MINFER_LEVEL_AMX
// The tile registers' shapes (palette 1): 0-3 = C, 16 rows of 16 int32 each (a 32 x 32 block:
// tile 2i + j holds rows 16i.., channels 16j..); 4-5 = A, 16 rows of 64 bytes (16 quads);
// 6-7 = B, 16 quads of 16 channels x 4 bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};

// Loads the tile shapes: once per run of micro calls (MicroKernels::begin), not per call (per
// call took 3-5 % more of int8 ResNet-50's time on a Xeon); other code on the thread may load
// its own between two runs.
void begin_tiles() {
  static const TileConfig config;
  _tile_loadconfig(&config);
}

// All 32 rows of A are read (the caller's row buffers hold whole tiles); rows past `rows` are
// computed and stored but not used. Each A and B tile serves two products. One run per row:
// the caller packs im2col rows at this level (kq_align 16).
void micro(const q8::TileRows& rows_of_a, const uint8_t* b, int rows, const int32_t* init,
           int32_t* c) {
  (void)rows;
  const uint8_t* a = rows_of_a.a;
  const int64_t a_stride = rows_of_a.a_stride, kq = rows_of_a.run_lanes;
  alignas(64) int32_t start[2][16 * 16];  // init's two halves, one per row of a C tile
  for (int j = 0; j < 2; ++j)
    for (int r = 0; r < 16; ++r) std::memcpy(start[j] + r * 16, init + 16 * j, 64);
  _tile_loadd(0, start[0], 64);
  _tile_loadd(1, start[1], 64);
  _tile_loadd(2, start[0], 64);
  _tile_loadd(3, start[1], 64);
  const int64_t b_row = kNr * 4;  // bytes per quad of the weight block
  for (int64_t q = 0; q < kq; q += 16) {
    _tile_loadd(4, a + q * 4, a_stride);
    _tile_loadd(5, a + 16 * a_stride + q * 4, a_stride);
    _tile_loadd(6, b + q * b_row, b_row);
    _tile_loadd(7, b + q * b_row + 64, b_row);
    _tile_dpbusd(0, 4, 6);
    _tile_dpbusd(1, 4, 7);
    _tile_dpbusd(2, 5, 6);
    _tile_dpbusd(3, 5, 7);
  }
  _tile_stored(0, c, b_row);
  _tile_stored(1, c + 16, b_row);
  _tile_stored(2, c + 16 * kNr, b_row);
  _tile_stored(3, c + 16 * kNr + 16, b_row);
}
constexpr q8::MicroKernel narrow = nullptr;
#else
void micro(const q8::TileRows& a, const uint8_t* b, int rows, const int32_t* init, int32_t* c) {
  any_tile<kMr, 2>(rows, a, b, init, c);
}
void narrow(const q8::TileRows& a, const uint8_t* b, int rows, const int32_t* init, int32_t* c) {
  any_tile<kNarrowMr, 1>(rows, a, b, init, c);
}
constexpr void (*begin_tiles)() = nullptr;
#endif

// The activations of an im2col row, packed run by run as they are gathered. A run's last
// piece overlaps the one before instead of a scalar tail or a masked load (a 7x7 stem's runs
// are 21 bytes; masked loads made its im2col 1.4x slower on a Zen 4).
#if MINFER_ISA_VNNI
// Unsigned: x + 128.
static inline void flip16(const int8_t* x, uint8_t* out) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                   _mm_xor_si128(v, _mm_set1_epi8(static_cast<char>(0x80))));
}
template <typename T>
static inline void flip_word(const int8_t* x, uint8_t* out) {
  T v;
  std::memcpy(&v, x, sizeof v);
  v ^= static_cast<T>(0x8080808080808080ull);
  std::memcpy(out, &v, sizeof v);
}
static inline void pack_run(const int8_t* x, int64_t n, uint8_t* out) {
  if (n >= 16) {
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                          _mm256_xor_si256(v, _mm256_set1_epi8(static_cast<char>(0x80))));
    }
    if (i + 16 <= n) flip16(x + i, out + i);
    if (n % 16) flip16(x + n - 16, out + n - 16);
  } else if (n >= 8) {
    flip_word<uint64_t>(x, out);
    flip_word<uint64_t>(x + n - 8, out + n - 8);
  } else if (n >= 4) {
    flip_word<uint32_t>(x, out);
    flip_word<uint32_t>(x + n - 4, out + n - 4);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(x[i]) ^ 0x80;
  }
}
void fill_run(int8_t x, int64_t n, uint8_t* out) {
  std::memset(out, static_cast<uint8_t>(x) ^ 0x80, static_cast<size_t>(n));
}
#else
// Widened to int16.
static inline void widen8(const int8_t* x, uint8_t* out) {
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_cvtepi8_epi16(v));
}
static inline void pack_run(const int8_t* x, int64_t n, uint8_t* out) {
  if (n < 8) {
    for (int64_t i = 0; i < n; ++i) {
      const int16_t v = x[i];
      std::memcpy(out + 2 * i, &v, 2);
    }
    return;
  }
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * i), _mm256_cvtepi8_epi16(v));
  }
  if (i + 8 <= n) widen8(x + i, out + 2 * i);
  if (n % 8) widen8(x + n - 8, out + 2 * (n - 8));
}
void fill_run(int8_t x, int64_t n, uint8_t* out) {
  const int16_t v = x;
  for (int64_t i = 0; i < n; ++i) std::memcpy(out + 2 * i, &v, 2);
}
#endif

void pack_runs(const int8_t* x, int64_t step, int64_t runs, int64_t n, uint8_t* out) {
  const int64_t bytes = n * (4 / kStep);
  for (int64_t i = 0; i < runs; ++i) pack_run(x + i * step, n, out + i * bytes);
}

}  // namespace

extern const q8::MicroKernels kInt8MicroKernels;
const q8::MicroKernels kInt8MicroKernels{static_cast<Isa>(MINFER_ISA_LEVEL),
                                         kMr,
                                         kNr,
                                         kStep,
                                         kQuadAlign,
                                         MINFER_ISA_VNNI ? 128 : 0,
                                         kSignedRows,
                                         micro,
                                         kNarrowMr,
                                         narrow,
                                         pack_runs,
                                         fill_run,
                                         begin_tiles};

}  // namespace minfer::cpu::MINFER_ISA_NS
