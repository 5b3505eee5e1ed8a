// The int8 depthwise sums on quad rows (q8::DepthwiseQuadRun in isa_kernels.h), VNNI levels.
// The plain sums (qdepthwise_sums.cpp) widen every input to a 32-bit lane and take one tap per
// vpdpwssd lane; here the inputs of 4 neighbouring pixels share a lane as u8 and one vpdpbusd
// takes up to 4 taps of a kernel row: a 3x3 kernel's 4 pixels need 6 of them a row, not 12,
// and their inputs are loaded as they are, not widened. Each input row is transposed into its
// quads once (to_quads) and serves every output row that reads it.
#include <type_traits>
#include <utility>

#include "backends/cpu/isa/isa_kernels.h"
#include "backends/cpu/isa/simd.h"

namespace minfer::cpu::MINFER_ISA_NS {

namespace {

#if MINFER_ISA_VNNI

// 4 pixels' 16 channels (a[b] = pixel b's) -> 16 channels' quads of the 4 pixels as u8, at
// out[0..63].
static inline void transpose_4x16(const __m128i (&a)[4], uint8_t* out) {
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

void to_quads(const int8_t* row, int64_t width, int64_t pad_left, const int8_t* zero_pixel,
              int64_t channels, int64_t channels_padded, int64_t quads, uint8_t* out) {
  const int64_t whole = channels / 16 * 16;
  for (int64_t q = 0; q < quads; ++q) {
    const int8_t* pixel[4];
    for (int b = 0; b < 4; ++b) {
      const int64_t x = 4 * q + b - pad_left;
      pixel[b] = x >= 0 && x < width ? row + x * channels : zero_pixel;
    }
    uint8_t* o = out + q * channels_padded * 4;
    __m128i a[4];
    int64_t c = 0;
#if MINFER_ISA_WIDE
    for (; c + 64 <= whole; c += 64) transpose_4x64(pixel, c, o + c * 4);
#endif
    for (; c < whole; c += 16) {
      for (int b = 0; b < 4; ++b)
        a[b] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(pixel[b] + c));
      transpose_4x16(a, o + c * 4);
    }
    if (whole < channels) {
      // The last channels, then up to channels_padded (whole + 16) inputs that meet 0 weights.
      alignas(16) int8_t part[4][16] = {};
      for (int b = 0; b < 4; ++b) {
        for (int64_t c = whole; c < channels; ++c) part[b][c - whole] = pixel[b][c];
        a[b] = _mm_load_si128(reinterpret_cast<const __m128i*>(part[b]));
      }
      transpose_4x16(a, o + whole * 4);
    }
  }
}

// f(0), f(1), .. f(N - 1), each index a compile-time constant, so that the tile's arrays of
// registers are indexed by constants (GCC left loops of these in place, the sums on the stack).
template <int N, typename F>
static inline __attribute__((always_inline)) void unroll(F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) { (f(std::integral_constant<int, I>{}), ...); }
  (std::make_integer_sequence<int, N>{});
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

// The weights of a quad whose byte b meets tap b + D of a kernel row (D = 4 j - stride i, from
// -3 to 7) from the row's tap dwords t0 (taps 0-3) and t1 (taps 4-7; kTwo: there are some):
// shifts, not loads (stored, each (pixel, quad) pair's weights were 2-4x the taps' bytes, and
// on a 14x14 plane of 576 channels a row's sums ran from L2, 1.3x slower than vpdpwssd's).
template <int D, bool kTwo>
static inline __attribute__((always_inline)) VI32 quad_weights(VI32 t0, VI32 t1) {
  if constexpr (D < 0) return shift_left<-8 * D>(t0);
  if constexpr (D == 0) return t0;
  if constexpr (D > 0 && D < 4) {
    if constexpr (kTwo) return or_i32(shift_right<8 * D>(t0), shift_left<32 - 8 * D>(t1));
    return shift_right<8 * D>(t0);
  }
  if constexpr (D == 4) return t1;
  if constexpr (D > 4) return shift_right<8 * (D - 4)>(t1);
}

// The tile of pixels p0 .. p0 + P - 1 (P = 4 or 8: pixel i + 4 has pixel i's weights, its quads
// S further) and V vectors of channels from c (the kernel KW wide, its pixels S columns apart),
// known here so that its loops unroll and the sums stay in registers. 8 pixels keep 16 sums
// apart: with 4 x 2 those of the pixels that read 2 quads a row waited on each other.
template <int KW, int S, int P, int V>
static inline __attribute__((always_inline, flatten)) void tile(const q8::DepthwiseQuadRun& r,
                                                                int64_t p0, int64_t c) {
  constexpr int T = q8::kQuadTilePixels;
  constexpr int kQuads = S * (P / T - 1) + q8::quad_last(S, KW, T - 1) + 1;
  constexpr int kDwords = q8::quad_tap_dwords(KW);
  const int64_t cp = r.channels_padded;
  VI32 acc[P][V];
  unroll<V>([&](auto v) {
    const VI32 init = load_i32(r.init + c + v * kI32Lanes);
    unroll<P>([&](auto p) { acc[p][v] = init; });
  });
  const int64_t q0 = S * p0 / T;
  for (int64_t ky = 0; ky < r.kernel_rows; ++ky) {
    const uint8_t* quads = r.rows[ky] + (q0 * cp + c) * 4;
    const int32_t* taps = r.taps + ky * kDwords * cp + c;
    VI32 in[kQuads][V];
    unroll<kQuads>([&](auto j) {
      unroll<V>([&](auto v) { in[j][v] = load_i32(quads + (j * cp + v * kI32Lanes) * 4); });
    });
    unroll<V>([&](auto v) {
      const VI32 t0 = load_i32(taps + v * kI32Lanes);
      const VI32 t1 = kDwords > 1 ? load_i32(taps + cp + v * kI32Lanes) : t0;
      unroll<T>([&](auto i) {
        constexpr int first = q8::quad_first(S, i), count = q8::quad_last(S, KW, i) - first + 1;
        unroll<count>([&](auto n) {
          const VI32 w = quad_weights<4 * (first + n) - S * i, (kDwords > 1)>(t0, t1);
          unroll<P / T>([&](auto t) {
            acc[i + T * t][v] = dot4_u8i8(acc[i + T * t][v], in[S * t + first + n][v], w);
          });
        });
      });
    });
  }
  unroll<P>([&](auto p) {
    unroll<V>([&](auto v) { store_i32(r.acc + (p0 + p) * cp + c + v * kI32Lanes, acc[p][v]); });
  });
}

template <int KW, int S>
void sums_of(const q8::DepthwiseQuadRun& r) {
  constexpr int T = q8::kQuadTilePixels;
  auto row = [&](auto vectors, int64_t c) {
    constexpr int V = decltype(vectors)::value;
    int64_t p = 0;
    for (; p + 2 * T <= r.pixels; p += 2 * T) tile<KW, S, 2 * T, V>(r, p, c);
    if (p < r.pixels) tile<KW, S, T, V>(r, p, c);
  };
  int64_t c = r.c0;
  // (Two vectors of 8 pixels are 16 sums: on the 16-register levels one vector at a time.)
  if constexpr (MINFER_ISA_WIDE)
    for (; c + 2 * kI32Lanes <= r.c1; c += 2 * kI32Lanes) row(std::integral_constant<int, 2>{}, c);
  for (; c < r.c1; c += kI32Lanes) row(std::integral_constant<int, 1>{}, c);
}

bool supports(int64_t kernel_w, int64_t stride) {
  return (kernel_w == 3 || kernel_w == 5) && (stride == 1 || stride == 2);
}

void sums(const q8::DepthwiseQuadRun& r) {
  if (r.kernel_w == 3)
    r.stride == 1 ? sums_of<3, 1>(r) : sums_of<3, 2>(r);
  else
    r.stride == 1 ? sums_of<5, 1>(r) : sums_of<5, 2>(r);
}

#endif

}  // namespace

extern const q8::DepthwiseQuadKernels kInt8DepthwiseQuads;
#if MINFER_ISA_VNNI
const q8::DepthwiseQuadKernels kInt8DepthwiseQuads{static_cast<Isa>(MINFER_ISA_LEVEL), supports,
                                                   sums, to_quads};
#else
const q8::DepthwiseQuadKernels kInt8DepthwiseQuads{static_cast<Isa>(MINFER_ISA_LEVEL), nullptr,
                                                   nullptr, nullptr};
#endif

}  // namespace minfer::cpu::MINFER_ISA_NS
