#include "backends/cpu/depthwise_channels.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/vec8.h"

namespace minfer::cpu {

namespace {

constexpr int L = kDepthwiseLanes;

// Runs of n floats are read and written 8 at a time; the last block overlaps the one before
// it (rewriting the same values) rather than leave a scalar tail. The start of the block that
// covers float i (i a multiple of 8), and whether it is a whole block: only when n < 8 is not.
inline int64_t block_start(int64_t i, int64_t n) { return n < L ? 0 : std::min(i, n - L); }

// 8 rows of 8 floats, row l at p[l] + offset, into r[l]. When the rows hold only n < 8 floats,
// through a zero-filled copy (tiny planes only).
inline void load_rows(Vec8 (&r)[L], const float* const* p, int64_t offset, int64_t n) {
  if (n >= L) {
#pragma GCC unroll 8
    for (int l = 0; l < L; ++l) std::memcpy(&r[l], p[l] + offset, sizeof r[l]);
    return;
  }
  float tmp[L][L] = {};
  for (int l = 0; l < L; ++l)
    for (int64_t k = 0; k < n; ++k) tmp[l][k] = p[l][offset + k];
  std::memcpy(r, tmp, sizeof r);
}

// r[i][j] <-> r[j][i]: the AVX 8x8 transpose (unpack, shuffle, then swap of 128-bit halves).
inline void transpose8(Vec8 (&r)[L]) {
  Vec8 t[L], u[L];
#pragma GCC unroll 8
  for (int i = 0; i < L; i += 2) {
    t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
#pragma GCC unroll 8
  for (int i = 0; i < L; i += 4)
    for (int j = 0; j < 2; ++j) {
      u[i + 2 * j] = __builtin_shufflevector(t[i + j], t[i + j + 2], 0, 1, 8, 9, 4, 5, 12, 13);
      u[i + 2 * j + 1] =
          __builtin_shufflevector(t[i + j], t[i + j + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    }
#pragma GCC unroll 8
  for (int j = 0; j < 4; ++j) {
    r[j] = __builtin_shufflevector(u[j], u[j + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    r[j + 4] = __builtin_shufflevector(u[j], u[j + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}

// The scratch: the padded window [hp][wp] of 8-float pixels and one spare pixel, the sums
// [np rounded up to 8][8], then the window position of each input pixel (int32).
struct Layout {
  int64_t hp, wp, rows, cols, n;
  size_t window, sums, offsets;  // in floats

  Layout(int64_t h, int64_t w, int64_t oh, int64_t ow, int k, int s) {
    const int p = k / 2;
    hp = (oh - 1) * s + k;  // the padded rows and columns that the outputs read,
    wp = (ow - 1) * s + k;
    rows = std::min(h, hp - p);  // and the input rows and columns inside them
    cols = std::min(w, wp - p);
    n = rows * w;  // the input pixels to copy (all columns of those rows)
    window = size_t(hp * wp + 1) * L;
    sums = size_t((oh * ow + L - 1) / L * L) * L;
    offsets = size_t((n + L - 1) / L * L);
  }
  size_t floats() const { return window + sums + offsets; }
};

// Output pixels per step. At stride 1, 4 neighbouring 3x3 sums (2 for 5x5, whose weights do
// not fit the registers) load each window pixel of their rows once, not once per FMA: 1.04-1.12x
// faster on a Zen 3 (MobileNet v2's and EfficientNet-B0's planes). At stride 2 they share
// fewer pixels, and that measured 6-7 % slower than one at a time.
template <int K, int S>
constexpr int kPixels = S == 1 ? (K == 3 ? 4 : 2) : 1;

// Output pixels c .. c + Px - 1 of a row (p: the window at pixel c's first tap; wp: the
// window's row length in pixels), each summing its taps in the same order as alone.
template <int K, int S, int Px>
__attribute__((always_inline)) inline void pixels_out(const float* p, int64_t wp, const Vec8* w,
                                                      Vec8 bias, float* o) {
  Vec8 acc[Px];
#pragma GCC unroll 4
  for (int x = 0; x < Px; ++x) acc[x] = bias;
#pragma GCC unroll 5
  for (int i = 0; i < K; ++i)
#pragma GCC unroll 16
    for (int u = 0; u < (Px - 1) * S + K; ++u) {  // the window columns these pixels read
      Vec8 v;
      std::memcpy(&v, p + (i * wp + u) * L, sizeof v);
#pragma GCC unroll 4
      for (int x = 0; x < Px; ++x) {
        const int j = u - S * x;  // the tap column that window column u is for pixel x
        if (j >= 0 && j < K) acc[x] += w[i * K + j] * v;
      }
    }
#pragma GCC unroll 4
  for (int x = 0; x < Px; ++x) std::memcpy(o + x * L, &acc[x], sizeof acc[x]);
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
    float* row = in + r * wp * L;
    if (r < P || r >= P + g.rows) {
      std::fill(row, row + wp * L, 0.f);
    } else {
      std::fill(row, row + P * L, 0.f);
      std::fill(row + (P + g.cols) * L, row + wp * L, 0.f);
    }
  }
  const int32_t spare = int32_t(hp * wp * L);
  for (int64_t i = 0, ih = 0, ic = 0; i < int64_t(g.offsets); ++i) {
    offset[i] = i < n && ic < g.cols ? int32_t(((ih + P) * wp + ic + P) * L) : spare;
    if (++ic == a.w) ic = 0, ++ih;
  }
  // A plane of fewer than 8 output pixels: zeros after them, transposed but not stored.
  std::fill(out + np * L, out + g.sums, 0.f);

  for (int64_t m0 = a.m0; m0 < a.m1; m0 += L) {
    // The lanes past the last channel compute channel m0 again (finite, never stored).
    const int lanes = int(std::min<int64_t>(L, a.m1 - m0));
    const float *x[L], *z[L], *wrow[L];
    float* y[L];
    float b[L];
    for (int l = 0; l < L; ++l) {
      const int64_t m = m0 + (l < lanes ? l : 0);
      x[l] = a.x + m / a.mg * hw;
      z[l] = a.residual ? a.residual + m * np : nullptr;
      y[l] = a.y + m * np;
      wrow[l] = a.weights + m * T;
      b[l] = a.bias ? a.bias[m] : 0.f;
    }
    // Weights per tap, 8 channels wide: the transpose of the 8 channels' [K * K] rows, per
    // call, as the weights may change.
    Vec8 w[T], bias;
    for (int t = 0; t < T; t += L) {
      Vec8 block[L];
      const int64_t at = block_start(t, T);
      load_rows(block, wrow, at, T);
      transpose8(block);
      std::copy_n(block, L, w + at);
    }
    std::memcpy(&bias, b, sizeof bias);

    // The window's inside: the 8 planes read as one flat run of pixels, 8 pixels at a time,
    // so that a short row (7 or 14 floats) leaves no scalar tail; a transpose turns the 8
    // channels' runs into 8 pixels of 8 channels, each stored where its row and column go.
    for (int64_t i = 0; i < n; i += L) {
      Vec8 v[L];
      const int64_t at = block_start(i, n);
      load_rows(v, x, at, n);
      transpose8(v);
#pragma GCC unroll 8
      for (int k = 0; k < L; ++k) std::memcpy(in + offset[at + k], &v[k], sizeof v[k]);
    }

    for (int64_t r = 0; r < a.oh; ++r) {
      const float* row = in + r * S * wp * L;
      float* o = out + r * a.ow * L;
      int64_t c = 0;
      for (; c + kPixels<K, S> <= a.ow; c += kPixels<K, S>)
        pixels_out<K, S, kPixels<K, S>>(row + c * S * L, wp, w, bias, o + c * L);
      for (; c < a.ow; ++c) pixels_out<K, S, 1>(row + c * S * L, wp, w, bias, o + c * L);
    }
    // Without a residual to add first, the activation runs here: one call on whole vectors.
    if (!a.residual && a.act->enabled) a.act->apply(out, np * L);

    // Back into the planes, 8 pixels at a time. (The overlapping last block reads z after y's
    // block before it was written: y must not be z, as a Conv's output never is.)
    for (int64_t q = 0; q < np; q += L) {
      const int64_t at = block_start(q, np);
      Vec8 v[L];
      std::memcpy(v, out + at * L, sizeof v);
      transpose8(v);
      if (a.residual) {
        Vec8 r[L];
        load_rows(r, z, at, np);
#pragma GCC unroll 8
        for (int l = 0; l < L; ++l) v[l] += r[l];
      }
      if (np >= L) {
#pragma GCC unroll 8
        for (int l = 0; l < L; ++l)
          if (l < lanes) std::memcpy(y[l] + at, &v[l], sizeof v[l]);
      } else {
        for (int l = 0; l < lanes; ++l)
          for (int64_t k = 0; k < np; ++k) y[l][k] = v[l][k];
      }
    }
    if (a.residual && a.act->enabled)
      for (int l = 0; l < lanes; ++l) a.act->apply(y[l], np);
  }
}

}  // namespace

DepthwiseChannelsFn depthwise_channels_kernel(int64_t k, int64_t s) {
  if (k == 3) return s == 1 ? channels<3, 1> : s == 2 ? channels<3, 2> : nullptr;
  if (k == 5) return s == 1 ? channels<5, 1> : s == 2 ? channels<5, 2> : nullptr;
  return nullptr;
}

size_t depthwise_channels_scratch_floats(int64_t h, int64_t w, int64_t oh, int64_t ow, int64_t k,
                                         int64_t s) {
  return Layout(h, w, oh, ow, int(k), int(s)).floats();
}

bool depthwise_channels_pays(int64_t oh, int64_t ow) {
  // One thread, MobileNet v2 / EfficientNet-B0 layers: 1.2x (28x28) to 4x (7x7) faster, and
  // 2x to 9x at stride 2 (whose plane kernel splits columns); about even at 56x56, 0.7x at
  // 112x112 where the plane kernel's rows are long enough to vectorize well.
  return oh * ow <= 32 * 32;
}

}  // namespace minfer::cpu
