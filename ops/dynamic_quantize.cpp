// DynamicQuantizeLinear (opset 11): quantizes a float tensor to uint8 with a scale and zero
// point computed from its own range, as the ONNX spec (and ONNX Runtime) define it:
//   range = [min(0, min(x)), max(0, max(x))], scale = (max - min) / 255,
//   zero_point = saturate(round_half_even(0 - min / scale)),
//   y = saturate(round_half_even(x / scale) + zero_point),
// all in float32. An all-zero input (max == min) gets scale 1, as in ONNX Runtime, instead of
// the spec's division by zero.
#include <algorithm>
#include <cmath>

#include "ops/builtin_ops.h"
#include "ops/int8/int8_math.h"
#include "ops/integer_ops.h"

namespace minfer {

namespace {

void infer_dynamic_quantize(InferContext& ctx) {
  require_dtype(ctx, 0, {DType::f32});
  ctx.set_output(0, DType::u8, ctx.input_shape(0));
  ctx.set_output(1, DType::f32, Shape{});
  ctx.set_output(2, DType::u8, Shape{});
}

std::vector<Tensor> dynamic_quantize_reference(const Node&, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const float* xp = x.data<float>();
  const int64_t n = x.numel();
  // The range always includes 0 (so 0 is exact); NaNs do not widen it.
  float lo = 0.f, hi = 0.f;
  for (int64_t i = 0; i < n; ++i) {
    lo = xp[i] < lo ? xp[i] : lo;
    hi = xp[i] > hi ? xp[i] : hi;
  }
  const float scale = hi == lo ? 1.f : (hi - lo) / 255.f;
  const float zp_real = std::clamp(0.f - lo / scale, 0.f, 255.f);
  const int32_t zp = static_cast<int32_t>(std::nearbyint(zp_real));

  Tensor y(DType::u8, x.shape());
  uint8_t* yp = y.data<uint8_t>();
  for (int64_t i = 0; i < n; ++i)
    yp[i] = static_cast<uint8_t>(int8::quantize_value(xp[i], scale, zp, 0, 255));
  return {y, Tensor::scalar<float>(scale), Tensor::scalar<uint8_t>(static_cast<uint8_t>(zp))};
}

}  // namespace

void register_dynamic_quantize_ops(OpRegistry& r) {
  OpSchema s;
  s.name = "DynamicQuantizeLinear";
  s.doc = "uint8 y, scale, zero point from x's own range [min(0,x), max(0,x)] (round half even)";
  s.min_outputs = s.max_outputs = 3;
  s.infer = infer_dynamic_quantize;
  s.reference = dynamic_quantize_reference;
  add_builtin_op(r, std::move(s));
}

}  // namespace minfer
