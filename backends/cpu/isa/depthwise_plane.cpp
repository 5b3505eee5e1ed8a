// The depthwise plane kernels of depthwise.h, one source for every ISA level (compiled once per
// level by cmake/MinferIsa.cmake): rows are vectorized W floats at a time, W = 8 on ymm and 16
// on zmm (then one 8-float step on zmm before the scalar tail). Every output sums its taps in
// the same order at every width.
#include <cmath>
#include <cstring>

#include "backends/cpu/depthwise.h"
#include "backends/cpu/isa/isa_kernels.h"
#include "backends/cpu/isa/simd.h"

namespace minfer::cpu::MINFER_ISA_NS {

namespace {

constexpr int W = kF32Lanes;
using VecW = float __attribute__((vector_size(4 * W)));

template <typename V>
constexpr int kLanes = int(sizeof(V) / sizeof(float));

template <typename V>
__attribute__((always_inline)) inline V load(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// y = clamp(v + z) (z may be null; the clamp keeps a NaN, as Clip does).
template <typename V>
__attribute__((always_inline)) inline void finish(V v, const float* z, float lo, float hi,
                                                  float* y) {
  if (z) v += load<V>(z);
  v = v < lo ? V{} + lo : v;
  v = v > hi ? V{} + hi : v;
  std::memcpy(y, &v, sizeof v);
}

// Acc vectors of one output row from column c: y[c] = clamp(sum over taps t of w[t] *
// in[c + offset[t]] + bias + z[c]); independent accumulators hide the FMA latency.
template <int Taps, typename V, int Acc>
__attribute__((always_inline)) inline void row_chunk(const float* in, const int64_t* offset,
                                                     const float* w, int64_t c, float bias,
                                                     const float* z, float lo, float hi,
                                                     float* y) {
  constexpr int L = kLanes<V>;
  V v[Acc];
#pragma GCC unroll 2
  for (int a = 0; a < Acc; ++a) v[a] = V{} + bias;
  for (int t = 0; t < Taps; ++t) {
    const float* p = in + offset[t] + c;
#pragma GCC unroll 2
    for (int a = 0; a < Acc; ++a) v[a] += w[t] * load<V>(p + L * a);
  }
#pragma GCC unroll 2
  for (int a = 0; a < Acc; ++a) finish(v[a], z ? z + c + L * a : nullptr, lo, hi, y + c + L * a);
}

// One output row: two vectors at a time, then one, then (zmm) 8 floats, the rest one by one.
template <int Taps>
void row_out(const float* in, const int64_t* offset, const float* w, int64_t n, float bias,
             const float* z, float lo, float hi, float* y) {
  int64_t c = 0;
  for (; c + 2 * W <= n; c += 2 * W) row_chunk<Taps, VecW, 2>(in, offset, w, c, bias, z, lo, hi, y);
  for (; c + W <= n; c += W) row_chunk<Taps, VecW, 1>(in, offset, w, c, bias, z, lo, hi, y);
  if constexpr (W > 8)
    for (; c + 8 <= n; c += 8) row_chunk<Taps, Vec8, 1>(in, offset, w, c, bias, z, lo, hi, y);
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
template <int K, int S, typename V, int Acc>
__attribute__((always_inline)) inline void two_rows_chunk(const float* in, int64_t row,
                                                          const int64_t* col, const V* wv,
                                                          float bias, int64_t c,
                                                          V (&acc)[2][Acc]) {
  constexpr int L = kLanes<V>;
#pragma GCC unroll 2
  for (int v = 0; v < Acc; ++v) acc[0][v] = acc[1][v] = V{} + bias;
#pragma GCC unroll 8
  for (int u = 0; u < S + K; ++u) {
#pragma GCC unroll 5
    for (int j = 0; j < K; ++j) {
      V a[Acc];
#pragma GCC unroll 2
      for (int v = 0; v < Acc; ++v) a[v] = load<V>(in + u * row + col[j] + c + L * v);
#pragma GCC unroll 2
      for (int r = 0; r < 2; ++r) {
        const int i = u - S * r;  // the kernel row that input row u is for output row r
        if (i < 0 || i >= K) continue;
#pragma GCC unroll 2
        for (int v = 0; v < Acc; ++v) acc[r][v] += wv[i * K + j] * a[v];
      }
    }
  }
}

template <int K, int S, typename V, int Acc>
__attribute__((always_inline)) inline void two_rows_step(const float* in, int64_t row,
                                                         const int64_t* col, const V* wv,
                                                         float bias, int64_t c, const float* z0,
                                                         const float* z1, float lo, float hi,
                                                         float* y0, float* y1) {
  constexpr int L = kLanes<V>;
  V acc[2][Acc];
  two_rows_chunk<K, S, V, Acc>(in, row, col, wv, bias, c, acc);
#pragma GCC unroll 2
  for (int v = 0; v < Acc; ++v) {
    const int64_t at = c + L * v;
    finish(acc[0][v], z0 ? z0 + at : nullptr, lo, hi, y0 + at);
    finish(acc[1][v], z1 ? z1 + at : nullptr, lo, hi, y1 + at);
  }
}

template <int K, int S>
void two_rows_out(const float* in, int64_t row, const int64_t* col, const float* w, int64_t n,
                  float bias, const float* z0, const float* z1, float lo, float hi, float* y0,
                  float* y1) {
  VecW wv[K * K];
  for (int t = 0; t < K * K; ++t) wv[t] = VecW{} + w[t];
  int64_t c = 0;
  for (; c + 2 * W <= n; c += 2 * W)
    two_rows_step<K, S, VecW, 2>(in, row, col, wv, bias, c, z0, z1, lo, hi, y0, y1);
  for (; c + W <= n; c += W)
    two_rows_step<K, S, VecW, 1>(in, row, col, wv, bias, c, z0, z1, lo, hi, y0, y1);
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

// dst[0, n) = src[0, n) inline: rows are short (56 to 112 floats), and a memcpy call per row
// took a fifth of a 56x56 plane's time.
static inline void copy_floats(float* dst, const float* src, int64_t n) {
  int64_t i = 0;
  for (; i + kF32Lanes <= n; i += kF32Lanes) store_f32(dst + i, load_f32(src + i));
  if (i == n) return;
  const MaskF32 m = first_lanes_f32(int(n - i));
  store_f32(dst + i, load_f32(src + i, m), m);
}

#if MINFER_ISA_WIDE
// The stride-2 scratch row on zmm: even[i] = x[2i - p], odd[i] = x[2i + 1 - p] for i < half,
// 0 outside the row's w floats, 16 of each per step from two loads and two permutes. The first
// step loads x[0, 32) and leaves zero the lanes left of the row; the middle ones need no masks.
// A 112x112 plane 10 % faster than GCC's vectorization of the plain loop, which left the row's
// edges and tail scalar, and the masks and an expanding load on every step cost 20 % more than
// this.
static inline __mmask16 columns_inside(int64_t first, int64_t w) {  // first + j in [0, w)
  const int64_t lo = min64(max64(-first, 0), 16), hi = max64(min64(w - first, 16), lo);
  return static_cast<__mmask16>(((1u << hi) - 1) & ~((1u << lo) - 1));
}
static inline void deinterleave_row(const float* x, int64_t w, int64_t p, int64_t half,
                                    float* even, float* odd) {
  const __m512i even_lanes =
      _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd_lanes = _mm512_add_epi32(even_lanes, _mm512_set1_epi32(1));
  {
    const __m512i left = _mm512_set1_epi32(int32_t(p));  // lane l: column 2l - p (+ 1)
    const VF32 a = _mm512_maskz_loadu_ps(columns_inside(0, w), x);
    const VF32 b = _mm512_maskz_loadu_ps(columns_inside(16, w), x + 16);
    const MaskF32 m = first_lanes_f32(int(min64(half, kF32Lanes)));
    const auto inside = [](int64_t n) { return static_cast<__mmask16>(0xffffu << n); };
    store_f32(even,
              _mm512_maskz_permutex2var_ps(inside((p + 1) / 2), a,
                                           _mm512_sub_epi32(even_lanes, left), b),
              m);
    store_f32(odd,
              _mm512_maskz_permutex2var_ps(inside(p / 2), a, _mm512_sub_epi32(odd_lanes, left),
                                           b),
              m);
  }
  int64_t i = kF32Lanes;
  for (; i + kF32Lanes <= half && 2 * i - p + 32 <= w; i += kF32Lanes) {
    const VF32 a = load_f32(x + 2 * i - p), b = load_f32(x + 2 * i - p + 16);
    store_f32(even + i, _mm512_permutex2var_ps(a, even_lanes, b));
    store_f32(odd + i, _mm512_permutex2var_ps(a, odd_lanes, b));
  }
  for (; i < half; i += kF32Lanes) {  // the row's end
    const int64_t first = 2 * i - p;
    const VF32 a = _mm512_maskz_loadu_ps(columns_inside(first, w), x + first);
    const VF32 b = _mm512_maskz_loadu_ps(columns_inside(first + 16, w), x + first + 16);
    const MaskF32 m = first_lanes_f32(int(min64(half - i, kF32Lanes)));
    store_f32(even + i, _mm512_permutex2var_ps(a, even_lanes, b), m);
    store_f32(odd + i, _mm512_permutex2var_ps(a, odd_lanes, b), m);
  }
}

// The direct kernels' sums, each starting at the bias.
template <int Rows, int Acc>
__attribute__((always_inline)) inline void start_rows(VF32 (&acc)[Rows][Acc], float bias) {
#pragma GCC unroll 4
  for (int v = 0; v < Acc; ++v)
#pragma GCC unroll 2
    for (int r = 0; r < Rows; ++r) acc[r][v] = splat_f32(bias);
}

// The direct kernels' sums of output rows r .. r + Rows - 1 from column c: the residual added,
// clamped, stored (the last vector's lanes by `last`).
template <int Rows, int Acc>
__attribute__((always_inline)) inline void store_rows(const VF32 (&acc)[Rows][Acc], int64_t c,
                                                      MaskF32 last, const float* const* z,
                                                      float lo, float hi, float* const* y) {
  const VF32 vlo = splat_f32(lo), vhi = splat_f32(hi);
#pragma GCC unroll 2
  for (int r = 0; r < Rows; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < Acc; ++v) {
      const MaskF32 m = v + 1 < Acc ? first_lanes_f32(kF32Lanes) : last;
      const int64_t at = c + kF32Lanes * v;
      VF32 t = acc[r][v];
      if (z[r]) t = add_f32(t, load_f32(z[r] + at, m));
      t = min_f32(vhi, max_f32(vlo, t));  // Clip's NaN behaviour: a NaN stays NaN
      store_f32(y[r] + at, t, m);
    }
  }
}

// Stride 1, 3x3, on zmm, from the input rows themselves: tap column j of the 16 outputs from
// column c is x[c + j - 1, c + j + 15), one load masked to the row's columns (zero outside:
// the padding). Copying each row into a zero-padded scratch row first took a quarter of a
// 56x56 plane's time. Rows = 2: output rows r and r + 1 from input rows r - 1 .. r + 2, each
// loaded once for both; Rows = 1: a last odd row. in[u]: input row r - 1 + u, or a row of
// zeros outside the plane. Each output sums its taps in row_out's order.
template <int Rows, int Acc>
__attribute__((always_inline)) inline void s1_rows_step(const float* const* in,
                                                        const __mmask16 (&inside)[3][Acc],
                                                        const VF32* wv, float bias, int64_t c,
                                                        MaskF32 last, const float* const* z,
                                                        float lo, float hi, float* const* y) {
  VF32 acc[Rows][Acc];
  start_rows(acc, bias);
#pragma GCC unroll 4
  for (int u = 0; u < Rows + 2; ++u) {
#pragma GCC unroll 3
    for (int j = 0; j < 3; ++j) {
      VF32 a[Acc];
#pragma GCC unroll 4
      for (int v = 0; v < Acc; ++v)
        a[v] = _mm512_maskz_loadu_ps(inside[j][v], in[u] + c + kF32Lanes * v + j - 1);
#pragma GCC unroll 2
      for (int r = 0; r < Rows; ++r) {
        const int i = u - r;  // the kernel row that input row u is for output row r
        if (i < 0 || i >= 3) continue;
#pragma GCC unroll 4
        for (int v = 0; v < Acc; ++v) acc[r][v] = fmadd_f32(wv[i * 3 + j], a[v], acc[r][v]);
      }
    }
  }
  store_rows<Rows, Acc>(acc, c, last, z, lo, hi, y);
}

// Stride 2, 3x3, on zmm, from the input rows themselves: for the 16 outputs from column c,
// one input row's x[2c, 2c + 32) in two loads gives tap 1 (its even columns) and tap 2 (its
// odd ones) by two permutes, and tap 0, x[2c - 1 + 2l], is tap 2 one lane later, its lane 0
// the previous 16 outputs' last tap 2 (zero left of the row). Copying the rows' even and odd
// columns to a scratch plane first took more than half the kernel's time. Rows = 2: output
// rows r and r + 1 from input rows 2r - 1 .. 2r + 3, each loaded once for both; Rows = 1:
// a last odd row. in[u]: input row 2r - 1 + u, or a row of zeros outside the plane. Each
// output sums its taps in row_out's order.
template <int Rows, int Acc>
__attribute__((always_inline)) inline void s2_rows_step(const float* const* in,
                                                        const __mmask16 (&inside)[3][Acc],
                                                        const VF32* wv, float bias, int64_t c,
                                                        MaskF32 last, const float* const* z,
                                                        float lo, float hi, float* const* y) {
  const __m512i even_lanes =
      _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd_lanes = _mm512_add_epi32(even_lanes, _mm512_set1_epi32(1));
  VF32 acc[Rows][Acc];
  start_rows(acc, bias);
#pragma GCC unroll 5
  for (int u = 0; u < 2 * Rows + 1; ++u) {
    const float* x = in[u];
    VF32 previous = c > 0 ? splat_f32(x[2 * c - 1]) : zero_f32();
#pragma GCC unroll 4
    for (int v = 0; v < Acc; ++v) {
      const float* p = x + 2 * (c + kF32Lanes * v);
      const VF32 a = _mm512_maskz_loadu_ps(inside[0][v], p);
      const VF32 b = _mm512_maskz_loadu_ps(inside[1][v], p + kF32Lanes);
      VF32 tap[3];
      tap[1] = _mm512_permutex2var_ps(a, even_lanes, b);
      tap[2] = _mm512_permutex2var_ps(a, odd_lanes, b);
      tap[0] = _mm512_castsi512_ps(_mm512_maskz_alignr_epi32(
          0xffff, _mm512_castps_si512(tap[2]), _mm512_castps_si512(previous), 15));
      previous = tap[2];
#pragma GCC unroll 2
      for (int r = 0; r < Rows; ++r) {
        const int i = u - 2 * r;  // the kernel row that input row u is for output row r
        if (i < 0 || i >= 3) continue;
#pragma GCC unroll 3
        for (int j = 0; j < 3; ++j) acc[r][v] = fmadd_f32(wv[i * 3 + j], tap[j], acc[r][v]);
      }
    }
  }
  store_rows<Rows, Acc>(acc, c, last, z, lo, hi, y);
}

// Columns [c, c + Acc vectors) of every output row of a stride-S plane, two rows at a time
// (input rows S * r - 1 .. S * r + S + 1). The masks of the block's loads (the input columns
// inside the row) are the same for all its rows: made once here (made per step, they cost
// more than the loads).
template <int S, int Acc>
void direct_block(const DepthwisePlane& a, const float* zeros, const VF32* wv, int64_t c,
                  MaskF32 last, float lo, float hi) {
  __mmask16 inside[3][Acc];  // stride 1: [tap column][vector]; 2: [first or second half][vector]
#pragma GCC unroll 4
  for (int v = 0; v < Acc; ++v) {
    const int64_t first = S * (c + kF32Lanes * v);
    for (int j = 0; j < (S == 1 ? 3 : 2); ++j)
      inside[j][v] = S == 1 ? columns_inside(first + j - 1, a.w)
                            : columns_inside(first + kF32Lanes * j, a.w);
  }
  auto input_row = [&](int64_t ih) { return ih >= 0 && ih < a.h ? a.x + ih * a.w : zeros; };
  auto rows = [&]<int Rows>(int64_t r) {
    const float* in[S * Rows + 1 + (S == 1)];
    for (int u = 0; u < S * Rows + 1 + (S == 1); ++u) in[u] = input_row(S * r - 1 + u);
    const float* z[Rows];
    float* y[Rows];
    for (int i = 0; i < Rows; ++i) {
      z[i] = a.residual ? a.residual + (r + i) * a.ow : nullptr;
      y[i] = a.y + (r + i) * a.ow;
    }
    if constexpr (S == 1)
      s1_rows_step<Rows, Acc>(in, inside, wv, a.bias, c, last, z, lo, hi, y);
    else
      s2_rows_step<Rows, Acc>(in, inside, wv, a.bias, c, last, z, lo, hi, y);
  };
  int64_t r = a.r0;
  for (; r + 2 <= a.r1; r += 2) rows.template operator()<2>(r);
  if (r < a.r1) rows.template operator()<1>(r);
}

// The 3x3 plane at stride S (1 or 2) in blocks of up to 4 vectors of columns, the last vector
// masked; the scratch holds one row of zeros, the padding's rows.
template <int S>
void plane_3x3_direct(const DepthwisePlane& a) {
  if (a.r1 <= a.r0) return;
  float* zeros = a.scratch;
  fill(zeros, a.w, 0.f);
  VF32 wv[9];
  for (int t = 0; t < 9; ++t) wv[t] = splat_f32(a.weights[t]);
  const bool clamp = a.act->enabled && a.act->kind == Activation::Kind::Clamp;
  const float lo = clamp ? a.act->lo : -INFINITY, hi = clamp ? a.act->hi : INFINITY;
  for (int64_t c = 0; c < a.ow; c += 4 * kF32Lanes) {
    const int64_t cols = min64(a.ow - c, 4 * kF32Lanes);
    const int64_t vectors = (cols + kF32Lanes - 1) / kF32Lanes;
    const MaskF32 last = first_lanes_f32(int(cols - kF32Lanes * (vectors - 1)));
    if (vectors == 4)
      direct_block<S, 4>(a, zeros, wv, c, last, lo, hi);
    else if (vectors == 3)
      direct_block<S, 3>(a, zeros, wv, c, last, lo, hi);
    else if (vectors == 2)
      direct_block<S, 2>(a, zeros, wv, c, last, lo, hi);
    else
      direct_block<S, 1>(a, zeros, wv, c, last, lo, hi);
  }
  if (a.act->enabled && !clamp)
    apply_activation(*a.act, a.y + a.r0 * a.ow, (a.r1 - a.r0) * a.ow);
}
#endif

// 3x3 on zmm: from the input rows (plane_3x3_direct); else from a zero-padded copy of them
// (at stride 2, each row's even and odd columns apart).
template <int K, int S>
void plane(const DepthwisePlane& a) {
  constexpr bool kDirect = K == 3 && MINFER_ISA_WIDE;
#if MINFER_ISA_WIDE
  if constexpr (kDirect) return plane_3x3_direct<S>(a);
#endif
  if (a.r1 <= a.r0) return;
  constexpr int P = K / 2;
  const int64_t padded = a.w + 2 * P, half = (padded + 1) / 2;
  const int64_t row = depthwise_scratch_row(a.w, K, S);
  // Only the padded rows that output rows [r0, r1) read, at their place in the scratch.
  for (int64_t r = a.r0 * S; r < (a.r1 - 1) * S + K; ++r) {
    float* dst = a.scratch + r * row;
    const int64_t ih = r - P;
    if (ih < 0 || ih >= a.h) {
      fill(dst, row, 0.f);
      continue;
    }
    const float* src = a.x + ih * a.w;
    if constexpr (S == 1) {
      fill(dst, P, 0.f);
      copy_floats(dst + P, src, a.w);
      fill(dst + P + a.w, row - P - a.w, 0.f);
    } else {
      // even[i] = padded column 2i = input column 2i - P; odd[i]: 2i + 1 - P (0 outside).
      float* even = dst;
      float* odd = dst + half;
#if MINFER_ISA_WIDE
      deinterleave_row(src, a.w, P, half, even, odd);
#else
      const int64_t lo = min64((P + 1) / 2, half);
      const int64_t hi = max64(lo, min64((a.w + P) / 2, half));
      auto at = [&](int64_t col) { return col >= 0 && col < a.w ? src[col] : 0.f; };
      for (int64_t i = 0; i < lo; ++i) even[i] = at(2 * i - P), odd[i] = at(2 * i + 1 - P);
      const float* s0 = src - P;
      for (int64_t i = lo; i < hi; ++i) {  // both columns inside the row: a plain deinterleave
        even[i] = s0[2 * i];
        odd[i] = s0[2 * i + 1];
      }
      for (int64_t i = hi; i < half; ++i) even[i] = at(2 * i - P), odd[i] = at(2 * i + 1 - P);
#endif
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
  const bool clamp = a.act->enabled && a.act->kind == Activation::Kind::Clamp;
  const float lo = clamp ? a.act->lo : -INFINITY, hi = clamp ? a.act->hi : INFINITY;
  int64_t r = a.r0;
  if constexpr (K == 3 && !kDirect) {  // (5x5: 25 weights do not fit beside the sums)
    int64_t col[K];
    for (int j = 0; j < K; ++j) col[j] = offset[j];
    for (; r + 2 <= a.r1; r += 2) {
      const float* z = a.residual ? a.residual + r * a.ow : nullptr;
      two_rows_out<K, S>(a.scratch + S * r * row, row, col, w, a.ow, a.bias, z,
                         z ? z + a.ow : nullptr, lo, hi, a.y + r * a.ow, a.y + (r + 1) * a.ow);
    }
  }
  for (; r < a.r1; ++r)
    row_out<K * K>(a.scratch + S * r * row, offset, w, a.ow, a.bias,
                   a.residual ? a.residual + r * a.ow : nullptr, lo, hi, a.y + r * a.ow);
  // (After the rows, which may be short.)
  if (a.act->enabled && !clamp)
    apply_activation(*a.act, a.y + a.r0 * a.ow, (a.r1 - a.r0) * a.ow);
}

}  // namespace

extern const f32::DepthwisePlanes kDepthwisePlanes;
const f32::DepthwisePlanes kDepthwisePlanes{
    static_cast<Isa>(MINFER_ISA_LEVEL),
    {{plane<3, 1>, plane<3, 2>}, {plane<5, 1>, plane<5, 2>}, {plane<7, 1>, plane<7, 2>}}};

}  // namespace minfer::cpu::MINFER_ISA_NS
