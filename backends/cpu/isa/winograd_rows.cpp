// Winograd F(4x4, 3x3)'s input and output transforms (backends/cpu/winograd.h) for a run of up
// to one vector of tiles side by side in one tile row (or in several, for narrow planes), the
// tiles in the lanes, one source for every ISA level (compiled once per level by
// cmake/MinferIsa.cmake).
//
// Side by side, tile l's window starts 4 * l columns after the first, so the window rows of
// the whole run are one contiguous span of 4 * n + 2 input columns: each is transformed down
// its 6 rows whole vectors at a time (B^T d), and only then split into the six columns of
// every tile (lane l of column j is element 4 * l + j) by permutes, for the transform along
// the rows. The output transform runs the other way: the four columns of every tile's output
// row are interleaved back into one contiguous output row, so that the bias, the residual and
// the clamp are applied and stored a vector at a time. (The tiles of a whole block at a time,
// 8 to a vector, with a transpose per window row and scalar stores took 21 % of ResNet-18's
// time on a Zen 4.)
#include "backends/cpu/isa/isa_kernels.h"
#include "backends/cpu/isa/simd.h"

namespace minfer::cpu::MINFER_ISA_NS {

namespace {

constexpr int kLanes = kF32Lanes;
constexpr int kIn = 6, kTile = 4;
// A run's span of columns, in whole vectors: 4 * kLanes + 2 floats and the vector they end in.
constexpr int kSpanVectors = 5;
constexpr int kSpan = kSpanVectors * kLanes;

// The lanes [lo, hi) of a vector (any ints: clamped to the vector).
inline MaskF32 lanes_between(int64_t lo, int64_t hi) {
  const int l = int(max64(0, min64(kLanes, lo))), h = int(max64(0, min64(kLanes, hi)));
#if MINFER_ISA_WIDE
  return static_cast<MaskF32>(first_lanes_f32(h) & ~first_lanes_f32(l));
#else
  return _mm256_andnot_si256(first_lanes_f32(l), first_lanes_f32(h));
#endif
}

inline MaskF32 both(MaskF32 a, MaskF32 b) {
#if MINFER_ISA_WIDE
  return static_cast<MaskF32>(a & b);
#else
  return _mm256_and_si256(a, b);
#endif
}

inline MaskF32 either(MaskF32 a, MaskF32 b) {
#if MINFER_ISA_WIDE
  return static_cast<MaskF32>(a | b);
#else
  return _mm256_or_si256(a, b);
#endif
}

// Lanes of b where the mask is set, of a elsewhere.
inline VF32 blend_f32(MaskF32 m, VF32 a, VF32 b) {
#if MINFER_ISA_WIDE
  return _mm512_mask_blend_ps(m, a, b);
#else
  return _mm256_blendv_ps(a, b, _mm256_castsi256_ps(m));
#endif
}

// The lanes of v where the mask is set, stored at p. (AVX2's masked store, vmaskmovps, is
// microcoded on AMD's cores and its stores cost some tens of cycles: a full store of v
// merged with what p holds instead, where nothing else writes p's other lanes meanwhile.)
inline void merge_store(float* p, VF32 v, MaskF32 m) {
#if MINFER_ISA_WIDE
  store_f32(p, v, m);
#else
  store_f32(p, blend_f32(m, load_f32(p), v));
#endif
}

// e[j] lane l = t[4 * l + j], j < 6, from t[0, 4 * kLanes + 2).
inline void split_columns(const float* t, VF32 e[kIn]) {
#if MINFER_ISA_WIDE
  const VF32 a0 = load_f32(t), a1 = load_f32(t + 16), a2 = load_f32(t + 32), a3 = load_f32(t + 48);
  // Lanes 0-7 from a0:a1 and 8-15 from a2:a3, by the same indexes (4 * l + j mod 32).
  const __m512i every_fourth = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16,
                                                 20, 24, 28);
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    const __m512i idx = _mm512_add_epi32(every_fourth, _mm512_set1_epi32(j));
    e[j] = _mm512_mask_blend_ps(0xff00, _mm512_permutex2var_ps(a0, idx, a1),
                                _mm512_permutex2var_ps(a2, idx, a3));
  }
  // Columns 4 and 5 are columns 0 and 1 one tile on: lanes shifted down by one, the last lane
  // from past the 16th tile.
  // (The all-lanes masked form: GCC 12's _mm512_alignr_epi32 warns, maybe-uninitialized.)
  auto next_tile = [](VF32 column, float last) {
    return _mm512_castsi512_ps(_mm512_maskz_alignr_epi32(
        0xffff, _mm512_castps_si512(_mm512_set1_ps(last)), _mm512_castps_si512(column), 1));
  };
  e[4] = next_tile(e[0], t[64]);
  e[5] = next_tile(e[1], t[65]);
#else
  // a_v holds tiles 2v (low half) and 2v + 1 (high half): a 4x4 transpose within the halves
  // gives each column j for the tiles 0, 2, 4, 6 | 1, 3, 5, 7, which one permute puts in order.
  const VF32 a0 = load_f32(t), a1 = load_f32(t + 8), a2 = load_f32(t + 16), a3 = load_f32(t + 24);
  const VF32 t0 = _mm256_unpacklo_ps(a0, a1), t1 = _mm256_unpackhi_ps(a0, a1);
  const VF32 t2 = _mm256_unpacklo_ps(a2, a3), t3 = _mm256_unpackhi_ps(a2, a3);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  e[0] = _mm256_permutevar8x32_ps(_mm256_shuffle_ps(t0, t2, 0x44), order);
  e[1] = _mm256_permutevar8x32_ps(_mm256_shuffle_ps(t0, t2, 0xee), order);
  e[2] = _mm256_permutevar8x32_ps(_mm256_shuffle_ps(t1, t3, 0x44), order);
  e[3] = _mm256_permutevar8x32_ps(_mm256_shuffle_ps(t1, t3, 0xee), order);
  const __m256i next = _mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 7);
  e[4] = _mm256_blend_ps(_mm256_permutevar8x32_ps(e[0], next), _mm256_set1_ps(t[32]), 0x80);
  e[5] = _mm256_blend_ps(_mm256_permutevar8x32_ps(e[1], next), _mm256_set1_ps(t[33]), 0x80);
