// com.minfer:QAdd: Y = requant((A - za) * s_a + (B - zb) * s_b) with a fused activation
// clamp (docs/int8.md). Same shapes, no broadcasting.
#include "ops/builtin_ops.h"
#include "ops/int8/int8_ops.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

void infer_qadd(InferContext& ctx) {
  require_dtype(ctx, 0, {DType::i8});
  require_dtype(ctx, 1, {DType::i8});
  const Shape& a = ctx.input_shape(0);
  const Shape& b = ctx.input_shape(1);
  bool same = a.rank() == b.rank();
  for (size_t d = 0; same && d < a.rank(); ++d) same = dims_compatible(a[d], b[d]);
  ctx.require(same, "inputs have shapes " + a.to_string() + " and " + b.to_string() +
                        " (QAdd does not broadcast)");
  int8::parse_add_stage(ctx.node());
  ctx.set_output(0, DType::i8, a);
}

std::vector<Tensor> qadd_reference(const Node& node, const std::vector<Tensor>& in) {
  const int8::AddStage st = int8::parse_add_stage(node);
  op_require(
      node, in[0].shape() == in[1].shape(),
      "inputs have shapes " + in[0].shape().to_string() + " and " + in[1].shape().to_string());
  Tensor y(DType::i8, in[0].shape());
  const int8_t* a = in[0].data<int8_t>();
  const int8_t* b = in[1].data<int8_t>();
  int8_t* yp = y.data<int8_t>();
  for (int64_t i = 0; i < y.numel(); ++i) {
    int32_t v = int8::add_requantize(a[i] - st.a_zero_point, b[i] - st.b_zero_point, st.mult);
    yp[i] = static_cast<int8_t>(std::clamp(v + st.y_zero_point, st.y_min, st.y_max));
  }
  return {y};
}

}  // namespace

void register_qadd_ops(OpRegistry& r) {
  OpSchema s;
  s.domain = kMinferDomain;
  s.name = "QAdd";
  s.doc = "int8 elementwise add of two quantized tensors, requantized, with an activation clamp";
  s.min_inputs = 2;
  s.max_inputs = 2;
  s.attributes = {"a_scale", "a_zero_point", "b_scale", "b_zero_point",
                  "y_scale", "y_zero_point", "y_min",   "y_max"};
  s.infer = infer_qadd;
  s.reference = qadd_reference;
  add_builtin_op(r, std::move(s));
}

}  // namespace minfer
