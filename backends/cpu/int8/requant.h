// The output stage of the int8 CPU kernels, vectorized with AVX2: the exact integers of
// int8::stage_int8 / int8::stage_float (ops/int8/int8_ops.h), from per-channel parameters
// laid out for 8-lane loads.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/int8/int8_ops.h"

namespace minfer::cpu::q8 {

struct Requant {
  bool int8_out = true;
  // Per channel (padded by 32 so 8-lane loads never run past the end).
  std::vector<int32_t> m, rnd, shift, lo, hi, pre;  // rnd = 2^(n-33), shift = n - 32
  std::vector<float> scale;                         // float output
  int32_t zero_point = 0, qmin = -128, qmax = 127;
  bool relu = false;
  // Fused residual: y = clamp(((t - zero_point) * ma + (z - z_zero_point) * mb + 2^(k-1)) >> k
  // + y_zero_point).
  bool residual = false;
  int32_t ma = 0, mb = 0, k = 1, z_zero_point = 0, y_zero_point = 0, y_min = -128, y_max = 127;
};

Requant make_requant(const int8::OutputStage& st, int64_t channels);

// A tile of `rows` rows x output channels [c0, c0 + cols): acc[r * acc_stride + i] is row r,
// channel c0 + i; outputs go to y + r * y_stride + i. z: the residual (laid out as y), or null.
void requant_tile(const Requant& rq, const int32_t* acc, int64_t acc_stride, int rows, int64_t c0,
                  int64_t cols, int8_t* y, int64_t y_stride, const int8_t* z);
void dequant_tile(const Requant& rq, const int32_t* acc, int64_t acc_stride, int rows, int64_t c0,
                  int64_t cols, float* y, int64_t y_stride);

}  // namespace minfer::cpu::q8