#endif
}

// The inverse of split_columns for 4 columns: out[4 * l + q] = o[q] lane l, as 4 vectors.
inline void join_columns(const VF32 o[kTile], VF32 out[kTile]) {
#if MINFER_ISA_WIDE
  // Pairs (o0, o1) and (o2, o3) interleaved, then the pairs' pairs.
  const __m512i pair_lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i pair_hi = _mm512_add_epi32(pair_lo, _mm512_set1_epi32(8));
  const VF32 u01[2] = {_mm512_permutex2var_ps(o[0], pair_lo, o[1]),
                       _mm512_permutex2var_ps(o[0], pair_hi, o[1])};
  const VF32 u23[2] = {_mm512_permutex2var_ps(o[2], pair_lo, o[3]),
                       _mm512_permutex2var_ps(o[2], pair_hi, o[3])};
  const __m512i quad_lo =
      _mm512_setr_epi32(0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23);
  const __m512i quad_hi = _mm512_add_epi32(quad_lo, _mm512_set1_epi32(8));
  out[0] = _mm512_permutex2var_ps(u01[0], quad_lo, u23[0]);
  out[1] = _mm512_permutex2var_ps(u01[0], quad_hi, u23[0]);
  out[2] = _mm512_permutex2var_ps(u01[1], quad_lo, u23[1]);
  out[3] = _mm512_permutex2var_ps(u01[1], quad_hi, u23[1]);
#else
  // Tiles 0, 2, 4, 6 | 1, 3, 5, 7 in each vector, then a 4x4 transpose within the halves.
  const __m256i order = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  VF32 r[kTile];
#pragma GCC unroll 4
  for (int q = 0; q < kTile; ++q) r[q] = _mm256_permutevar8x32_ps(o[q], order);
  const VF32 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const VF32 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  out[0] = _mm256_shuffle_ps(t0, t2, 0x44);
  out[1] = _mm256_shuffle_ps(t0, t2, 0xee);
  out[2] = _mm256_shuffle_ps(t1, t3, 0x44);
  out[3] = _mm256_shuffle_ps(t1, t3, 0xee);
#endif
}

