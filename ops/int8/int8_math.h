// The int8 arithmetic of docs/int8.md, written once: quantizing values, choosing parameters,
// and the fixed-point requantization. Every int8 kernel (reference, AVX2, VNNI) computes
// exactly these integers; the multipliers are made by make_multiplier / make_add_multipliers
// only, so all kernels start from the same integers.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace minfer::int8 {

inline constexpr int32_t kQMin = -128;
inline constexpr int32_t kQMax = 127;
inline constexpr int32_t kWeightMax = 127;  // weights are symmetric: [-127, 127]

// Scale and zero point of one quantized tensor: real = scale * (q - zero_point).
struct QParam {
  float scale = 1.f;
  int32_t zero_point = 0;
};

// Asymmetric int8 parameters for the range [lo, hi] (widened to contain 0).
QParam choose_activation_params(float lo, float hi);
// Symmetric per-channel weight scale: max|w| / 127 (1 for an all-zero channel).
float choose_weight_scale(float max_abs);

// ONNX QuantizeLinear of one value: saturate(rne(x / scale) + zero_point) into [qmin, qmax].
// x / scale is one float32 division; NaN maps to the zero point.
inline int32_t quantize_value(float x, float scale, int32_t zero_point, int32_t qmin,
                              int32_t qmax) {
  float r = std::nearbyint(x / scale);
  if (std::isnan(r)) return zero_point;
  float v = r + static_cast<float>(zero_point);
  v = std::min(std::max(v, static_cast<float>(qmin)), static_cast<float>(qmax));
  return static_cast<int32_t>(v);
}

// ONNX DequantizeLinear of one value, given q - zero_point: one conversion, one multiply.
inline float dequantize_value(int64_t diff, float scale) {
  return static_cast<float>(diff) * scale;
}

// M = m * 2^-n after a pre-shift of l bits (docs/int8.md, "Fixed-point requantization").
struct Multiplier {
  int32_t m = 0;  // in [2^30, 2^31) except for tiny M (n = 63)
  int n = 33;     // in [33, 63]
  int l = 0;      // pre-shift, 0 for M < 0.25
};

// Throws Unsupported for M < 0, M not finite, or M >= 2^20.
Multiplier make_multiplier(double M);

// The requantized value before the zero point: (clamp(acc) << l) * m + 2^(n-1) >> n.
inline int32_t requantize(int32_t acc, const Multiplier& q) {
  if (q.l > 0) {
    const int32_t hi = static_cast<int32_t>((int64_t{1} << (31 - q.l)) - 1);
    acc = static_cast<int32_t>(static_cast<uint32_t>(std::clamp(acc, -hi - 1, hi)) << q.l);
  }
  const int64_t t = static_cast<int64_t>(acc) * q.m + (int64_t{1} << (q.n - 1));
  return static_cast<int32_t>(t >> q.n);
}

// requantize, plus the zero point, clamped to [lo, hi] (a fused activation narrows it).
inline int8_t requantize_clamp(int32_t acc, const Multiplier& q, int32_t zero_point, int32_t lo,
                               int32_t hi) {
  return static_cast<int8_t>(std::clamp(requantize(acc, q) + zero_point, lo, hi));
}

// QAdd: Y = ((A - za) * ma + (B - zb) * mb + 2^(k-1)) >> k, all in int32.
struct AddMultipliers {
  int32_t ma = 0, mb = 0;  // < 2^21
  int k = 1;               // in [1, 31]
};
// From R_a = s_a / s_y and R_b = s_b / s_y; throws Unsupported when either is >= 2^20 or
// negative / not finite.
AddMultipliers make_add_multipliers(double ra, double rb);

inline int32_t add_requantize(int32_t da, int32_t db, const AddMultipliers& q) {
  return (da * q.ma + db * q.mb + (int32_t{1} << (q.k - 1))) >> q.k;
}

// Wraps an int64 sum to int32 the way modular int32 adds do.
inline int32_t wrap_int32(int64_t v) {
  return static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
}

}  // namespace minfer::int8
