#include "backends/cpu/int8/requant.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "backends/cpu/int8/qgemm.h"

namespace minfer::cpu::q8 {

Requant make_requant(const Node& node, const int8::OutputStage& st, int64_t channels) {
  Requant rq = make_requant(st, channels);
  if (st.smooth) rq.smooth = parse_activation(node);
  return rq;
}

Requant make_requant(const int8::OutputStage& st, int64_t channels) {
  Requant rq;
  rq.int8_out = st.int8_out;
  const size_t padded = static_cast<size_t>(channels) + 32;
  if (!st.int8_out || st.quantize_float) {
    rq.scale.assign(padded, 0.f);
    for (int64_t c = 0; c < channels; ++c) rq.scale[c] = st.out_scale[c];
    rq.relu = st.relu;
    rq.quantize_float = st.quantize_float;
    rq.y_scale = st.y_scale;
    rq.y_zero_point = st.y_zero_point;
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
      rq.pre_shift = true;
      rq.hi[c] = static_cast<int32_t>((int64_t{1} << (31 - q.l)) - 1);
      rq.lo[c] = -rq.hi[c] - 1;
    }
  }
  rq.zero_point = st.zero_point;
  // hi32(a * m) lies in [-2^30, 2^30] (|a| <= 2^31, m < 2^31): adding rnd + zero_point * 2^shift
  // stays inside int32 while that term's size is below 2^30.
  rq.zero_point_in_rnd = true;
  rq.rnd_zp.assign(padded, 0);
  for (int64_t c = 0; c < channels; ++c) {
    const int64_t folded = rq.rnd[c] + int64_t{st.zero_point} * (int64_t{1} << rq.shift[c]);
    if (folded >= (int64_t{1} << 30) || folded <= -(int64_t{1} << 30))
      rq.zero_point_in_rnd = false;
    else
      rq.rnd_zp[c] = static_cast<int32_t>(folded);
  }
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

RequantParams Requant::params() const {
  return {m.data(),  rnd.data(),    shift.data(),      lo.data(),  hi.data(), pre.data(),
          pre_shift, rnd_zp.data(), zero_point_in_rnd, zero_point, qmin,      qmax,
          residual,  ma,            mb,                k,          z_zero_point, y_zero_point,
          y_min,     y_max};
}

namespace {

MINFER_TARGET_AVX2 inline __m256i load8(const int32_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

}  // namespace

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
  // The smooth activation while the tile is in cache: in one call where its rows are adjacent
  // (a call per row of 32 floats cost more than the activation).
  if (!rq.smooth.enabled) return;
  if (cols == y_stride) return rq.smooth.apply(y, rows * cols);
  for (int r = 0; r < rows; ++r) rq.smooth.apply(y + r * y_stride, cols);
}

void quantize_tile(const Requant& rq, int32_t* acc, int64_t acc_stride, int rows, int64_t c0,
                   int64_t cols, int8_t* y, int64_t y_stride) {
  float* f = reinterpret_cast<float*>(acc);  // each vector read before it is overwritten
  dequant_tile(rq, acc, acc_stride, rows, c0, cols, f, acc_stride);
  if (cols == acc_stride) {
    // The whole tile in one call, then its rows to y: quantize_floats' dependent chain is
    // long, and one call per row of 32 floats left too few iterations to overlap.
    int8_t* q = reinterpret_cast<int8_t*>(acc);  // (bytes written behind the floats read)
    quantize_floats(f, rows * cols, rq.y_scale, rq.y_zero_point, false, q);
    for (int r = 0; r < rows; ++r) std::memcpy(y + r * y_stride, q + r * cols, size_t(cols));
    return;
  }
  for (int r = 0; r < rows; ++r)
    quantize_floats(f + r * acc_stride, cols, rq.y_scale, rq.y_zero_point, false,
                    y + r * y_stride);
}

MINFER_TARGET_AVX2 void quantize_floats(const float* x, int64_t n, float scale, int32_t zp,
                                        bool to_u8, void* out) {
  const int32_t lo = to_u8 ? 0 : -128, hi = to_u8 ? 255 : 127;
  const __m256 s = _mm256_set1_ps(scale), zf = _mm256_set1_ps(float(zp));
  const __m256 lof = _mm256_set1_ps(float(lo)), hif = _mm256_set1_ps(float(hi));
  const __m256i zi = _mm256_set1_epi32(zp);
  uint8_t* y = static_cast<uint8_t*>(out);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 r = _mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(x + i), s),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 nan = _mm256_cmp_ps(r, r, _CMP_UNORD_Q);
    const __m256 v = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(r, zf), lof), hif);
    __m256i q = _mm256_cvttps_epi32(v);
    q = _mm256_blendv_epi8(q, zi, _mm256_castps_si256(nan));
    const __m256i w = _mm256_packs_epi32(q, q);
    const __m256i b = to_u8 ? _mm256_packus_epi16(w, w) : _mm256_packs_epi16(w, w);
    const int64_t bytes = _mm_cvtsi128_si64(
        _mm_unpacklo_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1)));
    std::memcpy(y + i, &bytes, 8);
  }
  for (; i < n; ++i) y[i] = static_cast<uint8_t>(int8::quantize_value(x[i], scale, zp, lo, hi));
}

}  // namespace minfer::cpu::q8