// v = B^T d along one axis (the points 0, +-1, +-2 and infinity; as winograd.cpp's scalar form).
inline void input_1d(const VF32 d[kIn], VF32 v[kIn]) {
  const VF32 four = splat_f32(4.f), five = splat_f32(5.f), two = splat_f32(2.f);
  v[0] = four * d[0] - five * d[2] + d[4];
  v[1] = d[3] + d[4] - four * (d[1] + d[2]);
  v[2] = four * (d[1] - d[2]) - d[3] + d[4];
  v[3] = two * (d[3] - d[1]) - d[2] + d[4];
  v[4] = two * (d[1] - d[3]) - d[2] + d[4];
  v[5] = four * d[1] - five * d[3] + d[5];
}

// o = A^T m along one axis: six in, four out.
inline void output_1d(const VF32 m[kIn], VF32 o[kTile]) {
  const VF32 a = m[1] + m[2], b = m[1] - m[2], c = m[3] + m[4], e = m[3] - m[4];
  o[0] = m[0] + a + c;
  o[1] = b + splat_f32(2.f) * e;
  o[2] = a + splat_f32(4.f) * c;
  o[3] = b + splat_f32(8.f) * e + m[5];
}

void input_rows(const f32::WinogradInputRun& r) {
  // The spans' rows after B^T down them, part k's tile l at lane k * n + l: the even parts in
  // t[0], the odd ones in t[1] (side by side, a part's last two columns are the next one's
  // first two, from other input rows).
  alignas(64) float t[2][kIn][kSpan];
  for (auto& rows : t)
    for (auto& row : rows) fill(row, kSpan, 0.f);  // lanes past the spans: finite, never stored
  const int64_t n = r.n, span = kTile * n + 2, w = r.w, h = r.h;
  const int64_t point_stride = r.point_stride;
  const MaskF32 store_mask = first_lanes_f32(int(r.parts * n));
  MaskF32 odd = first_lanes_f32(0);  // the odd parts' lanes
  for (int k = 1; k < r.parts; k += 2) odd = either(odd, lanes_between(k * n, (k + 1) * n));
  for (int64_t c = 0; c < r.channels; ++c) {
    const float* plane = r.x + c * r.x_channel;
    for (int k = 0; k < r.parts; ++k) {
      const int64_t first = kTile * k * n, ih0 = r.ih0 + kTile * k;
      for (int64_t pos = first / kLanes * kLanes; pos < first + span; pos += kLanes) {
        const int64_t col = r.iw0 + pos - first;  // the input column of the vector's lane 0
        const MaskF32 in_span = lanes_between(first - pos, first + span - pos);
        const MaskF32 inside = both(in_span, lanes_between(-col, w - col));
        // Within the plane's columns (most vectors), plain loads: masked ones cost more on
        // AMD's cores. (The lanes past the span are not stored.)
        const bool within = col >= 0 && col + kLanes <= w;
        VF32 d[kIn], v[kIn];
#pragma GCC unroll 6
        for (int i = 0; i < kIn; ++i) {
          const int64_t ih = ih0 + i;
          const float* row = plane + ih * w + col;
          // (Masked lanes are not read: a vector left of column 0 stays within the plane.)
          d[i] = ih < 0 || ih >= h ? zero_f32() : within ? load_f32(row) : load_f32(row, inside);
        }
        input_1d(d, v);
#pragma GCC unroll 6
        for (int i = 0; i < kIn; ++i) merge_store(t[k & 1][i] + pos, v[i], in_span);
      }
    }
    float* dst = r.v + c * r.v_channel;
#pragma GCC unroll 6
    for (int i = 0; i < kIn; ++i) {
      VF32 e[kIn], v[kIn];
      split_columns(t[0][i], e);
      if (r.parts > 1) {
        VF32 e_odd[kIn];
        split_columns(t[1][i], e_odd);
#pragma GCC unroll 6
        for (int j = 0; j < kIn; ++j) e[j] = blend_f32(odd, e[j], e_odd[j]);
      }
      input_1d(e, v);
#pragma GCC unroll 6
      for (int j = 0; j < kIn; ++j) {
        float* p = dst + (i * kIn + j) * point_stride;
        r.whole_vectors ? store_f32(p, v[j]) : store_f32(p, v[j], store_mask);
      }
    }
  }
}

