// Float math of the newer CNN and transformer exports: Sqrt, Tanh, Erf, HardSigmoid, HardSwish,
// Gelu (unary), and Pow (numpy broadcasting; the exponent may have another type from opset 12).
// Computed in double and rounded once, so that they are the oracle for any faster kernel.
#include <cmath>
#include <limits>

#include "ops/broadcast.h"
#include "ops/builtin_ops.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

// A unary f32 op computing f(x, node) per element.
template <typename F>
ReferenceFn unary(F f) {
  return [f](const Node& node, const std::vector<Tensor>& in) {
    Tensor y(DType::f32, in[0].shape());
    const float* x = in[0].data<float>();
    float* p = y.data<float>();
    for (int64_t i = 0; i < y.numel(); ++i) p[i] = static_cast<float>(f(double(x[i]), node));
    return std::vector<Tensor>{y};
  };
}

// HardSigmoid: max(0, min(1, alpha * x + beta)), alpha 0.2 and beta 0.5 by default.
double hard_sigmoid(double x, const Node& node) {
  const double a = node.attrs.get_float("alpha", 0.2f), b = node.attrs.get_float("beta", 0.5f);
  return std::max(0.0, std::min(1.0, a * x + b));
}

// Gelu (opset 20): x * Phi(x), exactly with erf, or with tanh when approximate = "tanh".
bool gelu_tanh(const Node& node) {
  const std::string a = node.attrs.get_string("approximate", "none");
  op_require(node, a == "none" || a == "tanh",
             "approximate '" + a + "' is not one of 'none', 'tanh'");
  return a == "tanh";
}

double gelu(double x, const Node& node) {
  if (gelu_tanh(node)) {
    const double k = std::sqrt(2.0 / M_PI);
    return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
  }
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

void add_unary_f32(OpRegistry& r, const char* name, const char* doc,
                   std::vector<std::string> attributes, ReferenceFn ref,
                   std::function<void(const Node&)> check_attrs = nullptr,
                   const char* domain = "") {
  OpSchema s;
  s.domain = domain;
  s.name = name;
  s.doc = doc;
  s.attributes = std::move(attributes);
  s.infer = [check_attrs](InferContext& ctx) {
    if (check_attrs) check_attrs(ctx.node());
    require_dtype(ctx, 0, {DType::f32});
    ctx.set_output(0, DType::f32, ctx.input_shape(0));
  };
  s.reference = std::move(ref);
  add_builtin_op(r, std::move(s));
}

// ---- Pow ------------------------------------------------------------------------------

const std::vector<DType> kPowTypes{DType::f32, DType::i32, DType::i64};

void infer_pow(InferContext& ctx) {
  require_dtype(ctx, 0, kPowTypes);
  require_dtype(ctx, 1, kPowTypes);
  ctx.set_output(0, ctx.input_dtype(0),
                 broadcast_shapes(ctx.node(), {ctx.input_shape(0), ctx.input_shape(1)}));
}

std::vector<Tensor> pow_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor &a = in[0], &b = in[1];
  const Shape out = broadcast_shapes(node, {a.shape(), b.shape()});
  const std::vector<std::vector<int64_t>> st{broadcast_strides(a.shape(), out),
                                             broadcast_strides(b.shape(), out)};
  Tensor y(a.dtype(), out);
  dispatch_types<float, int32_t, int64_t>(node, a.dtype(), [&](auto x0) {
    using T = decltype(x0);
    dispatch_types<float, int32_t, int64_t>(node, b.dtype(), [&](auto e0) {
      using E = decltype(e0);
      const T* ap = a.data<T>();
      const E* bp = b.data<E>();
      T* yp = y.data<T>();
      for_each_broadcast(out, st, [&](int64_t i, const std::vector<int64_t>& off) {
        const double v = std::pow(double(ap[off[0]]), double(bp[off[1]]));
        if constexpr (std::is_integral_v<T>) {
          // Integer powers are exact in double up to 2^53; larger ones saturate, not UB.
          const double lo = double(std::numeric_limits<T>::lowest());
          const double hi = double(std::numeric_limits<T>::max());
          yp[i] = std::isnan(v) ? T(0) : v <= lo ? std::numeric_limits<T>::lowest()
                                        : v >= hi ? std::numeric_limits<T>::max()
                                                  : static_cast<T>(v);
        } else {
          yp[i] = static_cast<T>(v);
        }
      });
      return 0;
    });
    return 0;
  });
  return {y};
}

}  // namespace

void register_math_ops(OpRegistry& r) {
  add_unary_f32(r, "Sqrt", "square root", {},
                unary([](double x, const Node&) { return std::sqrt(x); }));
  add_unary_f32(r, "Tanh", "hyperbolic tangent", {},
                unary([](double x, const Node&) { return std::tanh(x); }));
  add_unary_f32(r, "Erf", "the error function", {},
                unary([](double x, const Node&) { return std::erf(x); }));
  add_unary_f32(r, "HardSigmoid", "max(0, min(1, alpha * x + beta))", {"alpha", "beta"},
                unary(hard_sigmoid), [](const Node& n) { hard_sigmoid(0, n); });
  add_unary_f32(r, "HardSwish", "x * max(0, min(1, x / 6 + 0.5))", {},
                unary([](double x, const Node&) {
                  return x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5));
                }));
  // com.minfer:Gelu is what the gelu-fusion pass makes in graphs whose opset predates 20.
  for (const char* domain : {"", kMinferDomain})
    add_unary_f32(
        r, "Gelu", "x * Phi(x) (erf, or the tanh approximation)", {"approximate"}, unary(gelu),
        [](const Node& n) { gelu_tanh(n); }, domain);

  OpSchema pow;
  pow.name = "Pow";
  pow.doc = "a ^ b with numpy broadcasting (the result has a's type)";
  pow.min_inputs = pow.max_inputs = 2;
  pow.infer = infer_pow;
  pow.reference = pow_reference;
  add_builtin_op(r, std::move(pow));
}

}  // namespace minfer
