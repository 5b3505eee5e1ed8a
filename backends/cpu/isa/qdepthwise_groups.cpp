// The int8 depthwise sums on group rows (q8::DepthwiseGroupRun in isa_kernels.h). The plain
// sums (qdepthwise_sums.cpp) widen every input to a 32-bit lane and take one tap per lane;
// here a lane holds the inputs of neighbouring pixels, 4 as u8 for vpdpbusd on the VNNI
// levels (a 3x3 kernel's 4 pixels take 6 instructions a row, not 12), 2 as int16 for vpmaddwd
// on the others (4 a row, not 6), and the inputs are loaded as they are, not widened per tap.
// Each input row is transposed into its groups once (to_groups) and serves every output row
// that reads it.
#include <type_traits>
#include <utility>

#include "backends/cpu/isa/isa_kernels.h"
#include "backends/cpu/isa/simd.h"

namespace minfer::cpu::MINFER_ISA_NS {

namespace {

#if MINFER_ISA_VNNI
constexpr int kGroup = 4;  // u8 pixels a lane
constexpr int kInputOffset = 128;

// pack_16: 4 pixels' 16 channels (a[b] = pixel b's) -> 16 channels' quads of the 4 pixels as
// u8, at out[0..63].
static inline void pack_16(const __m128i (&a)[4], uint8_t* out) {
  const __m128i flip = _mm_set1_epi8(static_cast<char>(0x80));  // x + 128 as u8
  const __m128i t0 = _mm_unpacklo_epi8(a[0], a[1]), t1 = _mm_unpackhi_epi8(a[0], a[1]);
  const __m128i t2 = _mm_unpacklo_epi8(a[2], a[3]), t3 = _mm_unpackhi_epi8(a[2], a[3]);
  __m128i* o = reinterpret_cast<__m128i*>(out);
  _mm_storeu_si128(o + 0, _mm_xor_si128(_mm_unpacklo_epi16(t0, t2), flip));
  _mm_storeu_si128(o + 1, _mm_xor_si128(_mm_unpackhi_epi16(t0, t2), flip));
  _mm_storeu_si128(o + 2, _mm_xor_si128(_mm_unpacklo_epi16(t1, t3), flip));
  _mm_storeu_si128(o + 3, _mm_xor_si128(_mm_unpackhi_epi16(t1, t3), flip));
}

#if MINFER_ISA_WIDE
// The all-lanes masked form: GCC 12 warns (maybe-uninitialized) on the plain one.
template <int kLanes>
static inline __m512i shuffle_lanes(__m512i a, __m512i b) {
  return _mm512_maskz_shuffle_i32x4(0xffff, a, b, kLanes);
}
// The same for 64 channels: the unpacks work in 128-bit lanes, so lane l of their results holds
// channels 16 l + 4 k .. (k = 0..3), and a 4x4 transpose of the lanes puts them in order.
static inline void transpose_4x64(const int8_t* const (&pixel)[4], int64_t c, uint8_t* out) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512i a[4];
  for (int b = 0; b < 4; ++b) a[b] = _mm512_xor_si512(_mm512_loadu_si512(pixel[b] + c), flip);
  const __m512i t0 = _mm512_unpacklo_epi8(a[0], a[1]), t1 = _mm512_unpackhi_epi8(a[0], a[1]);
  const __m512i t2 = _mm512_unpacklo_epi8(a[2], a[3]), t3 = _mm512_unpackhi_epi8(a[2], a[3]);
  const __m512i o0 = _mm512_unpacklo_epi16(t0, t2), o1 = _mm512_unpackhi_epi16(t0, t2);
  const __m512i o2 = _mm512_unpacklo_epi16(t1, t3), o3 = _mm512_unpackhi_epi16(t1, t3);
  const __m512i u0 = shuffle_lanes<0x44>(o0, o1), u1 = shuffle_lanes<0xee>(o0, o1);
  const __m512i u2 = shuffle_lanes<0x44>(o2, o3), u3 = shuffle_lanes<0xee>(o2, o3);
  _mm512_storeu_si512(out, shuffle_lanes<0x88>(u0, u2));
  _mm512_storeu_si512(out + 64, shuffle_lanes<0xdd>(u0, u2));
  _mm512_storeu_si512(out + 128, shuffle_lanes<0x88>(u1, u3));
  _mm512_storeu_si512(out + 192, shuffle_lanes<0xdd>(u1, u3));
}
#endif

#else
constexpr int kGroup = 2;  // int16 pixels a lane
constexpr int kInputOffset = 0;

// pack_16: 2 pixels' 16 channels -> 16 channels' pairs of the 2 pixels as int16, at
// out[0..63].
static inline void pack_16(const __m128i (&a)[2], uint8_t* out) {
  __m256i* o = reinterpret_cast<__m256i*>(out);
  _mm256_storeu_si256(o, _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(a[0], a[1])));
  _mm256_storeu_si256(o + 1, _mm256_cvtepi8_epi16(_mm_unpackhi_epi8(a[0], a[1])));
}
#endif

