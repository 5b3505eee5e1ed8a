// The int8 depthwise conv's sums (backends/cpu/int8/qdepthwise_kernel.h), one source for every
// ISA level. Each int8 input is sign-extended into a 32-bit lane whose weight lane holds w in
// its low 16 bits and 0 in its high ones, so one vpmaddwd (vpdpwssd on the VNNI levels) gives
// x * w: no zero-point subtraction (init holds it) and no 32-bit multiply. A register tile of 4
// pixels x 2 vectors of channels shares each tap's weights between the pixels; on the 512-bit
// levels 3x3 and 5x5 kernels have their own unrolled tiles, and at stride 1 or 2 each input of
// a kernel row is widened once for all its taps.
#include <type_traits>

#include "backends/cpu/isa/isa_kernels.h"
#include "backends/cpu/isa/simd.h"

namespace minfer::cpu::MINFER_ISA_NS {

namespace {

#if MINFER_ISA_WIDE
// The last vector of a layer's channels: its lanes.
using Mask = __mmask16;
static inline VI32 load_x(const int8_t* p) {
  // The masked form: GCC 12 warns (maybe-uninitialized) on the plain one.
  return _mm512_maskz_cvtepi8_epi32(0xffff, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
static inline VI32 load_x(const int8_t* p, Mask m) {
  return _mm512_maskz_cvtepi8_epi32(0xffff, _mm_maskz_loadu_epi8(m, p));
}
static inline VI32 load_w(const int32_t* p, Mask m) { return _mm512_maskz_loadu_epi32(m, p); }
static inline void store_acc(int32_t* p, VI32 v, Mask m) { _mm512_mask_storeu_epi32(p, m, v); }
#if MINFER_ISA_VNNI
static inline VI32 dot(VI32 acc, VI32 x, VI32 w) { return _mm512_dpwssd_epi32(acc, x, w); }
#endif
#else
// No masks on the 256-bit levels: the channels past whole vectors go one by one.
using Mask = int;
static inline VI32 load_x(const int8_t* p) {
  return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
static inline VI32 load_x(const int8_t* p, Mask) { return load_x(p); }
static inline VI32 load_w(const int32_t* p, Mask) { return load_i32(p); }
static inline void store_acc(int32_t* p, VI32 v, Mask) { store_i32(p, v); }
#if MINFER_ISA_VNNI
static inline VI32 dot(VI32 acc, VI32 x, VI32 w) { return _mm256_dpwssd_avx_epi32(acc, x, w); }
#endif
#endif
#if !MINFER_ISA_VNNI
static inline VI32 dot(VI32 acc, VI32 x, VI32 w) { return madd_i16(acc, x, w); }
#endif

// A register tile's pieces: P pixels x V vectors of channels, where with kTail the last vector
// has only m's lanes (the sums a local array of the tile, so that they stay in registers).
template <int V, bool kTail>
static inline __attribute__((always_inline)) VI32 weights(const int32_t* p, int v, Mask m) {
  return kTail && v == V - 1 ? load_w(p + v * kI32Lanes, m) : load_i32(p + v * kI32Lanes);
}
template <int V, bool kTail>
static inline __attribute__((always_inline)) VI32 inputs(const int8_t* p, int v, Mask m) {
  return kTail && v == V - 1 ? load_x(p + v * kI32Lanes, m) : load_x(p + v * kI32Lanes);
}
template <int P, int V, bool kTail>
static inline __attribute__((always_inline)) void start(VI32 (&acc)[P][V], const int32_t* init,
                                                        Mask m) {
  for (int v = 0; v < V; ++v) {
    const VI32 i = weights<V, kTail>(init, v, m);
    for (int p = 0; p < P; ++p) acc[p][v] = i;
  }
}
template <int P, int V, bool kTail>
static inline __attribute__((always_inline)) void store(const VI32 (&acc)[P][V], int32_t* out,
                                                        int64_t pixel_stride, Mask m) {
  for (int p = 0; p < P; ++p)
    for (int v = 0; v < V; ++v) {
      int32_t* o = out + p * pixel_stride + v * kI32Lanes;
      if (kTail && v == V - 1)
        store_acc(o, acc[p][v], m);
      else
        store_i32(o, acc[p][v]);
    }
}

// The tile of pixels p0.. and channels c..: K > 0, the kernel is K x K, known here, so that its
// loops unroll and the sums stay in registers (with run-time loops GCC kept them on the stack:
// the kernel's layers 1.3-1.5x slower); K = 0: any kernel.
template <int K, int P, int V, bool kTail>
static inline __attribute__((always_inline, flatten)) void tile(const q8::DepthwiseRun& r,
                                                                 int64_t p0, int64_t c, Mask m) {
  VI32 acc[P][V];
  start<P, V, kTail>(acc, r.init + c, m);
  const int32_t* w = r.w + c;
  const int64_t step = r.pixel_step;
  const int64_t rows = K > 0 ? K : r.kernel_rows, taps = K > 0 ? K : r.row_taps;
  for (int64_t ky = 0; ky < rows; ++ky) {
    const int8_t* x = r.rows[ky] + p0 * step + c;
    for (int64_t kx = 0; kx < taps; ++kx, x += r.tap_step, w += r.channels) {
      for (int v = 0; v < V; ++v) {
        const VI32 wt = weights<V, kTail>(w, v, m);
        for (int p = 0; p < P; ++p)
          acc[p][v] = dot(acc[p][v], inputs<V, kTail>(x + p * step, v, m), wt);
      }
    }
  }
  store<P, V, kTail>(acc, r.acc + p0 * r.channels + c, r.channels, m);
}

// The same for a KW x KW kernel whose taps along a row are adjacent input pixels and whose
// pixels are S of them apart (stride S, no dilation): the S (P - 1) + KW inputs of a kernel
// row are widened once and serve all their taps, not widened once per tap (at stride 2, 9
// inputs for the 12 taps of 4 pixels of a 3x3 kernel).
template <int KW, int S, int P, int V, bool kTail>
static inline __attribute__((always_inline, flatten)) void sliding_tile(
    const q8::DepthwiseRun& r, int64_t p0, int64_t c, Mask m) {
  VI32 acc[P][V];
  start<P, V, kTail>(acc, r.init + c, m);
  const int64_t step = r.tap_step;  // one input pixel
  for (int64_t ky = 0; ky < KW; ++ky) {  // (square kernels only)
    const int8_t* x = r.rows[ky] + p0 * r.pixel_step + c;
    const int32_t* w = r.w + ky * KW * r.channels + c;
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      VI32 in[S * (P - 1) + KW];
      for (int i = 0; i < S * (P - 1) + KW; ++i) in[i] = inputs<V, kTail>(x + i * step, v, m);
      for (int kx = 0; kx < KW; ++kx) {
        const VI32 wt = weights<V, kTail>(w + kx * r.channels, v, m);
        for (int p = 0; p < P; ++p) acc[p][v] = dot(acc[p][v], in[S * p + kx], wt);
      }
    }
  }
  store<P, V, kTail>(acc, r.acc + p0 * r.channels + c, r.channels, m);
}

// The run's pixels in tiles of 4, then the last 1-3 in one tile, of a K x K kernel known here
// (K = 0: any kernel, the last pixels one by one).
// kStride > 0: the sliding tiles at that stride.
template <int K, int kStride, int V, bool kTail>
static inline void pixels_of(const q8::DepthwiseRun& r, int64_t c, Mask m) {
  int64_t p = 0;
  auto run = [&](auto pixels) {
    constexpr int P = decltype(pixels)::value;
    if constexpr (kStride > 0)
      sliding_tile<K, kStride, P, V, kTail>(r, p, c, m);
    else
      tile<K, P, V, kTail>(r, p, c, m);
  };
  for (; p + 4 <= r.pixels; p += 4) run(std::integral_constant<int, 4>{});
  if constexpr (K > 0) {
    // (A 7x7 plane's rows are 4 + 3 pixels.)
    const int64_t left = r.pixels - p;
    if (left == 3) run(std::integral_constant<int, 3>{});
    if (left == 2) run(std::integral_constant<int, 2>{});
    if (left == 1) run(std::integral_constant<int, 1>{});
  } else {
    for (; p < r.pixels; ++p) tile<0, 1, V, kTail>(r, p, c, m);
  }
}

template <int V, bool kTail>
static inline void pixels(const q8::DepthwiseRun& r, int64_t c, Mask m) {
  // The kernels known here only on the 32-register levels: on the 16-register ones their
  // unrolled loops spill (the depthwise layers 5-17 % slower at MINFER_ISA=avx2, Zen 4).
  const bool square = r.kernel_rows == r.row_taps && MINFER_ISA_WIDE;
  // The taps along a row adjacent input pixels, the pixels 1 or 2 of them apart.
  const int stride = r.tap_step != r.channels      ? 0
                     : r.pixel_step == r.tap_step   ? 1
                     : r.pixel_step == 2 * r.tap_step ? 2
                                                      : 0;
  if (square && stride == 1 && r.row_taps == 3)
    pixels_of<3, 1, V, kTail>(r, c, m);
  else if (square && stride == 1 && r.row_taps == 5)
    pixels_of<5, 1, V, kTail>(r, c, m);
  else if (square && stride == 2 && r.row_taps == 3)
    pixels_of<3, 2, V, kTail>(r, c, m);
  else if (square && stride == 2 && r.row_taps == 5)
    pixels_of<5, 2, V, kTail>(r, c, m);
  else if (square && r.row_taps == 3)
    pixels_of<3, 0, V, kTail>(r, c, m);
  else if (square && r.row_taps == 5)
    pixels_of<5, 0, V, kTail>(r, c, m);
  else
    pixels_of<0, 0, V, kTail>(r, c, m);
}

void depthwise_sums(const q8::DepthwiseRun& r) {
  int64_t c = 0;
  for (; c + 2 * kI32Lanes <= r.channels; c += 2 * kI32Lanes) pixels<2, false>(r, c, 0);
  for (; c + kI32Lanes <= r.channels; c += kI32Lanes) pixels<1, false>(r, c, 0);
  if (c == r.channels) return;
#if MINFER_ISA_WIDE
  pixels<1, true>(r, c, static_cast<Mask>((1u << (r.channels - c)) - 1));
#else
  for (int64_t p = 0; p < r.pixels; ++p)
    for (int64_t ch = c; ch < r.channels; ++ch) {
      int32_t a = r.init[ch];
      const int32_t* w = r.w + ch;
      for (int64_t ky = 0; ky < r.kernel_rows; ++ky) {
        const int8_t* x = r.rows[ky] + p * r.pixel_step + ch;
        for (int64_t kx = 0; kx < r.row_taps; ++kx, x += r.tap_step, w += r.channels)
          a += int32_t{*x} * static_cast<int16_t>(*w);
      }
      r.acc[p * r.channels + ch] = a;
    }
#endif
}

}  // namespace

extern const q8::DepthwiseKernels kInt8Depthwise;
const q8::DepthwiseKernels kInt8Depthwise{static_cast<Isa>(MINFER_ISA_LEVEL), depthwise_sums};

}  // namespace minfer::cpu::MINFER_ISA_NS