void output_rows(const f32::WinogradOutputRun& r) {
  const int64_t n = r.n, point_stride = r.point_stride, ld = r.ld;
  const MaskF32 load_mask = first_lanes_f32(int(r.parts * n));
  const bool whole = r.parts * n == kLanes;
  const VF32 lo = splat_f32(r.lo), hi = splat_f32(r.hi);
  for (int64_t c = 0; c < r.channels; ++c) {
    const float* m = r.m + c * r.m_channel;
    // A^T down the tiles' columns: 4 rows of 6 columns.
    VF32 t[kTile][kIn];
#pragma GCC unroll 6
    for (int j = 0; j < kIn; ++j) {
      VF32 col[kIn], o[kTile];
#pragma GCC unroll 6
      for (int i = 0; i < kIn; ++i) {
        const float* p = m + (i * kIn + j) * point_stride;
        col[i] = whole ? load_f32(p) : load_f32(p, load_mask);
      }
      output_1d(col, o);
#pragma GCC unroll 4
      for (int i = 0; i < kTile; ++i) t[i][j] = o[i];
    }
    const VF32 bias = splat_f32(r.bias ? r.bias[c] : 0.f);
    float* y = r.y + c * r.y_channel;
    const float* z = r.z ? r.z + c * r.y_channel : nullptr;
    for (int i = 0; i < kTile; ++i) {
      VF32 o[kTile], out[kTile];
      output_1d(t[i], o);
#pragma GCC unroll 4
      for (int q = 0; q < kTile; ++q) o[q] = o[q] + bias;
      join_columns(o, out);
      // Part k's output row i: positions [4kn, 4kn + cols) of out, row 4k + i of the outputs.
      for (int k = 0; k < r.parts && kTile * k + i < r.rows; ++k) {
        const int64_t first = kTile * k * n, row = (kTile * k + i) * ld;
#pragma GCC unroll 4
        for (int q = 0; q < kTile; ++q) {
          const int64_t pos = q * kLanes;
          if (pos + kLanes <= first || pos >= first + r.cols) continue;
          const MaskF32 mask = lanes_between(first - pos, first + r.cols - pos);
          const int64_t at = row + pos - first;  // where the vector's lane 0 goes
          VF32 v = out[q];
          if (z) v = v + load_f32(z + at, mask);
          if (r.clamp) v = min_f32(hi, max_f32(lo, v));  // as Clip: a NaN stays NaN
          if (pos >= first && pos + kLanes <= first + r.cols)
            store_f32(y + at, v);
          else
            store_f32(y + at, v, mask);
        }
      }
    }
  }
}

}  // namespace

extern const f32::WinogradKernels kWinogradKernels;
const f32::WinogradKernels kWinogradKernels{static_cast<Isa>(MINFER_ISA_LEVEL), kLanes,
                                            input_rows, output_rows};

}  // namespace minfer::cpu::MINFER_ISA_NS