void to_groups(const int8_t* row, int64_t width, int64_t pad_left, const int8_t* zero_pixel,
               int64_t channels, int64_t channels_padded, int64_t groups, uint8_t* out) {
  const int64_t whole = channels / 16 * 16;
  for (int64_t q = 0; q < groups; ++q) {
    const int8_t* pixel[kGroup];
    for (int b = 0; b < kGroup; ++b) {
      const int64_t x = kGroup * q + b - pad_left;
      pixel[b] = x >= 0 && x < width ? row + x * channels : zero_pixel;
    }
    uint8_t* o = out + q * channels_padded * 4;
    __m128i a[kGroup];
    int64_t c = 0;
#if MINFER_ISA_VNNI && MINFER_ISA_WIDE
    for (; c + 64 <= whole; c += 64) transpose_4x64(pixel, c, o + c * 4);
#endif
    for (; c < whole; c += 16) {
      for (int b = 0; b < kGroup; ++b)
        a[b] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(pixel[b] + c));
      pack_16(a, o + c * 4);
    }
    if (whole < channels) {
      // The last channels, then up to channels_padded (whole + 16) inputs that meet 0 weights.
      alignas(16) int8_t part[kGroup][16] = {};
      for (int b = 0; b < kGroup; ++b) {
        for (int64_t ch = whole; ch < channels; ++ch) part[b][ch - whole] = pixel[b][ch];
        a[b] = _mm_load_si128(reinterpret_cast<const __m128i*>(part[b]));
      }
      pack_16(a, o + whole * 4);
    }
  }
}

// f(0), f(1), .. f(N - 1), each index a compile-time constant, so that the tile's arrays of
// registers are indexed by constants (GCC left loops of these in place, the sums on the stack).
template <typename F, int... I>
static inline __attribute__((always_inline)) void unroll_each(F& f,
                                                              std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}
template <int N, typename F>
static inline __attribute__((always_inline)) void unroll(F&& f) {
  unroll_each(f, std::make_integer_sequence<int, N>{});
}

#if MINFER_ISA_WIDE
// The all-lanes masked forms: GCC 12 warns (maybe-uninitialized) on the plain ones.
template <int N>
static inline VI32 shift_left(VI32 a) {
  return _mm512_maskz_slli_epi32(0xffff, a, N);
}
template <int N>
static inline VI32 shift_right(VI32 a) {
  return _mm512_maskz_srli_epi32(0xffff, a, N);
}
static inline VI32 or_i32(VI32 a, VI32 b) { return _mm512_or_si512(a, b); }
#else
template <int N>
static inline VI32 shift_left(VI32 a) {
  return _mm256_slli_epi32(a, N);
}
template <int N>
static inline VI32 shift_right(VI32 a) {
  return _mm256_srli_epi32(a, N);
}
static inline VI32 or_i32(VI32 a, VI32 b) { return _mm256_or_si256(a, b); }
#endif

static inline VI32 dot(VI32 acc, VI32 in, VI32 w) {
#if MINFER_ISA_VNNI
  return dot4_u8i8(acc, in, w);
#else
  return madd_i16(acc, in, w);
#endif
}

// The weights of a group whose element e meets tap e + D of a kernel row (D = kGroup j -
// stride i) from the row's tap dwords t: shifts, not loads (stored, each (pixel, group) pair's
// weights were 2-4x the taps' bytes, and on a 14x14 plane of 576 channels a row's sums ran
// from L2, 1.3x slower than the plain sums).
template <int D, int kDwords>
static inline __attribute__((always_inline)) VI32 group_weights(const VI32 (&t)[kDwords]) {
  constexpr int kBits = 32 / kGroup;
  if constexpr (D < 0) {
    return shift_left<-kBits * D>(t[0]);
  } else {
    constexpr int k = D / kGroup, r = D % kGroup;
    if constexpr (r == 0) return t[k];
    if constexpr (r > 0 && k + 1 < kDwords)
      return or_i32(shift_right<kBits * r>(t[k]), shift_left<kBits*(kGroup - r)>(t[k + 1]));
    if constexpr (r > 0 && k + 1 >= kDwords) return shift_right<kBits * r>(t[k]);
  }
}

