#include "backends/cpu/int8/requant.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "backends/cpu/int8/qgemm.h"

namespace minfer::cpu::q8 {

Requant make_requant(const int8::OutputStage& st, int64_t channels) {
  Requant rq;
  rq.int8_out = st.int8_out;
  const size_t padded = static_cast<size_t>(channels) + 32;
  if (!st.int8_out) {
    rq.scale.assign(padded, 0.f);
    for (int64_t c = 0; c < channels; ++c) rq.scale[c] = st.out_scale[c];
    rq.relu = st.relu;
    return rq;
  }
  rq.m.assign(padded, 0);
  rq.rnd.assign(padded, 0);
  rq.shift.assign(padded, 1);
  rq.lo.assign(padded, std::numeric_limits<int32_t>::min());
  rq.hi.assign(padded, std::numeric_limits<int32_t>::max());
  rq.pre.assign(padded, 0);
  for (int64_t c = 0; c < channels; ++c) {
    const int8::Multiplier& q = st.mult[c];
    rq.m[c] = q.m;
    rq.rnd[c] = 1 << (q.n - 33);
    rq.shift[c] = q.n - 32;
    rq.pre[c] = q.l;
    if (q.l > 0) {
      rq.hi[c] = static_cast<int32_t>((int64_t{1} << (31 - q.l)) - 1);
      rq.lo[c] = -rq.hi[c] - 1;
    }
  }
  rq.zero_point = st.zero_point;
  rq.qmin = st.qmin;
  rq.qmax = st.qmax;
  rq.residual = st.residual;
  if (st.residual) {
    rq.ma = st.add.ma;
    rq.mb = st.add.mb;
    rq.k = st.add.k;
    rq.z_zero_point = st.z_zero_point;
    rq.y_zero_point = st.y_zero_point;
    rq.y_min = st.y_min;
    rq.y_max = st.y_max;
  }
  return rq;
}

namespace {

MINFER_TARGET_AVX2 inline __m256i load8(const int32_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// The per-channel parameters of eight channels, loaded once per tile column.
struct Lanes {
  __m256i lo, hi, pre, m, m_odd, rnd, shift;
};

MINFER_TARGET_AVX2 inline Lanes lanes(const Requant& rq, int64_t c) {
  Lanes l;
  l.lo = load8(&rq.lo[c]);
  l.hi = load8(&rq.hi[c]);
  l.pre = load8(&rq.pre[c]);
  l.m = load8(&rq.m[c]);
  l.m_odd = _mm256_srli_epi64(l.m, 32);
  l.rnd = load8(&rq.rnd[c]);
  l.shift = load8(&rq.shift[c]);
  return l;
}

// Eight requantized lanes: the int32 results before packing.
MINFER_TARGET_AVX2 inline __m256i requant8(const Requant& rq, const Lanes& l, __m256i acc,
                                           const int8_t* z) {
  __m256i a = _mm256_min_epi32(_mm256_max_epi32(acc, l.lo), l.hi);
  a = _mm256_sllv_epi32(a, l.pre);
  const __m256i even = _mm256_mul_epi32(a, l.m);
  const __m256i odd = _mm256_mul_epi32(_mm256_srli_epi64(a, 32), l.m_odd);
  // floor(a * m / 2^32) per lane: the high halves of the 64-bit products.
  __m256i r = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
  r = _mm256_srav_epi32(_mm256_add_epi32(r, l.rnd), l.shift);
  r = _mm256_add_epi32(r, _mm256_set1_epi32(rq.zero_point));
  r = _mm256_min_epi32(_mm256_max_epi32(r, _mm256_set1_epi32(rq.qmin)), _mm256_set1_epi32(rq.qmax));
  if (!rq.residual) return r;
  int64_t zbits;
  std::memcpy(&zbits, z, 8);
  const __m256i zv = _mm256_cvtepi8_epi32(_mm_cvtsi64_si128(zbits));
  const __m256i dt = _mm256_sub_epi32(r, _mm256_set1_epi32(rq.zero_point));
  const __m256i dz = _mm256_sub_epi32(zv, _mm256_set1_epi32(rq.z_zero_point));
  __m256i s = _mm256_add_epi32(_mm256_mullo_epi32(dt, _mm256_set1_epi32(rq.ma)),
                               _mm256_mullo_epi32(dz, _mm256_set1_epi32(rq.mb)));
  s = _mm256_add_epi32(s, _mm256_set1_epi32(1 << (rq.k - 1)));
  s = _mm256_sra_epi32(s, _mm_cvtsi32_si128(rq.k));
  s = _mm256_add_epi32(s, _mm256_set1_epi32(rq.y_zero_point));
  return _mm256_min_epi32(_mm256_max_epi32(s, _mm256_set1_epi32(rq.y_min)),
                          _mm256_set1_epi32(rq.y_max));
}

// Eight int32 lanes (already in [-128, 127]) as eight bytes.
MINFER_TARGET_AVX2 inline int64_t pack8(__m256i r) {
  const __m256i w = _mm256_packs_epi32(r, r);  // [0..3 0..3 | 4..7 4..7] as int16
  const __m256i b = _mm256_packs_epi16(w, w);  // [0..3 x4 | 4..7 x4] as int8
  const __m128i lo = _mm256_castsi256_si128(b), hi = _mm256_extracti128_si256(b, 1);
  return _mm_cvtsi128_si64(_mm_unpacklo_epi32(lo, hi));
}

}  // namespace

MINFER_TARGET_AVX2 void requant_tile(const Requant& rq, const int32_t* acc, int64_t acc_stride,
                                     int rows, int64_t c0, int64_t cols, int8_t* y,
                                     int64_t y_stride, const int8_t* z) {
  for (int64_t j = 0; j < cols; j += 8) {
    const Lanes l = lanes(rq, c0 + j);
    const int64_t n = std::min<int64_t>(8, cols - j);
    for (int r = 0; r < rows; ++r) {
      const int32_t* a = acc + r * acc_stride + j;
      int8_t* out = y + r * y_stride + j;
      const int8_t* zr = z ? z + r * y_stride + j : nullptr;
      if (n == 8) {
        const int64_t bytes = pack8(requant8(rq, l, load8(a), zr));
        std::memcpy(out, &bytes, 8);
      } else {  // the last channels of a layer
        int32_t tail[8] = {0};
        int8_t ztail[8] = {0};
        std::memcpy(tail, a, n * 4);
        if (zr) std::memcpy(ztail, zr, n);
        const int64_t bytes = pack8(requant8(rq, l, load8(tail), zr ? ztail : nullptr));
        std::memcpy(out, &bytes, n);
      }
    }
  }
}

MINFER_TARGET_AVX2 void dequant_tile(const Requant& rq, const int32_t* acc, int64_t acc_stride,
                                     int rows, int64_t c0, int64_t cols, float* y,
                                     int64_t y_stride) {
  const __m256 zero = _mm256_setzero_ps();
  for (int64_t j = 0; j < cols; j += 8) {
    const __m256 scale = _mm256_loadu_ps(&rq.scale[c0 + j]);
    const int64_t n = std::min<int64_t>(8, cols - j);
    for (int r = 0; r < rows; ++r) {
      int32_t tail[8] = {0};
      const int32_t* src = acc + r * acc_stride + j;
      if (n < 8) {
        std::memcpy(tail, src, n * 4);
        src = tail;
      }
      __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(load8(src)), scale);
      if (rq.relu) v = _mm256_max_ps(v, zero);  // max(v, +0): -0 and NaN give +0, as the reference
      float* out = y + r * y_stride + j;
      if (n == 8) {
        _mm256_storeu_ps(out, v);
      } else {
        float buf[8];
        _mm256_storeu_ps(buf, v);
        std::memcpy(out, buf, n * 4);
      }
    }
  }
}

}  // namespace minfer::cpu::q8
