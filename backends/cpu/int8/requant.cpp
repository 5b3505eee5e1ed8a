#include "backends/cpu/int8/requant.h"

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

namespace {

// t * ma + z * mb + start for every t in [qmin, qmax] and z in int8 (ma, mb >= 0): inside int32?
bool sums_fit_int32(const Requant& rq, int64_t start) {
  const int64_t lo = start + int64_t{rq.qmin} * rq.ma - 128 * int64_t{rq.mb};
  const int64_t hi = start + int64_t{rq.qmax} * rq.ma + 127 * int64_t{rq.mb};
  return lo >= std::numeric_limits<int32_t>::min() && hi <= std::numeric_limits<int32_t>::max();
}

// The residual's constant terms in one start value: (t - zero_point) * ma + (z - z_zero_point)
// * mb + 2^(k-1) as t * ma + z * mb + start, the same integer (docs/int8.md: each product <
// 2^29). y_zero_point joins it as y_zero_point * 2^k where every sum stays inside int32: the
// shift's floor then adds it exactly, and the kernels save one add per vector.
void fold_residual_constants(Requant& rq) {
  const int64_t start = (rq.k > 0 ? int64_t{1} << (rq.k - 1) : 0) -
                        int64_t{rq.zero_point} * rq.ma - int64_t{rq.z_zero_point} * rq.mb;
  const int64_t with_zero_point = start + int64_t{rq.y_zero_point} * (int64_t{1} << rq.k);
  rq.y_zero_point_in_sum = sums_fit_int32(rq, with_zero_point);
  rq.residual_start = static_cast<int32_t>(rq.y_zero_point_in_sum ? with_zero_point : start);
}

}  // namespace

Requant make_requant(const int8::OutputStage& st, int64_t channels) {
  Requant rq;
  rq.int8_out = st.int8_out;
  const size_t padded = static_cast<size_t>(channels) + 32;
  if (!st.int8_out || st.quantize_float) {
    rq.scale.assign(padded, 0.f);
    for (int64_t c = 0; c < channels; ++c) rq.scale[c] = st.out_scale[c];
    rq.relu = st.relu;
    rq.y_scale = st.y_scale;
    rq.y_zero_point = st.y_zero_point;
    if (st.quantize_float) rq.quantize = quantize_kernels(active_isa()).floats;
    rq.dequant = requant_kernels(active_isa()).dequant;
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
    fold_residual_constants(rq);
  }
  return rq;
}

RequantParams Requant::params() const {
  return {m.data(),  rnd.data(),    shift.data(),      lo.data(),  hi.data(), pre.data(),
          pre_shift, rnd_zp.data(), zero_point_in_rnd, zero_point, qmin,      qmax,
          residual,  ma,            mb,                k,          z_zero_point, y_zero_point,
          y_min,     y_max,         residual_start,    y_zero_point_in_sum};
}

void dequant_tile(const Requant& rq, const int32_t* acc, int64_t acc_stride, int rows, int64_t c0,
                  int64_t cols, float* y, int64_t y_stride) {
  rq.dequant(rq.scale.data(), rq.relu, acc, acc_stride, rows, c0, cols, y, y_stride);
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
    // The whole tile in one call, then its rows to y: the quantize loop's dependent chain is
    // long, and one call per row of 32 floats left too few iterations to overlap.
    int8_t* q = reinterpret_cast<int8_t*>(acc);  // (bytes written behind the floats read)
    rq.quantize(f, rows * cols, rq.y_scale, rq.y_zero_point, false, q);
    for (int r = 0; r < rows; ++r) std::memcpy(y + r * y_stride, q + r * cols, size_t(cols));
    return;
  }
  for (int r = 0; r < rows; ++r)
    rq.quantize(f + r * acc_stride, cols, rq.y_scale, rq.y_zero_point, false, y + r * y_stride);
}

}  // namespace minfer::cpu::q8
