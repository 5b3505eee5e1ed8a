// com.minfer:GatedQuantize: y = QuantizeLinear(x * gate) to int8, gate one float per channel of
// x's last axis (an SE block's channel scale in an NHWC int8 region: EfficientNet's Mul and the
// QuantizeLinear after it, fused by the gated-quantize-fusion pass so that the gated floats are
// never written). Exactly the two ops' arithmetic: the float product, then QuantizeLinear's.
#include <string>

#include "ops/builtin_ops.h"
#include "ops/int8/int8_ops.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

// Why `gate` is not one value per channel of x's last axis ([..1.., C]), or "".
std::string gate_problem(const Shape& x, const Shape& gate) {
  bool per_channel = x.rank() >= 1 && gate.rank() >= 1 && gate.rank() <= x.rank() &&
                     dims_compatible(gate[gate.rank() - 1], x[x.rank() - 1]);
  for (size_t d = 0; per_channel && d + 1 < gate.rank(); ++d) per_channel = gate[d] == 1;
  if (per_channel) return "";
  return "gate has shape " + gate.to_string() +
         ", not one value per channel of the input's last axis (input " + x.to_string() + ")";
}

void infer_gated_quantize(InferContext& ctx) {
  require_dtype(ctx, 0, {DType::f32});
  require_dtype(ctx, 1, {DType::f32});
  const std::string problem = gate_problem(ctx.input_shape(0), ctx.input_shape(1));
  ctx.require(problem.empty(), problem);
  int8::require_scale(ctx.node(), "y_scale");
  int8::require_zero_point(ctx.node(), "y_zero_point");
  ctx.set_output(0, DType::i8, ctx.input_shape(0));
}

std::vector<Tensor> gated_quantize_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const Tensor& gate = in[1];
  const std::string problem = gate_problem(x.shape(), gate.shape());
  op_require(node, problem.empty(), problem);
  const int64_t channels = x.shape()[x.rank() - 1];
  const float scale = int8::require_scale(node, "y_scale");
  const int32_t zero_point = int8::require_zero_point(node, "y_zero_point");
  Tensor y(DType::i8, x.shape());
  const float* xp = x.data<float>();
  const float* g = gate.data<float>();
  int8_t* yp = y.data<int8_t>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float product = xp[i] * g[i % channels];
    yp[i] = static_cast<int8_t>(int8::quantize_value(product, scale, zero_point, -128, 127));
  }
  return {y};
}

}  // namespace

void register_gated_quantize_ops(OpRegistry& r) {
  OpSchema s;
  s.domain = kMinferDomain;
  s.name = "GatedQuantize";
  s.doc = "y = QuantizeLinear(x * gate) to int8, one gate per channel of x's last axis";
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.attributes = {"y_scale", "y_zero_point"};
  s.infer = infer_gated_quantize;
  s.reference = gated_quantize_reference;
  add_builtin_op(r, std::move(s));
}

}  // namespace minfer
