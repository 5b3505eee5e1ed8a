// Dropout at inference: the output is the input and the optional mask is all true. The ratio
// is an attribute before opset 12 and an optional input after, which also adds the optional
// training_mode input; a true training_mode (random dropout) is refused, since minfer only
// runs inference. The dropout-elimination pass removes the node where nothing reads the mask.
// Before opset 12 the mask's value is ambiguous; the importer refuses it where it is read.
#include <optional>

#include "ops/builtin_ops.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

const std::vector<DType> kDropoutTypes{DType::f32, DType::f16};

void check_ratio(const Node& node, float ratio) {
  // ONNX: ratio in [0, 1); 1 would drop everything and scale by infinity.
  op_require(node, ratio >= 0.f && ratio < 1.f,
             "ratio " + std::to_string(ratio) + " is outside [0, 1)");
}

// The ratio where it is known before running: attribute, constant input or the default 0.5.
// Null when it comes from a run-time input.
std::optional<float> known_ratio(const Node& node, const Tensor* ratio_input, bool has_input) {
  if (has_input && !ratio_input) return std::nullopt;
  if (ratio_input) return ratio_input->data<float>()[0];
  return node.attrs.get_float("ratio", 0.5f);
}

// Refuses training mode: the random mask cannot be reproduced, and minfer is for inference.
// Training mode with a ratio of 0 keeps every element (torchvision's Swin exports attention
// dropout so, F.dropout's training flag left at its default): that is the identity too.
void check_inference_mode(const Node& node, bool training, std::optional<float> ratio) {
  if (training && ratio != 0.f)
    throw Error(ErrorCode::Unsupported,
                node.describe() +
                    ": training_mode=1 (random dropout) is not supported (inference only; only "
                    "a constant ratio of 0 is accepted in training mode)");
}

bool scalar_shape(const Shape& s) { return s.rank() == 0 || (s.rank() == 1 && s[0] == 1); }

void infer_dropout(InferContext& ctx) {
  const Node& node = ctx.node();
  require_dtype(ctx, 0, kDropoutTypes);
  if (ctx.has_input(1)) {
    if (node.attrs.has("ratio")) ctx.fail("has both a ratio attribute and a ratio input; use one");
    require_dtype(ctx, 1, {DType::f32});
    if (!scalar_shape(ctx.input_shape(1)))
      ctx.fail("ratio has shape " + ctx.input_shape(1).to_string() + "; expected a scalar");
  }
  if (std::optional<float> r = known_ratio(node, ctx.input_constant(1), ctx.has_input(1)))
    check_ratio(node, *r);
  if (ctx.has_input(2)) {
    require_dtype(ctx, 2, {DType::boolean});
    if (!scalar_shape(ctx.input_shape(2)))
      ctx.fail("training_mode has shape " + ctx.input_shape(2).to_string() + "; expected a scalar");
    if (const Tensor* t = ctx.input_constant(2))
      check_inference_mode(node, t->data<bool>()[0],
                           known_ratio(node, ctx.input_constant(1), ctx.has_input(1)));
  }
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
  ctx.set_output(1, DType::boolean, ctx.input_shape(0));
}

std::vector<Tensor> dropout_reference(const Node& node, const std::vector<Tensor>& in) {
  if (in[1].defined()) check_ratio(node, in[1].data<float>()[0]);
  if (in[2].defined())
    check_inference_mode(node, in[2].data<bool>()[0],
                         in[1].defined() ? in[1].data<float>()[0] : 0.5f);
  std::vector<Tensor> out{in[0].clone()};
  if (node.outputs.size() > 1) {
    Tensor mask(DType::boolean, in[0].shape());
    for (int64_t i = 0; i < mask.numel(); ++i) mask.data<bool>()[i] = true;
    out.push_back(mask);
  }
  return out;
}

}  // namespace

void register_dropout_op(OpRegistry& r) {
  OpSchema s;
  s.name = "Dropout";
  s.doc = "identity at inference (mask all true); ratio as attribute or input";
  s.max_inputs = 3;
  s.max_outputs = 2;
  s.attributes = {"ratio", "seed"};
  s.infer = infer_dropout;
  s.reference = dropout_reference;
  add_builtin_op(r, std::move(s));
}

}  // namespace minfer
