// The int8 ops (docs/int8.md): ONNX QuantizeLinear/DequantizeLinear and the com.minfer ops
// QConv, QGemm, QAdd, QMaxPool, QAveragePool, QGlobalAveragePool, GatedQuantize. Their
// attributes are parsed here, once, into the integer parameters that the reference and the
// optimized kernels share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "minfer/registry.h"
#include "ops/int8/int8_math.h"

namespace minfer {

// Registers the int8 op schemas (with reference kernels) and the CPU int8 kernels.
void register_int8_ops(OpRegistry& registry);

// The families register_int8_ops calls (ops/int8/*.cpp), and the CPU kernels
// (backends/cpu/int8/register.cpp).
void register_quantize_linear_ops(OpRegistry& registry);  // QuantizeLinear, DequantizeLinear
void register_qconv_ops(OpRegistry& registry);            // QConv, QGemm
void register_qadd_ops(OpRegistry& registry);             // QAdd
void register_qpool_ops(OpRegistry& registry);  // QMaxPool, QAveragePool, QGlobalAveragePool
void register_gated_quantize_ops(OpRegistry& registry);  // GatedQuantize
void register_cpu_int8_kernels(OpRegistry& registry);

namespace int8 {

// The output stage of QConv / QGemm: int8 (requantized) or float.
struct OutputStage {
  bool int8_out = true;
  // int8 output: per output channel multipliers to the stored tensor (t when fused residual).
  std::vector<Multiplier> mult;
  int32_t zero_point = 0, qmin = kQMin, qmax = kQMax;
  // float output: y = float(acc) * out_scale[c], then max(y, 0) when relu; smooth: the node's
  // smooth activation (Sigmoid, Silu, HardSigmoid, HardSwish, Gelu) applied to y afterwards, as
  // FusedConv's (apply_fused_activation: int8 graphs of EfficientNet's convs + SiLU).
  std::vector<float> out_scale;
  bool relu = false, smooth = false;
  // int8 output after a smooth activation: y = QuantizeLinear(the float output above, y_scale,
  // y_zero_point), saturated to int8 (the float output's QuantizeLinear, folded).
  bool quantize_float = false;
  float y_scale = 1.f;
  // fused residual (int8 only): y = QAdd(t, z).
  bool residual = false;
  AddMultipliers add;
  int32_t z_zero_point = 0, y_zero_point = 0, y_min = kQMin, y_max = kQMax;
};

// Reads x_scale, x_zero_point, w_scale, y_*, conv_*, z_* and activation of a QConv/QGemm node
// with `channels` output channels. Throws InvalidModel naming the node on a bad attribute.
OutputStage parse_output_stage(const Node& node, int64_t channels, bool has_residual);
int32_t x_zero_point(const Node& node);

// The output stage applied to one accumulator of output channel c (z: the residual value).
inline int8_t stage_int8(const OutputStage& st, int32_t acc, int64_t c, int32_t z) {
  int32_t t = requantize_clamp(acc, st.mult[c], st.zero_point, st.qmin, st.qmax);
  if (!st.residual) return static_cast<int8_t>(t);
  int32_t y = add_requantize(t - st.zero_point, z - st.z_zero_point, st.add) + st.y_zero_point;
  return static_cast<int8_t>(std::clamp(y, st.y_min, st.y_max));
}
// Relu as `y > 0 ? y : 0`, which is what a SIMD max(y, 0) gives for -0 and NaN as well.
inline float stage_float(const OutputStage& st, int32_t acc, int64_t c) {
  float y = static_cast<float>(acc) * st.out_scale[c];
  return st.relu ? (y > 0.f ? y : 0.f) : y;
}

// QAdd's integer parameters.
struct AddStage {
  AddMultipliers mult;
  int32_t a_zero_point = 0, b_zero_point = 0, y_zero_point = 0, y_min = kQMin, y_max = kQMax;
};
AddStage parse_add_stage(const Node& node);

// QAveragePool / QGlobalAveragePool: s_x / s_y, zero points.
struct PoolStage {
  float x_scale = 1, y_scale = 1;
  int32_t x_zero_point = 0, y_zero_point = 0;
};
PoolStage parse_pool_stage(const Node& node);
// The multiplier for a window of `count` elements: s_x / (s_y * count).
Multiplier pool_multiplier(const PoolStage& st, int64_t count);

// The layout attribute: true for "NHWC"; fails for anything but "NCHW"/"NHWC".
bool is_nhwc(const Node& node);
// [N, H, W, C] <-> [N, C, H, W] (any rank >= 3: channels last <-> channels second).
Shape nhwc_to_nchw_shape(const Shape& s);
Shape nchw_to_nhwc_shape(const Shape& s);
// Moves elements (any dtype) between the two layouts.
Tensor nhwc_to_nchw(const Tensor& t);
Tensor nchw_to_nhwc(const Tensor& t);
// A float tensor quantized to int8 per tensor, element by element (quantize_value).
Tensor quantize_to_int8(const Tensor& x, float scale, int32_t zero_point);

// Attribute helpers with checks.
float require_scale(const Node& node, const std::string& name);
int32_t require_zero_point(const Node& node, const std::string& name);

}  // namespace int8
}  // namespace minfer
