// IEEE binary16 (FLOAT16) elements: their storage type and exact conversions to and from
// float, shared by Cast, the comparison ops and the conformance runner (private to the library).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "minfer/tensor.h"

namespace minfer {

// One FLOAT16 element: f16 tensors hold the 16-bit pattern of each element.
struct Half {
  uint16_t bits;
};
static_assert(sizeof(Half) == 2, "FLOAT16 tensors hold 2-byte elements");

template <>
constexpr DType dtype_of<Half>() {
  return DType::f16;
}

// Exact: every half is a float. NaN keeps its payload.
inline float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf, NaN
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

// Rounds to nearest, ties to even; overflow gives infinity, NaN stays NaN (quiet).
inline uint16_t float_to_half(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u)  // inf or NaN (keeps the top payload bits, forces quiet)
    return sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 | ((abs >> 13) & 0x3ff) : 0);
  if (abs >= 0x477ff000u) return sign | 0x7c00;   // >= 65520 rounds to infinity
  auto round_shift = [](uint32_t v, int shift) {  // v >> shift, rounded half to even
    uint32_t q = v >> shift, rem = v & ((1u << shift) - 1), half = 1u << (shift - 1);
    return q + (rem > half || (rem == half && (q & 1)));
  };
  if (abs >= 0x38800000u)  // a normal half: rebias the exponent (127 - 15), round 13 bits
    return sign | static_cast<uint16_t>(round_shift(abs - 0x38000000u, 13));
  const int exp = static_cast<int>(abs >> 23);
  if (exp < 102) return sign;  // below 2^-25: rounds to zero
  // A subnormal half counts units of 2^-24: value = m * 2^(exp - 150), so shift by 126 - exp.
  const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
  return sign | static_cast<uint16_t>(round_shift(m, 126 - exp));
}

}  // namespace minfer
