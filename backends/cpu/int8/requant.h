// The output stage of the int8 CPU kernels: the exact integers of int8::stage_int8 /
// int8::stage_float (ops/int8/int8_ops.h), from per-channel parameters laid out for vector
// loads. Both outputs run at the kernels' ISA level (RequantKernels, backends/cpu/isa/
// requant_tile.cpp); here the float output's smooth activation and the int8 output after it.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/epilogue.h"
#include "backends/cpu/isa/isa_kernels.h"
#include "ops/int8/int8_ops.h"

namespace minfer::cpu::q8 {

using QuantizeFloats = decltype(QuantizeKernels::floats);

struct Requant {
  bool int8_out = true;
  // Per channel (padded by 32 so vector loads never run past the end).
  std::vector<int32_t> m, rnd, shift, lo, hi, pre;  // rnd = 2^(n-33), shift = n - 32
  bool pre_shift = false;                           // some pre (a left shift) > 0
  // rnd + zero_point * 2^shift, where no channel's sum with hi32(a * m) can leave int32
  // (make_requant): the zero point added before the shift, not after it.
  std::vector<int32_t> rnd_zp;
  bool zero_point_in_rnd = false;
  std::vector<float> scale;                         // float output
  int32_t zero_point = 0, qmin = -128, qmax = 127;
  bool relu = false;
  Activation smooth;  // float output: the smooth activation after the scale (or none)
  // int8 output through the float one (after a smooth activation): QuantizeLinear of it at the
  // ISA level with y_scale and y_zero_point; null otherwise.
  QuantizeFloats quantize = nullptr;
  float y_scale = 1.f;
  DequantTile dequant = nullptr;      // the float output at the ISA level
  // Fused residual: y = clamp(((t - zero_point) * ma + (z - z_zero_point) * mb + 2^(k-1)) >> k
  // + y_zero_point).
  bool residual = false;
  int32_t ma = 0, mb = 0, k = 1, z_zero_point = 0, y_zero_point = 0, y_min = -128, y_max = 127;
  // The sum's constant terms (RequantParams::residual_start), with y_zero_point * 2^k where no
  // sum can then leave int32.
  int32_t residual_start = 0;
  bool y_zero_point_in_sum = false;

  // The int8 output's parameters for RequantKernels::tile (pointers into this object).
  RequantParams params() const;
};

Requant make_requant(const int8::OutputStage& st, int64_t channels);
// The same, for `node` (a QConv or QGemm; st = int8::parse_output_stage of it): with the smooth
// activation of its float output.
Requant make_requant(const Node& node, const int8::OutputStage& st, int64_t channels);

// The float output of a tile laid out as RequantTile's.
void dequant_tile(const Requant& rq, const int32_t* acc, int64_t acc_stride, int rows, int64_t c0,
                  int64_t cols, float* y, int64_t y_stride);
// The int8 output of rq.quantize: the float output, made in acc's place, quantized.
void quantize_tile(const Requant& rq, int32_t* acc, int64_t acc_stride, int rows, int64_t c0,
                   int64_t cols, int8_t* y, int64_t y_stride);

}  // namespace minfer::cpu::q8
