#include "backends/cpu/depthwise.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/vec8.h"

namespace minfer::cpu {

namespace {

// Floats per row of the scratch plane: the padded row, or for stride 2 its even columns then
// its odd ones, each (w + 2P + 1) / 2 long.
constexpr int64_t scratch_row(int64_t w, int k, int stride) {
  const int64_t padded = w + 2 * (k / 2);
  return stride == 1 ? padded : 2 * ((padded + 1) / 2);
}

// One output row: y[c] = clamp(sum over taps t of w[t] * in[c + offset[t]] + bias + z[c]) for
// c < n (z may be null; the clamp keeps a NaN, as Clip does). 16 at a time in two independent
// accumulators, so that the FMA latency is hidden; then 8; the rest one by one.
template <int Taps>
void row_out(const float* in, const int64_t* offset, const float* w, int64_t n, float bias,
             const float* z, float lo, float hi, float* y) {
  auto finish = [&](Vec8 v, int64_t c) {
    if (z) {
      Vec8 r;
      std::memcpy(&r, z + c, sizeof r);
      v += r;
    }
    v = v < lo ? Vec8{} + lo : v;
    v = v > hi ? Vec8{} + hi : v;
    std::memcpy(y + c, &v, sizeof v);
  };
  int64_t c = 0;
  for (; c + 16 <= n; c += 16) {
    Vec8 v0 = Vec8{} + bias, v1 = v0, a, b;
    for (int t = 0; t < Taps; ++t) {
      const float* p = in + offset[t] + c;
      std::memcpy(&a, p, sizeof a);
      std::memcpy(&b, p + 8, sizeof b);
      v0 += w[t] * a;
      v1 += w[t] * b;
    }
    finish(v0, c);
    finish(v1, c + 8);
  }
  for (; c + 8 <= n; c += 8) {
    Vec8 v = Vec8{} + bias, a;
    for (int t = 0; t < Taps; ++t) {
      std::memcpy(&a, in + offset[t] + c, sizeof a);
      v += w[t] * a;
    }
    finish(v, c);
  }
  for (; c < n; ++c) {
    float v = bias;
    for (int t = 0; t < Taps; ++t) v += w[t] * in[offset[t] + c];
    if (z) v += z[c];
    v = v < lo ? lo : v;
    y[c] = v > hi ? hi : v;
  }
}

// Output rows r and r + 1 of a K x K plane at once (in: the scratch at padded row S * r, row:
// its row stride, col[j]: where tap column j starts in a row): each input row's shifted
// vectors are loaded once for both output rows that use it, with the weights held in
// registers. A row at a time, every FMA loads its input; two rows at a time took MobileNet
// v2's stride-1 planes (112x112 to 28x28) 1.24-1.37x faster on a Zen 3, stride 2 1.03-1.1x.
// Each output sums its taps in row_out's order, so the results are the same.
template <int K, int S, int V>
__attribute__((always_inline)) inline void two_rows_chunk(const float* in, int64_t row,
                                                          const int64_t* col, const Vec8* wv,
                                                          float bias, int64_t c,
                                                          Vec8 (&acc)[2][V]) {
#pragma GCC unroll 2
  for (int v = 0; v < V; ++v) acc[0][v] = acc[1][v] = Vec8{} + bias;
#pragma GCC unroll 8
  for (int u = 0; u < S + K; ++u) {
#pragma GCC unroll 5
    for (int j = 0; j < K; ++j) {
      Vec8 a[V];
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) std::memcpy(&a[v], in + u * row + col[j] + c + 8 * v, 32);
#pragma GCC unroll 2
      for (int r = 0; r < 2; ++r) {
        const int i = u - S * r;  // the kernel row that input row u is for output row r
        if (i < 0 || i >= K) continue;
#pragma GCC unroll 2
        for (int v = 0; v < V; ++v) acc[r][v] += wv[i * K + j] * a[v];
      }
    }
  }
}

template <int K, int S>
void two_rows_out(const float* in, int64_t row, const int64_t* col, const float* w, int64_t n,
                  float bias, const float* z0, const float* z1, float lo, float hi, float* y0,
                  float* y1) {
  Vec8 wv[K * K];
  for (int t = 0; t < K * K; ++t) wv[t] = Vec8{} + w[t];
  auto finish = [&](Vec8 v, const float* z, float* y) {
    if (z) {
      Vec8 r;
      std::memcpy(&r, z, sizeof r);
      v += r;
    }
    v = v < lo ? Vec8{} + lo : v;
    v = v > hi ? Vec8{} + hi : v;
    std::memcpy(y, &v, sizeof v);
  };
  int64_t c = 0;
  for (; c + 16 <= n; c += 16) {
    Vec8 acc[2][2];
    two_rows_chunk<K, S, 2>(in, row, col, wv, bias, c, acc);
    for (int v = 0; v < 2; ++v) {
      finish(acc[0][v], z0 ? z0 + c + 8 * v : nullptr, y0 + c + 8 * v);
      finish(acc[1][v], z1 ? z1 + c + 8 * v : nullptr, y1 + c + 8 * v);
    }
  }
  for (; c + 8 <= n; c += 8) {
    Vec8 acc[2][1];
    two_rows_chunk<K, S, 1>(in, row, col, wv, bias, c, acc);
    finish(acc[0][0], z0 ? z0 + c : nullptr, y0 + c);
    finish(acc[1][0], z1 ? z1 + c : nullptr, y1 + c);
  }
  for (; c < n; ++c) {
    for (int r = 0; r < 2; ++r) {
      float v = bias;
      for (int i = 0; i < K; ++i)
        for (int j = 0; j < K; ++j) v += w[i * K + j] * in[(S * r + i) * row + col[j] + c];
      const float* z = r ? z1 : z0;
      if (z) v += z[c];
      v = v < lo ? lo : v;
      (r ? y1 : y0)[c] = v > hi ? hi : v;
    }
  }
}

template <int K, int S>
void plane(const DepthwisePlane& a) {
  constexpr int P = K / 2;
  const int64_t padded = a.w + 2 * P, half = (padded + 1) / 2, row = scratch_row(a.w, K, S);
  // Only the input rows that output rows read: (oh - 1) * S + K of the padded plane.
  const int64_t rows = (a.oh - 1) * S + K;
  for (int64_t r = 0; r < rows; ++r) {
    float* dst = a.scratch + r * row;
    const int64_t ih = r - P;
    if (ih < 0 || ih >= a.h) {
      std::fill(dst, dst + row, 0.f);
      continue;
    }
    const float* src = a.x + ih * a.w;
    if constexpr (S == 1) {
      std::fill(dst, dst + P, 0.f);
      std::copy(src, src + a.w, dst + P);
      std::fill(dst + P + a.w, dst + row, 0.f);
    } else {
      // even[i] = padded column 2i = input column 2i - P; odd[i]: 2i + 1 - P (0 outside).
      float* even = dst;
      float* odd = dst + half;
      const int64_t lo = std::min<int64_t>((P + 1) / 2, half);
      const int64_t hi = std::max<int64_t>(lo, std::min<int64_t>((a.w + P) / 2, half));
      auto at = [&](int64_t col) { return col >= 0 && col < a.w ? src[col] : 0.f; };
      for (int64_t i = 0; i < lo; ++i) even[i] = at(2 * i - P), odd[i] = at(2 * i + 1 - P);
      const float* s0 = src - P;
      for (int64_t i = lo; i < hi; ++i) {  // both columns inside the row: a plain deinterleave
        even[i] = s0[2 * i];
        odd[i] = s0[2 * i + 1];
      }
      for (int64_t i = hi; i < half; ++i) even[i] = at(2 * i - P), odd[i] = at(2 * i + 1 - P);
    }
  }
  float w[K * K];
  for (int t = 0; t < K * K; ++t) w[t] = a.weights[t];
  // Output (r, c) reads padded row r * S + i at column c + j (stride 1), or at even or odd
  // column c + j / 2 (stride 2): from the row's start, each tap a fixed offset.
  int64_t offset[K * K];
  for (int i = 0; i < K; ++i)
    for (int j = 0; j < K; ++j)
      offset[i * K + j] = i * row + (S == 1 ? j : (j & 1 ? half : 0) + j / 2);
  // A clamp in the row's registers; a smooth activation afterwards, over the whole plane.
  const bool clamp = a.act->enabled && a.act->is_clamp();
  const float lo = clamp ? a.act->lo : -INFINITY, hi = clamp ? a.act->hi : INFINITY;
  int64_t r = 0;
  if constexpr (K == 3) {  // (5x5: 25 weights do not fit the registers beside the sums)
    int64_t col[K];
    for (int j = 0; j < K; ++j) col[j] = offset[j];
    for (; r + 2 <= a.oh; r += 2) {
      const float* z = a.residual ? a.residual + r * a.ow : nullptr;
      two_rows_out<K, S>(a.scratch + S * r * row, row, col, w, a.ow, a.bias, z,
                         z ? z + a.ow : nullptr, lo, hi, a.y + r * a.ow, a.y + (r + 1) * a.ow);
    }
  }
  for (; r < a.oh; ++r)
    row_out<K * K>(a.scratch + S * r * row, offset, w, a.ow, a.bias,
                   a.residual ? a.residual + r * a.ow : nullptr, lo, hi, a.y + r * a.ow);
  if (!a.act->is_clamp()) a.act->apply(a.y, a.oh * a.ow);  // whole plane: rows may be short
}

}  // namespace

DepthwisePlaneFn depthwise_plane_kernel(int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh,
                                        int64_t dw, int64_t pad_t, int64_t pad_l, int64_t h,
                                        int64_t w, int64_t oh, int64_t ow) {
  if (kh != kw || sh != sw || dh != 1 || dw != 1 || (kh != 3 && kh != 5) || (sh != 1 && sh != 2))
    return nullptr;
  const int64_t p = kh / 2;
  // The padded plane must hold every tap: no more padding after than K / 2.
  if (pad_t != p || pad_l != p || oh < 1 || ow < 1 || (oh - 1) * sh + kh > h + 2 * p ||
      (ow - 1) * sw + kw > w + 2 * p)
    return nullptr;
  if (kh == 3) return sh == 1 ? plane<3, 1> : plane<3, 2>;
  return sh == 1 ? plane<5, 1> : plane<5, 2>;
}

size_t depthwise_scratch_floats(int64_t h, int64_t w, int64_t k) {
  // The padded plane, in the larger of the two layouts.
  const size_t row = size_t(scratch_row(w, int(k), 2)), rows = size_t(h + 2 * (k / 2));
  return rows * row;
}

}  // namespace minfer::cpu
