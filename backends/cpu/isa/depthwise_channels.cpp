// The depthwise channels-as-lanes kernels of depthwise_channels.h, one source for every ISA level
// (compiled once per level by cmake/MinferIsa.cmake): W = 8 channels per vector on ymm, 16 on
// zmm. The transposes work on 8 x 8 blocks at every width: a pixel's W channels are W / 8
// groups of 8, each group transposed on its own into its 8 lanes of the pixel. The
// channels-last kernels (DepthwiseNhwc) at the end need no transposes.
#include <cmath>
#include <cstring>

#include "backends/cpu/depthwise_channels.h"
#include "backends/cpu/isa/isa_kernels.h"
#include "backends/cpu/isa/simd.h"

namespace minfer::cpu::MINFER_ISA_NS {

namespace {

constexpr int W = kF32Lanes;  // channels per vector
constexpr int G = W / 8;      // groups of 8 channels
using VecW = float __attribute__((vector_size(4 * W)));

// Runs of n floats are read and written 8 at a time; the last block overlaps the one before
// it (rewriting the same values) rather than leave a scalar tail. The start of the block that
// covers float i (i a multiple of 8), and whether it is a whole block: only when n < 8 is not.
inline int64_t block_start(int64_t i, int64_t n) { return n < 8 ? 0 : min64(i, n - 8); }

// 8 rows of 8 floats, row l at p[l] + offset, into r[l]. When the rows hold only n < 8 floats,
// through a zero-filled copy (tiny planes only).
inline void load_rows(Vec8 (&r)[8], const float* const* p, int64_t offset, int64_t n) {
  if (n >= 8) {
#pragma GCC unroll 8
    for (int l = 0; l < 8; ++l) std::memcpy(&r[l], p[l] + offset, sizeof r[l]);
    return;
  }
  float tmp[8][8] = {};
  for (int l = 0; l < 8; ++l)
    for (int64_t k = 0; k < n; ++k) tmp[l][k] = p[l][offset + k];
  std::memcpy(r, tmp, sizeof r);
}

// Runs of n floats of W rows (row l at rows[l]) into W-float pixels: float i of row l goes to
// lane l of the pixel at dst(i). 8 floats of 8 rows at a time, through an 8x8 transpose.
template <typename Dst>
inline void transpose_runs(const float* const* rows, int64_t n, Dst dst) {
  for (int q = 0; q < G; ++q)
    for (int64_t i = 0; i < n; i += 8) {
      Vec8 v[8];
      const int64_t at = block_start(i, n);
      load_rows(v, rows + 8 * q, at, n);
      transpose8(v);
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) std::memcpy(dst(at + k) + 8 * q, &v[k], sizeof v[k]);
    }
}

// The scratch: the padded window [hp][wp] of W-float pixels and one spare pixel, the sums
// [np rounded up to 8][W], then the window position of each input pixel (int32).
struct Layout {
  int64_t hp, wp, rows, cols, n;
  size_t window, sums, offsets;  // in floats

