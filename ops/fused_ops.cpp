// com.minfer:FusedConv, FusedGemm and FusedMatMul, made by the fusion passes:
//   FusedConv(X, W, [B], [Z]) = act(Conv(X, W, B) + Z)
//   FusedGemm(A, B, [C])      = act(Gemm(A, B, C))
//   FusedMatMul(A, B, Bias)   = act(MatMul(A, B) + Bias)  (Bias [N] over the last dim; CPU only)
// act is "" (none), "Relu", "Clip" (activation_min/activation_max), "Sigmoid", "Silu"
// (x * sigmoid(x)), "HardSigmoid" (activation_alpha/activation_beta), "HardSwish", "Gelu"
// (x * Phi(x)) or "GeluTanh" (Gelu's approximate = "tanh"). Z, the
// residual, has the output's shape. The reference kernels reuse Conv's and Gemm's and apply
// the activation in double.
#include <algorithm>
#include <cmath>
#include <limits>

#include "minfer/registry.h"
#include "ops/fused_ops.h"

namespace minfer {

namespace {
const char* const kActivations[] = {"Relu",        "Clip",      "Sigmoid", "Silu",
                                     "HardSigmoid", "HardSwish", "Gelu",    "GeluTanh"};

std::vector<std::string> with_activation(std::vector<std::string> attrs) {
  attrs.insert(attrs.end(), {"activation", "activation_min", "activation_max",
                             "activation_alpha", "activation_beta"});
  return attrs;
}

void check_activation(InferContext& ctx) {
  const std::string act = ctx.attrs().get_string("activation", "");
  bool known = act.empty();
  for (const char* a : kActivations) known = known || act == a;
  ctx.require(known, "activation must be \"\", \"Relu\", \"Clip\", \"Sigmoid\", \"Silu\", "
                     "\"HardSigmoid\", \"HardSwish\", \"Gelu\" or \"GeluTanh\", got \"" +
                         act + "\"");
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

void apply_fused_activation(const Node& n, Tensor& y) {
  const std::string act = n.attrs.get_string("activation", "");
  if (act.empty()) return;
  double lo = -std::numeric_limits<double>::infinity(), hi = -lo;
  if (act == "Relu") lo = 0;
  if (act == "Clip") {
    lo = n.attrs.get_float("activation_min", std::numeric_limits<float>::lowest());
    hi = n.attrs.get_float("activation_max", std::numeric_limits<float>::max());
  }
  const double alpha = n.attrs.get_float("activation_alpha", 0.2f);
  const double beta = n.attrs.get_float("activation_beta", 0.5f);
  auto hard_sigmoid = [](double v, double a, double b) { return std::clamp(a * v + b, 0.0, 1.0); };
  auto apply = [&y](auto f) {
    float* p = y.data<float>();
    for (int64_t i = 0; i < y.numel(); ++i) p[i] = float(f(double(p[i])));
  };
  if (act == "Relu" || act == "Clip")
    apply([&](double x) { return std::min(std::max(x, lo), hi); });
  else if (act == "Sigmoid")
    apply([](double x) { return 1 / (1 + std::exp(-x)); });
  else if (act == "Silu")
    apply([](double x) { return x / (1 + std::exp(-x)); });
  else if (act == "HardSigmoid")
    apply([&](double x) { return hard_sigmoid(x, alpha, beta); });
  else if (act == "HardSwish")
    apply([&](double x) { return x * hard_sigmoid(x, 1.0 / 6, 0.5); });
  else if (act == "Gelu")
    apply([](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); });
  else if (act == "GeluTanh")
    apply([](double x) {
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    });
  else
    throw Error(ErrorCode::InvalidModel, n.describe() + ": unknown activation '" + act + "'");
}

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
    apply_fused_activation(n, out[0]);
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
    apply_fused_activation(n, out[0]);
    return out;
  };
  registry.register_op(std::move(fg));

  const OpSchema& matmul = registry.get_op("", "MatMul");
  OpSchema fm;
  fm.domain = kMinferDomain;
  fm.name = "FusedMatMul";
  fm.doc = "act(MatMul(A, B) + Bias), Bias [N] added to every row: MatMul with its bias Add "
           "(and a Gelu) fused";
  fm.min_inputs = 3;
  fm.max_inputs = 3;
  fm.attributes = with_activation({});
  fm.infer = [&matmul](InferContext& ctx) {
    check_activation(ctx);
    infer_as(ctx, matmul, 2);
    const Shape& y = ctx.outputs()[0].shape;
    const Shape& bias = ctx.input_shape(2);
    ctx.require(ctx.input(2).dtype == ctx.input(0).dtype, "Bias must have A's dtype");
    ctx.require(y.rank() >= 1 && bias.rank() == 1 &&
                    (bias[0] == y[y.rank() - 1] || bias[0] < 0 || y[y.rank() - 1] < 0),
                "Bias has shape " + bias.to_string() + ", not [N] for the output " +
                    y.to_string());
  };
  fm.reference = [&matmul](const Node& n, const std::vector<Tensor>& in) {
    std::vector<Tensor> out = matmul.reference(n, {in[0], in[1]});
    float* y = out[0].data<float>();
    const float* bias = in[2].data<float>();
    const int64_t cols = in[2].numel();
    for (int64_t i = 0; i < out[0].numel(); ++i) y[i] += bias[i % cols];
    apply_fused_activation(n, out[0]);
    return out;
  };
  registry.register_op(std::move(fm));
}

}  // namespace minfer
