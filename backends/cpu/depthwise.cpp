#include "backends/cpu/depthwise.h"

#include <algorithm>
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

// out[q] = sum over taps t of w[t] * in[q + offset[t]], for q < n: 16 at a time in two
// independent accumulators, so that the FMA latency is hidden; the rest one by one.
template <int Taps>
void flat_sums(const float* in, const int64_t* offset, const float* w, int64_t n, float* out) {
  int64_t q = 0;
  for (; q + 16 <= n; q += 16) {
    Vec8 lo = {}, hi = {}, a, b;
    for (int t = 0; t < Taps; ++t) {
      const float* p = in + offset[t] + q;
      std::memcpy(&a, p, sizeof a);
      std::memcpy(&b, p + 8, sizeof b);
      lo += w[t] * a;
      hi += w[t] * b;
    }
    std::memcpy(out + q, &lo, sizeof lo);
    std::memcpy(out + q + 8, &hi, sizeof hi);
  }
  for (; q + 8 <= n; q += 8) {
    Vec8 acc = {}, a;
    for (int t = 0; t < Taps; ++t) {
      std::memcpy(&a, in + offset[t] + q, sizeof a);
      acc += w[t] * a;
    }
    std::memcpy(out + q, &acc, sizeof acc);
  }
  for (; q < n; ++q) {
    float acc = 0.f;
    for (int t = 0; t < Taps; ++t) acc += w[t] * in[offset[t] + q];
    out[q] = acc;
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
  float* sums = a.scratch + rows * row;  // after the padded plane
  if constexpr (S == 1) {
    // Output (r, c) reads padded (r + i, c + j): on the flat plane, q + i * row + j for
    // q = r * row + c. So one long loop computes every q < oh * row (the columns past ow of
    // each row are wasted, 2P of them), each tap a fixed offset: vectorized, no row loop.
    int64_t offset[K * K];
    for (int i = 0; i < K; ++i)
      for (int j = 0; j < K; ++j) offset[i * K + j] = i * row + j;
    // The wasted columns of the last row read up to K - 1 floats past the plane: defined.
    std::fill(sums, sums + K, 0.f);
    flat_sums<K * K>(a.scratch, offset, w, a.oh * row, sums);
  } else {
    // Stride 2, output (r, c): even or odd column (c + j / 2) of padded row 2r + i. Per row.
    int64_t offset[K * K];
    for (int i = 0; i < K; ++i)
      for (int j = 0; j < K; ++j) offset[i * K + j] = i * row + (j & 1 ? half : 0) + j / 2;
    for (int64_t r = 0; r < a.oh; ++r)
      flat_sums<K * K>(a.scratch + 2 * r * row, offset, w, a.ow, sums + r * a.ow);
  }
  // Bias, residual and activation, into the output.
  const int64_t stride = S == 1 ? row : a.ow;
  for (int64_t r = 0; r < a.oh; ++r) {
    float* y = a.y + r * a.ow;
    const float* sum = sums + r * stride;
    const float* z = a.residual ? a.residual + r * a.ow : nullptr;
    if (z)
      for (int64_t c = 0; c < a.ow; ++c) y[c] = sum[c] + a.bias + z[c];
    else
      for (int64_t c = 0; c < a.ow; ++c) y[c] = sum[c] + a.bias;
  }
  a.act->apply(a.y, a.oh * a.ow);  // the whole plane at once: its rows may be short
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
  // The padded plane in the larger of the two layouts, then the sums: at most one padded
  // row per output row (stride 1), and K floats of slack for the taps of the wasted columns.
  const size_t row = size_t(scratch_row(w, int(k), 2)), rows = size_t(h + 2 * (k / 2));
  return rows * row + rows * row + size_t(k);
}

}  // namespace minfer::cpu
