// 8 floats as one vector (GCC/Clang vector extension): an AVX register where the target has
// one, a pair of SSE ones otherwise. Loaded and stored with memcpy (unaligned), and never
// passed or returned by value across files: that would change ABI between targets.
#pragma once

#include <cstdint>
#include <cstring>

namespace minfer::cpu {

using Vec8 = float __attribute__((vector_size(32)));
using Int32x8 = int32_t __attribute__((vector_size(32)));

// exp(x) as 2^n * exp(r), n = round(x / ln 2), |r| <= ln 2 / 2, exp(r) by Cephes' degree-7
// polynomial: within a few ulp (tests/backends/test_activations.cpp: 5e-7 relative). x is
// clamped to where the result is a normal float, so that 2^n can be added to the exponent
// bits; a NaN fails both comparisons and stays NaN. V: a float vector of any width, I: the
// int32 vector of the same lanes. Internal linkage (static): each file's copy is compiled for
// that file's target ISA (backends/cpu/isa/ sources use it at their level's width).
template <typename V, typename I>
static inline V exp_lanes(V x) {
  x = x < -87.33654f ? V{} - 87.33654f : x;
  x = x > 88.37626f ? V{} + 88.37626f : x;
  const float round = 12582912.f;  // 1.5 * 2^23: adding it rounds to an integer
  const V n = (x * 1.44269504f + round) - round;
  const V r = (x - n * 0.693359375f) - n * -2.12194440e-4f;  // ln 2 in two parts
  V p = r * 1.9875691500e-4f + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.f;
  I bits;
  std::memcpy(&bits, &p, sizeof p);
  bits += __builtin_convertvector(n, I) << 23;
  std::memcpy(&p, &bits, sizeof p);
  return p;
}

static inline Vec8 exp8(Vec8 x) { return exp_lanes<Vec8, Int32x8>(x); }

}  // namespace minfer::cpu