// The tile of pixels p0 .. p0 + P - 1 (P a multiple of the group G: pixel i + G has pixel i's
// weights, its groups S further) and V vectors of channels from c (the kernel KW wide, its
// pixels S columns apart), known here so that its loops unroll and the sums stay in registers.
// 8 pixels keep 16 sums apart on the VNNI levels: with 4 x 2 those of the pixels that read 2
// groups a row waited on each other.
template <int KW, int S, int P, int V>
static inline __attribute__((always_inline, flatten)) void tile(const q8::DepthwiseGroupRun& r,
                                                                int64_t p0, int64_t c) {
  constexpr int G = kGroup;
  constexpr int kGroups = S * (P / G - 1) + q8::group_last(G, S, KW, G - 1) + 1;
  constexpr int kDwords = q8::group_tap_dwords(G, KW);
  const int64_t cp = r.channels_padded;
  VI32 acc[P][V];
  unroll<V>([&](auto v) {
    const VI32 init = load_i32(r.init + c + v * kI32Lanes);
    unroll<P>([&](auto p) { acc[p][v] = init; });
  });
  const int64_t g0 = S * p0 / G;
  for (int64_t ky = 0; ky < r.kernel_rows; ++ky) {
    const uint8_t* groups = r.rows[ky] + (g0 * cp + c) * 4;
    const int32_t* taps = r.taps + ky * kDwords * cp + c;
    VI32 in[kGroups][V];
    unroll<kGroups>([&](auto j) {
      unroll<V>([&](auto v) { in[j][v] = load_i32(groups + (j * cp + v * kI32Lanes) * 4); });
    });
    unroll<V>([&](auto v) {
      VI32 t[kDwords];
      unroll<kDwords>([&](auto k) { t[k] = load_i32(taps + k * cp + v * kI32Lanes); });
      unroll<G>([&](auto i) {
        constexpr int first = q8::group_first(G, S, i);
        constexpr int count = q8::group_last(G, S, KW, i) - first + 1;
        unroll<count>([&](auto n) {
          const VI32 w = group_weights<G*(first + n) - S * i, kDwords>(t);
          unroll<P / G>([&](auto u) {
            acc[i + G * u][v] = dot(acc[i + G * u][v], in[S * u + first + n][v], w);
          });
        });
      });
    });
  }
  int32_t* out = r.acc + p0 * cp + c;
  unroll<P>([&](auto p) {
    unroll<V>([&](auto v) { store_i32(out + p * cp + v * kI32Lanes, acc[p][v]); });
  });
}

// The tile's pixels and vectors: 8 pixels (4 for pairs on the 16-register levels), of 2 vectors
// for quads on the 32-register levels (pairs read more groups: at avx512 MobileNet v2's
// stride-1 layers 1.0-1.12x the time of one vector), of one elsewhere (16 sums would spill).
constexpr int kTilePixels = kGroup == 2 && !MINFER_ISA_WIDE ? 4 : 8;
constexpr int kTileVectors = MINFER_ISA_WIDE && kGroup == 4 ? 2 : 1;

template <int KW, int S>
void sums_of(const q8::DepthwiseGroupRun& r) {
  auto row = [&](auto vectors, int64_t c) {
    constexpr int V = decltype(vectors)::value;
    int64_t p = 0;
    for (; p + kTilePixels <= r.pixels; p += kTilePixels) tile<KW, S, kTilePixels, V>(r, p, c);
    for (; p < r.pixels; p += kGroup) tile<KW, S, kGroup, V>(r, p, c);
  };
  int64_t c = r.c0;
  if constexpr (kTileVectors == 2)
    for (; c + 2 * kI32Lanes <= r.c1; c += 2 * kI32Lanes) row(std::integral_constant<int, 2>{}, c);
  for (; c < r.c1; c += kI32Lanes) row(std::integral_constant<int, 1>{}, c);
}

// Stride 2 for quads only: on pairs MobileNet v2's stride-2 layers took 1.0-1.07x the plain
// sums' time at avx2, 1.2-1.3x at avx512 (each output row transposes two input rows, into
// int16s twice their size; Zen 5).
bool supports(int64_t kernel_w, int64_t stride) {
  return (kernel_w == 3 || kernel_w == 5) && (stride == 1 || (stride == 2 && kGroup == 4));
}

void sums(const q8::DepthwiseGroupRun& r) {
  if (r.kernel_w == 3)
    r.stride == 1 ? sums_of<3, 1>(r) : sums_of<3, 2>(r);
  else
    r.stride == 1 ? sums_of<5, 1>(r) : sums_of<5, 2>(r);
}

}  // namespace

extern const q8::DepthwiseGroupKernels kInt8DepthwiseGroups;
const q8::DepthwiseGroupKernels kInt8DepthwiseGroups{
    static_cast<Isa>(MINFER_ISA_LEVEL), kGroup, kInputOffset, supports, sums, to_groups};

}  // namespace minfer::cpu::MINFER_ISA_NS
