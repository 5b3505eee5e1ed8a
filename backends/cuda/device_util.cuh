// Device-side helpers shared by the .cu files: launch sizing, and the int8 integer arithmetic
// of docs/int8.md as __device__ functions.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/cuda_check.h"

namespace minfer::cuda {

inline constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n items (capped: the loop covers the rest).
inline unsigned grid_for(int n, int threads = kThreads) {
  const int blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > 65536 ? 65536 : blocks));
}

#define MINFER_GRID_STRIDE(i, n) \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += gridDim.x * blockDim.x)

__device__ __forceinline__ int32_t clamp_i32(int32_t v, int32_t lo, int32_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

// Must equal int8::requantize (ops/int8/int8_math.h): (clamp(acc) << l) * m + 2^(n-1) >> n.
__device__ __forceinline__ int32_t requantize(int32_t acc, int32_t m, int32_t n, int32_t l) {
  if (l > 0) {
    const int32_t hi = static_cast<int32_t>((int64_t{1} << (31 - l)) - 1);
    acc = static_cast<int32_t>(static_cast<uint32_t>(clamp_i32(acc, -hi - 1, hi)) << l);
  }
  // n >= 33 (make_multiplier), so the rounding term lies in the high word and the 64-bit sum
  // shifted by n equals (hi32(acc * m) + 2^(n-33)) >> (n-32) (floors compose; docs/int8.md):
  // one 32-bit high multiply, no 64-bit arithmetic. |hi32| < 2^30: the add cannot overflow.
  return (__mulhi(acc, m) + (int32_t{1} << (n - 33))) >> (n - 32);
}

// Must equal int8::add_requantize (ops/int8/int8_math.h), all in int32.
__device__ __forceinline__ int32_t add_requantize(int32_t da, int32_t db, int32_t ma, int32_t mb,
                                                  int32_t k) {
  return (da * ma + db * mb + (int32_t{1} << (k - 1))) >> k;
}

}  // namespace minfer::cuda
