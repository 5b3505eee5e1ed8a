#include "ops/int8/int8_math.h"

#include <string>

#include "minfer/error.h"

namespace minfer::int8 {

QParam choose_activation_params(float lo, float hi) {
  double l = std::min(0.0, static_cast<double>(lo));
  double h = std::max(0.0, static_cast<double>(hi));
  check(
      std::isfinite(l) && std::isfinite(h), ErrorCode::InvalidArgument,
      "quantization range [" + std::to_string(lo) + ", " + std::to_string(hi) + "] is not finite");
  QParam p;
  if (h - l <= 0) return p;  // an all-zero tensor: scale 1, zero point 0
  p.scale = static_cast<float>((h - l) / 255.0);
  if (!(p.scale > 0)) p.scale = 1e-30f;  // a range below float's resolution
  double z = std::nearbyint(-128.0 - l / static_cast<double>(p.scale));
  p.zero_point = static_cast<int32_t>(std::clamp(z, -128.0, 127.0));
  return p;
}

float choose_weight_scale(float max_abs) {
  if (!(max_abs > 0) || !std::isfinite(max_abs)) return 1.f;
  float s = static_cast<float>(static_cast<double>(max_abs) / kWeightMax);
  return s > 0 ? s : 1e-30f;
}

Multiplier make_multiplier(double M) {
  check(std::isfinite(M) && M >= 0 && M < 1048576.0, ErrorCode::Unsupported,
        "int8 requantization multiplier " + std::to_string(M) +
            " is outside [0, 2^20) (scales too far apart)");
  Multiplier q;
  if (M == 0) return q;  // m = 0: every result is 0
  while (M >= 0.25) {    // exact: halving a double
    M /= 2;
    ++q.l;
  }
  int n = 33;
  while (n < 63 && std::ldexp(M, n) < 1073741824.0) ++n;  // m into [2^30, 2^31)
  int64_t m = std::llround(std::ldexp(M, n));
  if (m >= (int64_t{1} << 31)) {  // rounded up to 2^31
    if (n > 33) {
      --n;
      m >>= 1;
    } else {  // M' rounds to 0.25: one more pre-shift
      ++q.l;
      m = int64_t{1} << 30;
    }
  }
  q.m = static_cast<int32_t>(m);
  q.n = n;
  return q;
}

AddMultipliers make_add_multipliers(double ra, double rb) {
  for (double r : {ra, rb})
    check(std::isfinite(r) && r >= 0 && r < 1048576.0, ErrorCode::Unsupported,
          "int8 Add scale ratio " + std::to_string(r) + " is outside [0, 2^20)");
  const double top = std::max(ra, rb);
  AddMultipliers q;
  q.k = 1;
  for (int k = 31; k >= 1; --k)
    if (std::llround(std::ldexp(top, k)) < (int64_t{1} << 21)) {
      q.k = k;
      break;
    }
  q.ma = static_cast<int32_t>(std::llround(std::ldexp(ra, q.k)));
  q.mb = static_cast<int32_t>(std::llround(std::ldexp(rb, q.k)));
  check(q.ma < (1 << 21) && q.mb < (1 << 21), ErrorCode::Unsupported,
        "int8 Add scale ratio too large");
  return q;
}

}  // namespace minfer::int8