  Layout(int64_t h, int64_t w, int64_t oh, int64_t ow, int k, int s) {
    const int p = k / 2;
    hp = (oh - 1) * s + k;  // the padded rows and columns that the outputs read,
    wp = (ow - 1) * s + k;
    rows = min64(h, hp - p);  // and the input rows and columns inside them
    cols = min64(w, wp - p);
    n = rows * w;  // the input pixels to copy (all columns of those rows)
    window = size_t(hp * wp + 1) * W;
    sums = size_t((oh * ow + 7) / 8 * 8) * W;
    offsets = size_t((n + 7) / 8 * 8);
  }
  size_t floats() const { return window + sums + offsets; }
};

// Output pixels per step. At stride 1, 4 neighbouring sums load each window pixel of their
// rows once, not once per FMA: 1.04-1.12x faster on a Zen 3 (MobileNet v2's and
// EfficientNet-B0's 3x3 planes); for 5x5, 4 rather than 2 (its 25 weights do not all fit the
// registers beside them) ran 5-11 % faster on a Zen 5 (28x28 to 112x112 planes, single layers;
// at MINFER_ISA=avx2 EfficientNet-B0's 5x5 layers 7-9 %). At stride 2 they share fewer pixels,
// and that measured 6-7 % slower than one at a time.
template <int S>
constexpr int kPixels = S == 1 ? 4 : 1;

// Output pixels c .. c + Px - 1 of a row (p: the window at pixel c's first tap; wp: the
// window's row length in pixels), each summing its taps in the same order as alone.
template <int K, int S, int Px>
__attribute__((always_inline)) inline void pixels_out(const float* p, int64_t wp, const VecW* w,
                                                      VecW bias, float* o) {
  VecW acc[Px];
#pragma GCC unroll 4
  for (int x = 0; x < Px; ++x) acc[x] = bias;
#pragma GCC unroll 5
  for (int i = 0; i < K; ++i)
#pragma GCC unroll 16
    for (int u = 0; u < (Px - 1) * S + K; ++u) {  // the window columns these pixels read
      VecW v;
      std::memcpy(&v, p + (i * wp + u) * W, sizeof v);
#pragma GCC unroll 4
      for (int x = 0; x < Px; ++x) {
        const int j = u - S * x;  // the tap column that window column u is for pixel x
        if (j >= 0 && j < K) acc[x] += w[i * K + j] * v;
      }
    }
#pragma GCC unroll 4
  for (int x = 0; x < Px; ++x) std::memcpy(o + x * W, &acc[x], sizeof acc[x]);
}

template <int K, int S>
void channels(const DepthwiseChannels& a) {
  constexpr int P = K / 2, T = K * K;
  const Layout g(a.h, a.w, a.oh, a.ow, K, S);
  const int64_t hp = g.hp, wp = g.wp, n = g.n, np = a.oh * a.ow, hw = a.h * a.w;
  float* in = a.scratch;
  float* out = in + g.window;
  int32_t* offset = reinterpret_cast<int32_t*>(out + g.sums);

  // Once per call, as every group overwrites only the window's inside: its zero border, and
  // where each input pixel goes (the columns that no output reads, and the slots past n of
  // the last block, go to the spare pixel).
  for (int64_t r = 0; r < hp; ++r) {
    float* row = in + r * wp * W;
    if (r < P || r >= P + g.rows) {
      fill(row, wp * W, 0.f);
    } else {
      fill(row, P * W, 0.f);
      fill(row + (P + g.cols) * W, (wp - P - g.cols) * W, 0.f);
    }
  }
  const int32_t spare = int32_t(hp * wp * W);
  for (int64_t i = 0, ih = 0, ic = 0; i < int64_t(g.offsets); ++i) {
    offset[i] = i < n && ic < g.cols ? int32_t(((ih + P) * wp + ic + P) * W) : spare;
    if (++ic == a.w) ic = 0, ++ih;
  }
  // A plane of fewer than 8 output pixels: zeros after them, transposed but not stored.
  fill(out + np * W, int64_t(g.sums) - np * W, 0.f);

  for (int64_t m0 = a.m0; m0 < a.m1; m0 += W) {
    // The lanes past the last channel compute channel m0 again (finite, never stored).
    const int lanes = int(min64(W, a.m1 - m0));
    const float *x[W], *z[W], *wrow[W];
    float* y[W];
    float b[W];
    for (int l = 0; l < W; ++l) {
      const int64_t m = m0 + (l < lanes ? l : 0);
      x[l] = a.x + m / a.mg * hw;
      z[l] = a.residual ? a.residual + m * np : nullptr;
      y[l] = a.y + m * np;
      wrow[l] = a.weights + m * T;
      b[l] = a.bias ? a.bias[m] : 0.f;
    }
    // Weights per tap, W channels wide: the transpose of the channels' [K * K] rows, per
    // call, as the weights may change.
    alignas(64) float wt[T][W];
    transpose_runs(wrow, T, [&](int64_t t) { return wt[t]; });
    VecW w[T], bias;
    std::memcpy(w, wt, sizeof w);
    std::memcpy(&bias, b, sizeof bias);

    // The window's inside: the planes read as one flat run of pixels, so that a short row (7
    // or 14 floats) leaves no scalar tail, each pixel stored where its row and column go.
    transpose_runs(x, n, [&](int64_t i) { return in + offset[i]; });

    for (int64_t r = 0; r < a.oh; ++r) {
      const float* row = in + r * S * wp * W;
      float* o = out + r * a.ow * W;
      int64_t c = 0;
      for (; c + kPixels<S> <= a.ow; c += kPixels<S>)
        pixels_out<K, S, kPixels<S>>(row + c * S * W, wp, w, bias, o + c * W);
      for (; c < a.ow; ++c) pixels_out<K, S, 1>(row + c * S * W, wp, w, bias, o + c * W);
    }
    if (a.nhwc_out) {  // the pixels as they are, the residual too
      const MaskF32 mask = first_lanes_f32(lanes);
      for (int64_t i = 0; i < np; ++i) {
        VF32 v = load_f32(out + i * W);
        if (a.residual) v = VF32(VecW(v) + VecW(load_f32(a.residual + i * a.m + m0, mask)));
        std::memcpy(out + i * W, &v, sizeof v);
      }
      if (a.act->enabled) apply_activation(*a.act, out, np * W);
      for (int64_t i = 0; i < np; ++i)
        store_f32(a.y + i * a.m + m0, load_f32(out + i * W), mask);
      continue;
    }
    // Without a residual to add first, the activation runs here: one call on whole vectors.
    if (!a.residual && a.act->enabled) apply_activation(*a.act, out, np * W);

    // Back into the planes, 8 pixels of one group at a time. (The overlapping last block reads
    // z after y's block before it was written: y must not be z, as a Conv's output never is.)
    for (int q = 0; q < G && 8 * q < lanes; ++q)
      for (int64_t i = 0; i < np; i += 8) {
        const int64_t at = block_start(i, np);
        Vec8 v[8];
#pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) std::memcpy(&v[k], out + (at + k) * W + 8 * q, sizeof v[k]);
        transpose8(v);
        if (a.residual) {
          Vec8 r[8];
          load_rows(r, z + 8 * q, at, np);
#pragma GCC unroll 8
          for (int l = 0; l < 8; ++l) v[l] += r[l];
        }
        if (np >= 8) {
#pragma GCC unroll 8
          for (int l = 0; l < 8; ++l)
            if (8 * q + l < lanes) std::memcpy(y[8 * q + l] + at, &v[l], sizeof v[l]);
        } else {
          for (int l = 0; l < 8 && 8 * q + l < lanes; ++l)
            for (int64_t k = 0; k < np; ++k) y[8 * q + l][k] = v[l][k];
        }
      }
    if (a.residual && a.act->enabled)
      for (int l = 0; l < lanes; ++l) apply_activation(*a.act, y[l], np);
  }
}

size_t scratch_floats(int64_t h, int64_t w, int64_t oh, int64_t ow, int64_t k, int64_t s) {
  return Layout(h, w, oh, ow, int(k), int(s)).floats();
}

// The channels-last kernels (DepthwiseNhwc): the input's pixels already hold their channels
// side by side, so a group of W channels of one pixel is one load, and there is no scratch.
// Per group: the weights per tap as W-channel vectors, then each output row, its tap rows
// inside the plane only; the columns whose taps all lie inside the row without checks
// (kPixels at a time, sharing loads), the few at the borders with them.

// W channels of one pixel: all W lanes, or (Tail: the last group, of fewer channels) the
// mask's lanes only, the rest read as zero and never written; the masked forms touch no
// memory past the channels, which may be the end of the tensor.
template <bool Tail>
__attribute__((always_inline)) inline VecW load_lanes(const float* p, [[maybe_unused]] MaskF32 m) {
  if constexpr (Tail) {
    return VecW(load_f32(p, m));
  } else {
    VecW v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
}

template <bool Tail>
__attribute__((always_inline)) inline void store_lanes(float* p, VecW v,
                                                       [[maybe_unused]] MaskF32 m) {
  if constexpr (Tail)
    store_f32(p, VF32(v), m);
  else
    std::memcpy(p, &v, sizeof v);
}

// One output row of one group of W channels, as its column loops read it.
struct NhwcRow {
  const float* x;  // the input row of tap row i0, at column 0 and the group's first channel
  int64_t xr, xc;  // the input's row and pixel strides (w * c and c; a padded plane's: below)
  int64_t c, w;    // the residual's pixel stride (the channels) and the input's width
  const VecW* wt;    // the group's K * K weight vectors
  int i0, rows;      // the tap rows inside the plane: i0 .. i0 + rows - 1
  VecW bias;
  const float* z;  // the residual's row at column 0 and the first channel, or null
  float* o;        // column q goes to o + (q - q0) * os: y's row (os = c) or a buffer (os = W)
  int64_t q0, os;
  float lo, hi;  // the clamp: -inf, inf for none
  MaskF32 mask;  // the group's channels (Tail)
};

// Adds the residual, clamps (keeping a NaN, as Clip does) and stores output column q.
template <bool Tail>
__attribute__((always_inline)) inline void nhwc_finish(const NhwcRow& g, VecW v, int64_t q) {
  if (g.z) v += load_lanes<Tail>(g.z + q * g.c, g.mask);
  v = v < g.lo ? VecW{} + g.lo : v;
  v = v > g.hi ? VecW{} + g.hi : v;
  store_lanes<Tail>(g.o + (q - g.q0) * g.os, v, g.mask);
}

// Output columns q .. q + Px - 1, all of whose taps lie inside the row (Full: and all K tap
// rows inside the plane), each summing its taps in the same order as alone. The tap loops are
// unrolled whole, a tap row outside the plane skipped by a test (the weights stay registers).
template <int K, int S, int Px, bool Tail, bool Full>
__attribute__((always_inline)) inline void nhwc_inside(const NhwcRow& g, const VecW* wt,
                                                       int64_t q) {
  const float* p = g.x + (q * S - K / 2) * g.xc;
  VecW acc[Px];
#pragma GCC unroll 4
  for (int x = 0; x < Px; ++x) acc[x] = g.bias;
#pragma GCC unroll 5
  for (int i = 0; i < K; ++i) {
    if (!Full && (i < g.i0 || i >= g.i0 + g.rows)) continue;
    // Stepped a pixel at a time: offsets u * c kept for every (i, u) would spill.
    const float* pu = p + (Full ? i : i - g.i0) * g.xr;
#pragma GCC unroll 16
    for (int u = 0; u < (Px - 1) * S + K; ++u, pu += g.xc) {  // the columns these pixels read
      const VecW v = load_lanes<Tail>(pu, g.mask);
#pragma GCC unroll 4
      for (int x = 0; x < Px; ++x) {
        const int j = u - S * x;  // the tap column that input column u is for pixel x
        if (j >= 0 && j < K) acc[x] += wt[i * K + j] * v;
      }
    }
  }
#pragma GCC unroll 4
  for (int x = 0; x < Px; ++x) nhwc_finish<Tail>(g, acc[x], q + x);
}

// Output column q near a border: its taps outside the row (or plane) skipped.
template <int K, int S, bool Tail>
__attribute__((always_inline)) inline void nhwc_border(const NhwcRow& g, const VecW* wt,
                                                       int64_t q) {
  const int64_t left = q * S - K / 2;  // the input column of tap column 0
  VecW acc = g.bias;
#pragma GCC unroll 5
  for (int i = 0; i < K; ++i) {
    if (i < g.i0 || i >= g.i0 + g.rows) continue;
#pragma GCC unroll 5
    for (int j = 0; j < K; ++j)
      if (left + j >= 0 && left + j < g.w)
        acc += wt[i * K + j] *
               load_lanes<Tail>(g.x + (i - g.i0) * g.xr + (left + j) * g.xc, g.mask);
  }
  nhwc_finish<Tail>(g, acc, q);
}

// A dilated conv's output column q: tap rows [i0, i1) inside the plane (top: tap row 0's input
// row), its tap columns checked against the row.
template <int K, int S, bool Tail>
__attribute__((always_inline)) inline VecW dilated_pixel(const DepthwiseNhwc& a, const NhwcRow& g,
                                                         int64_t m0, int64_t top, int i0, int i1,
                                                         int64_t q) {
  const int64_t d = a.d, left = q * S - K / 2 * d;
  VecW acc = g.bias;
  for (int i = i0; i < i1; ++i) {
    const float* row = a.x + (top + i * d) * a.w * a.c + m0;
#pragma GCC unroll 5
    for (int j = 0; j < K; ++j) {
      const int64_t iw = left + j * d;
      if (iw >= 0 && iw < a.w) acc += g.wt[i * K + j] * load_lanes<Tail>(row + iw * a.c, g.mask);
    }
  }
  return acc;
}

// Output columns [qa, qb) of row r of a dilated conv (a.d > 1; g: the group at channel m0, its
// weights, bias and mask set). Where every tap column lies inside the row, kDilatedPixels
// columns at a time on independent sums (a pixel's taps alone are one chain of dependent FMAs);
// the others one at a time.
constexpr int kDilatedPixels = 4;
template <int K, int S, bool Tail>
void dilated_cols(const DepthwiseNhwc& a, const NhwcRow& g, int64_t m0, int64_t r, int64_t qa,
                  int64_t qb) {
  constexpr int Px = kDilatedPixels;
  const int64_t d = a.d, p = K / 2 * d, top = r * S - p;
  // The tap rows inside the plane, and the columns [in0, in1) whose taps all lie inside the row.
  const int i0 = top >= 0 ? 0 : int(min64(K, (d - 1 - top) / d));
  const int i1 = top >= a.h ? i0 : int(max64(i0, min64(K, (a.h - 1 - top) / d + 1)));
  const int64_t in0 = (p + S - 1) / S, last = a.w - 1 + p - (K - 1) * d;
  const int64_t in1 = min64(qb, last >= 0 ? last / S + 1 : 0);
  int64_t q = qa;
  for (; q < qb && q < in0; ++q)
    nhwc_finish<Tail>(g, dilated_pixel<K, S, Tail>(a, g, m0, top, i0, i1, q), q);
  for (; q + Px <= in1; q += Px) {
    VecW acc[Px];
#pragma GCC unroll 4
    for (int x = 0; x < Px; ++x) acc[x] = g.bias;
    for (int i = i0; i < i1; ++i) {
      const float* row = a.x + ((top + i * d) * a.w + q * S - p) * a.c + m0;
#pragma GCC unroll 5
      for (int j = 0; j < K; ++j) {
        const VecW w = g.wt[i * K + j];
#pragma GCC unroll 4
        for (int x = 0; x < Px; ++x)
          acc[x] += w * load_lanes<Tail>(row + (x * S + j * d) * a.c, g.mask);
      }
    }
#pragma GCC unroll 4
    for (int x = 0; x < Px; ++x) nhwc_finish<Tail>(g, acc[x], q + x);
  }
  for (; q < qb; ++q)
    nhwc_finish<Tail>(g, dilated_pixel<K, S, Tail>(a, g, m0, top, i0, i1, q), q);
}

// Output columns [qa, qb) of a row; [in0, in1): the columns with every tap inside the row.
template <int K, int S, bool Tail, bool Full>
void nhwc_cols(const NhwcRow& row, int64_t qa, int64_t qb, int64_t in0, int64_t in1) {
  constexpr int Px = kPixels<S>;
  // Local copies, which no store to y can alias: the weights and scalars stay in registers.
  const NhwcRow g = row;
  VecW wt[K * K];
#pragma GCC unroll 25
  for (int t = 0; t < K * K; ++t) wt[t] = row.wt[t];
  int64_t q = qa;
  for (; q < qb && q < in0; ++q) nhwc_border<K, S, Tail>(g, wt, q);
  const int64_t e = min64(qb, in1);
  for (; q + Px <= e; q += Px) nhwc_inside<K, S, Px, Tail, Full>(g, wt, q);
  for (; q < e; ++q) nhwc_inside<K, S, 1, Tail, Full>(g, wt, q);
  for (; q < qb; ++q) nhwc_border<K, S, Tail>(g, wt, q);
}

// 5x5 at stride 1 on small planes (input and output of at most kWindowPlane rows and
// columns: 7x7, 14x14): most of their pixels lie near a border (on 7x7, 40 of 49), where
// nhwc_border sums one pixel at a time on one chain of dependent FMAs, and 25 weights in
// registers leave room for 2 pixels inside. Here each group's input rows are first copied into
// a zero-padded plane of W-float pixels, whose output pixels are then all inside: a window of
// kWindow columns at a time, its tap row's inputs loaded once for all of them, each weight
// read once per window, one chain per pixel, the taps in the same order as on the other paths.
// EfficientNet-B0's 5x5 layers on 14x14 and 7x7 10-13 % faster (Zen 5); the same for its and
// MobileNet v2's 3x3 ones (9 weights in registers, 4 pixels inside) 20-50 % slower, for the
// stride-2 ones 30-130 %.
template <int K, int S>
constexpr bool kWindowPays = K == 5 && S == 1;
constexpr int64_t kWindowPlane = 16;
constexpr int kWindow = W == 16 ? 8 : 4;  // on 32 registers, or 16
// The padded plane in pixels (2 of padding on each side for 5x5): its rows, and its columns
// for whole windows of an output row.
constexpr int64_t kWindowRows = kWindowPlane + 4;
constexpr int64_t kWindowCols = (kWindowPlane + kWindow - 1) / kWindow * kWindow + 4;

// The sums of one window of kWindow output columns into out (p: the window's first tap in the
// padded plane; xr: its row stride). A function of its own: inlined into the column loop, GCC
// gave each of the window's 60 loads (5x5) its own pointer, kept on the stack.
template <int K, int S>
__attribute__((noinline)) void window_sums(const float* p, int64_t xr, const VecW* wt, VecW bias,
                                           VecW* out) {
  constexpr int Q = kWindow;
  VecW acc[Q];
#pragma GCC unroll 8
  for (int x = 0; x < Q; ++x) acc[x] = bias;
#pragma GCC unroll 5
  for (int i = 0; i < K; ++i, p += xr) {
    VecW in[(Q - 1) * S + K];
#pragma GCC unroll 24
    for (int u = 0; u < (Q - 1) * S + K; ++u) std::memcpy(&in[u], p + u * W, sizeof(VecW));
#pragma GCC unroll 5
    for (int j = 0; j < K; ++j) {
      const VecW w = wt[i * K + j];
#pragma GCC unroll 8
      for (int x = 0; x < Q; ++x) acc[x] += w * in[x * S + j];
    }
  }
#pragma GCC unroll 8
  for (int x = 0; x < Q; ++x) out[x] = acc[x];
}

// Output columns [qa, qb) of a row from the padded plane (g.x: its tap row 0 at the padded
// column of input column 0; g.xc = W), a window at a time; a window's columns past qb are
// summed (from the padding) but not stored.
template <int K, int S, bool Tail>
void window_cols(const NhwcRow& g, int64_t qa, int64_t qb) {
  VecW out[kWindow];
  for (int64_t q = qa; q < qb; q += kWindow) {
    window_sums<K, S>(g.x + (q * S - K / 2) * W, g.xr, g.wt, g.bias, out);
    const int64_t n = min64(kWindow, qb - q);
    for (int x = 0; x < n; ++x) nhwc_finish<Tail>(g, out[x], q + x);
  }
}

// Input row ih of the group at channel m0 (its lanes by mask) as W-float pixels from dst.
template <bool Tail>
void copy_group_row(const DepthwiseNhwc& a, int64_t m0, MaskF32 mask, int64_t ih, float* dst) {
  const float* src = a.x + ih * a.w * a.c + m0;
  for (int64_t iw = 0; iw < a.w; ++iw)
    store_lanes<false>(dst + iw * W, load_lanes<Tail>(src + iw * a.c, mask), mask);
}

// The window path's padded plane of the group at channel m0 (its channels' lanes by mask), rows
// [pr0, pr1): padded row pr is input row pr - K / 2, column pc input column pc - K / 2, zero
// outside the input and past its channels.
template <int K>
void pad_group_plane(const DepthwiseNhwc& a, int64_t m0, MaskF32 mask, int64_t pr0,
                     int64_t pr1, float* padded) {
  constexpr int P = K / 2;
  constexpr int64_t row = kWindowCols * W;
  for (int64_t pr = pr0; pr < pr1; ++pr) {
    float* dst = padded + pr * row;
    const int64_t ih = pr - P;
    fill(dst, row, 0.f);
    if (ih >= 0 && ih < a.h) copy_group_row<true>(a, m0, mask, ih, dst + P * W);
  }
}

// Pixels of a row per apply_activation call for a smooth activation (a stack buffer).
constexpr int64_t kChunk = 32;

// Pixels a multiple of 1 KB apart (256, 512, 1024 channels: MobileNet v1's) put a group's
// pixels in 4 or fewer L1 sets: its tap rows thrash the L1 between the output rows that
// share them. There each group's input rows are first copied side by side (kCompactFloats at a
// time, whole rows): MobileNet v1's 14x14 layers of 512 channels took 0.036 ms, 0.022 with 528
// channels (Zen 5).
constexpr int64_t kAliasBytes = 1024, kCompactFloats = 8192;

// Input rows [ih0, ih1) of the group at channel m0 into compact (its lanes by mask), W floats a
// pixel.
template <bool Tail>
void compact_rows(const DepthwiseNhwc& a, int64_t m0, MaskF32 mask, int64_t ih0, int64_t ih1,
                  float* compact) {
  for (int64_t ih = ih0; ih < ih1; ++ih)
    copy_group_row<Tail>(a, m0, mask, ih, compact + (ih - ih0) * a.w * W);
}

// Output rows [r0, r1) of the group at channel m0 (g: its weights, bias and mask set).
// padded (the window path): the group's padded plane, its row 0 at input row -K / 2; else
// compact: the group's input rows from row compact_row0 side by side (compact_rows), or null.
template <int K, int S, bool Tail>
void nhwc_rows(const DepthwiseNhwc& a, NhwcRow& g, int64_t m0, int64_t in0, int64_t in1,
               bool smooth, float* buf, const float* padded, const float* compact = nullptr,
               int64_t compact_row0 = 0) {
  constexpr int P = K / 2;
  for (int64_t r = a.r0; r < a.r1; ++r) {
    const int64_t top = r * S - P;  // the input row of tap row 0
    const int64_t i0 = max64(0, -top), i1 = min64(K, a.h - top);
    g.i0 = int(i0);
    g.rows = int(max64(0, i1 - i0));
    if (padded)
      g.x = padded + (top + P) * g.xr + P * W;
    else if (compact)
      g.x = compact + (g.rows > 0 ? (top + i0 - compact_row0) * g.xr : 0);
    else
      g.x = a.x + (g.rows > 0 ? (top + i0) * g.xr : 0) + m0;
    g.z = a.residual ? a.residual + r * a.ow * a.c + m0 : nullptr;
    float* y = a.y + r * a.ow * a.c + m0;
    auto cols = [&](int64_t qa, int64_t qb) {
      if (a.d > 1) return dilated_cols<K, S, Tail>(a, g, m0, r, qa, qb);
      if constexpr (kWindowPays<K, S>)
        if (padded) return window_cols<K, S, Tail>(g, qa, qb);
      if (g.rows == K)
        nhwc_cols<K, S, Tail, true>(g, qa, qb, in0, in1);
      else
        nhwc_cols<K, S, Tail, false>(g, qa, qb, in0, in1);
    };
    if (!smooth) {  // straight into y, any clamp in registers
      g.o = y, g.q0 = 0, g.os = a.c;
      cols(0, a.ow);
      continue;
    }
    // A smooth activation on whole vectors: the sums (with the residual) into buf, then
    // activated and copied out, kChunk pixels at a time.
    g.o = buf, g.os = W;
    for (int64_t q0 = 0; q0 < a.ow; q0 += kChunk) {
      const int64_t q1 = min64(a.ow, q0 + kChunk);
      g.q0 = q0;
      cols(q0, q1);
      apply_activation(*a.act, buf, (q1 - q0) * W);
      for (int64_t q = q0; q < q1; ++q)
        store_lanes<Tail>(y + q * a.c, load_lanes<false>(buf + (q - q0) * W, g.mask), g.mask);
    }
  }
}

template <int K, int S>
void nhwc(const DepthwiseNhwc& a) {
  constexpr int P = K / 2, T = K * K;
  // The output columns whose taps all lie inside the row: from ceil(P / S) to the last whose
  // last tap, q * S + P, is at most w - 1.
  const int64_t in0 = min64((P + S - 1) / S, a.ow);
  const int64_t in1 = a.w - 1 - P >= 0 ? max64(in0, min64(a.ow, (a.w - 1 - P) / S + 1)) : in0;
  const bool clamp = a.act->enabled && a.act->kind == Activation::Kind::Clamp;
  const bool smooth = a.act->enabled && !clamp;
  alignas(64) float buf[kChunk * W];
  // (A tail group's lanes past its channels are stored nowhere; zeros keep them finite.)
  if (smooth) fill(buf, kChunk * W, 0.f);
  // The window path (the output's size too: more padding after may give more output columns
  // than input ones) and its padded plane's rows that output rows [r0, r1) read.
  const bool window = kWindowPays<K, S> && a.d == 1 && max64(a.w, a.ow) <= kWindowPlane &&
                      max64(a.h, a.oh) <= kWindowPlane && a.r1 > a.r0;
  alignas(64) float padded[kWindowPays<K, S> ? kWindowRows * kWindowCols * W : 1];
  const int64_t pad_r0 = a.r0 * S, pad_r1 = (a.r1 - 1) * S + K;
  // Pixels that alias (kAliasBytes): the output rows whose input rows fit kCompactFloats.
  const int64_t compact_rows_max = kCompactFloats / (a.w * W);
  const bool compact = !window && a.d == 1 && a.c * int64_t(sizeof(float)) % kAliasBytes == 0 &&
                       compact_rows_max >= K && a.r1 > a.r0;
  const int64_t compact_out_rows = compact ? (compact_rows_max - K) / S + 1 : 0;
  alignas(64) float compacted[kCompactFloats];
  NhwcRow g;
  g.xr = window ? kWindowCols * W : compact ? a.w * W : a.w * a.c;
  g.xc = window || compact ? W : a.c;
  g.c = a.c;
  g.w = a.w;
  g.lo = clamp ? a.act->lo : -INFINITY;
  g.hi = clamp ? a.act->hi : INFINITY;
  for (int64_t m0 = a.c0; m0 < a.c1; m0 += W) {
    const int lanes = int(min64(W, a.c1 - m0));
    // Weights per tap, W channels wide, per call (the weights may change between runs): the
    // transpose of the channels' [K * K] rows. The lanes past the last channel repeat channel
    // m0 (only ever multiplied by zeros, never stored).
    const float* wrow[W];
    alignas(64) float wt[T][W];
    alignas(64) float b[W] = {};
    for (int l = 0; l < W; ++l) wrow[l] = a.weights + (m0 + (l < lanes ? l : 0)) * T;
    transpose_runs(wrow, T, [&](int64_t t) { return wt[t]; });
    if (a.bias)
      for (int l = 0; l < lanes; ++l) b[l] = a.bias[m0 + l];
    VecW w[T];
    std::memcpy(w, wt, sizeof w);
    std::memcpy(&g.bias, b, sizeof g.bias);
    g.wt = w;
    g.mask = first_lanes_f32(lanes);
    if (window) pad_group_plane<K>(a, m0, g.mask, pad_r0, pad_r1, padded);
    const float* plane = window ? padded : nullptr;
    if (compact) {
      // A band of output rows at a time, from a copy of the input rows they read.
      for (int64_t r0 = a.r0; r0 < a.r1; r0 += compact_out_rows) {
        DepthwiseNhwc band = a;
        band.r0 = r0;
        band.r1 = min64(a.r1, r0 + compact_out_rows);
        const int64_t ih0 = max64(0, band.r0 * S - P);
        const int64_t ih1 = min64(a.h, (band.r1 - 1) * S - P + K);
        if (lanes == W) {
          compact_rows<false>(a, m0, g.mask, ih0, ih1, compacted);
          nhwc_rows<K, S, false>(band, g, m0, in0, in1, smooth, buf, nullptr, compacted, ih0);
        } else {
          compact_rows<true>(a, m0, g.mask, ih0, ih1, compacted);
          nhwc_rows<K, S, true>(band, g, m0, in0, in1, smooth, buf, nullptr, compacted, ih0);
        }
      }
      continue;
    }
    if (lanes == W)
      nhwc_rows<K, S, false>(a, g, m0, in0, in1, smooth, buf, plane);
    else
      nhwc_rows<K, S, true>(a, g, m0, in0, in1, smooth, buf, plane);
  }
}

}  // namespace

extern const f32::DepthwiseChannelKernels kDepthwiseChannels;
const f32::DepthwiseChannelKernels kDepthwiseChannels{
    static_cast<Isa>(MINFER_ISA_LEVEL),
    W,
    {{channels<3, 1>, channels<3, 2>},
     {channels<5, 1>, channels<5, 2>},
     {channels<7, 1>, channels<7, 2>}},
    scratch_floats,
    {{nhwc<3, 1>, nhwc<3, 2>}, {nhwc<5, 1>, nhwc<5, 2>}}};

}  // namespace minfer::cpu::MINFER_ISA_NS
