// com.minfer:FusedConv and com.minfer:FusedGemm, made by the fusion passes:
//   FusedConv(X, W, [B], [Z]) = act(Conv(X, W, B) + Z)
//   FusedGemm(A, B, [C])      = act(Gemm(A, B, C))
// act is "" (none), "Relu" or "Clip" (activation_min/activation_max). Z, the residual, has the
// output's shape. The reference kernels reuse Conv's and Gemm's.
#include <algorithm>
#include <limits>

#include "minfer/registry.h"
#include "ops/fused_ops.h"

namespace minfer {

namespace {
std::vector<std::string> with_activation(std::vector<std::string> attrs) {
  attrs.insert(attrs.end(), {"activation", "activation_min", "activation_max"});
  return attrs;
}

void apply_activation(const Node& n, Tensor& y) {
  const std::string act = n.attrs.get_string("activation", "");
  float* p = y.data<float>();
  if (act.empty()) return;
  float lo = 0, hi = std::numeric_limits<float>::infinity();
  if (act == "Clip") {
    lo = n.attrs.get_float("activation_min", std::numeric_limits<float>::lowest());
    hi = n.attrs.get_float("activation_max", std::numeric_limits<float>::max());
  } else if (act != "Relu") {
    throw Error(ErrorCode::InvalidModel, n.describe() + ": unknown activation '" + act + "'");
  }
  for (int64_t i = 0; i < y.numel(); ++i) p[i] = std::min(std::max(p[i], lo), hi);
}

void check_activation(InferContext& ctx) {
  std::string act = ctx.attrs().get_string("activation", "");
  ctx.require(act.empty() || act == "Relu" || act == "Clip",
              "activation must be \"\", \"Relu\" or \"Clip\", got \"" + act + "\"");
}

// Runs `base`'s inference on the first `count` inputs of the node.
void infer_as(InferContext& ctx, const OpSchema& base, size_t count) {
  std::vector<TensorInfo> infos;
  for (size_t i = 0; i < count && i < ctx.num_inputs(); ++i)
    infos.push_back(ctx.has_input(i) ? ctx.input(i) : TensorInfo{});
  InferContext inner(ctx.node(), infos);
  base.infer(inner);
  const TensorInfo& out = inner.outputs()[0];
  ctx.set_output(0, out.dtype, out.shape);
}
}  // namespace

void register_fused_ops(OpRegistry& registry) {
  const OpSchema& conv = registry.get_op("", "Conv");
  const OpSchema& gemm = registry.get_op("", "Gemm");

  OpSchema fc;
  fc.domain = kMinferDomain;
  fc.name = "FusedConv";
  fc.doc = "act(Conv(X, W, B) + Z): Conv with bias, residual add and activation fused";
  fc.min_inputs = 2;
  fc.max_inputs = 4;
  fc.attributes = with_activation(conv.attributes);
  fc.infer = [&conv](InferContext& ctx) {
    check_activation(ctx);
    infer_as(ctx, conv, 3);
    if (ctx.has_input(3)) {
      const Shape& y = ctx.outputs()[0].shape;
      const Shape& z = ctx.input_shape(3);
      bool same = y.rank() == z.rank();
      for (size_t d = 0; same && d < y.rank(); ++d) same = y[d] == z[d] || y[d] < 0 || z[d] < 0;
      ctx.require(same, "residual input has shape " + z.to_string() + ", the output has " +
                            y.to_string());
    }
  };
  fc.reference = [&conv](const Node& n, const std::vector<Tensor>& in) {
    std::vector<Tensor> conv_in(in.begin(), in.begin() + std::min<size_t>(in.size(), 3));
    std::vector<Tensor> out = conv.reference(n, conv_in);
    if (in.size() > 3 && in[3].defined()) {
      float* y = out[0].data<float>();
      const float* z = in[3].data<float>();
      for (int64_t i = 0; i < out[0].numel(); ++i) y[i] += z[i];
    }
    apply_activation(n, out[0]);
    return out;
  };
  registry.register_op(std::move(fc));

  OpSchema fg;
  fg.domain = kMinferDomain;
  fg.name = "FusedGemm";
  fg.doc = "act(Gemm(A, B, C)): Gemm with its activation fused";
  fg.min_inputs = 2;
  fg.max_inputs = 3;
  fg.attributes = with_activation(gemm.attributes);
  fg.infer = [&gemm](InferContext& ctx) {
    check_activation(ctx);
    infer_as(ctx, gemm, 3);
  };
  fg.reference = [&gemm](const Node& n, const std::vector<Tensor>& in) {
    std::vector<Tensor> out = gemm.reference(n, in);
    apply_activation(n, out[0]);
    return out;
  };
  registry.register_op(std::move(fg));
}

}  // namespace minfer
