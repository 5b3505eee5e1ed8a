// LRN, local response normalization across channels (AlexNet, GoogLeNet, ZFNet):
//   y[n,c,...] = x[n,c,...] / (bias + alpha / size * sum of x[n,c',...]^2)^beta
// over the channels c' in [c - floor((size-1)/2), c + ceil((size-1)/2)] that exist.
#include <cmath>

#include "ops/builtin_ops.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

struct LrnParams {
  int64_t size;
  float alpha, beta, bias;
};

LrnParams lrn_params(const Node& node) {
  op_require(node, node.attrs.has("size"), "required attribute 'size' is missing");
  LrnParams p{node.attrs.get_int("size", 0), node.attrs.get_float("alpha", 1e-4f),
              node.attrs.get_float("beta", 0.75f), node.attrs.get_float("bias", 1.0f)};
  op_require(node, p.size >= 1, "size " + std::to_string(p.size) + " must be >= 1");
  op_require(node, std::isfinite(p.alpha) && std::isfinite(p.beta) && std::isfinite(p.bias),
             "alpha, beta and bias must be finite");
  return p;
}

void infer_lrn(InferContext& ctx) {
  lrn_params(ctx.node());
  require_dtype(ctx, 0, {DType::f32});
  const Shape& x = ctx.input_shape(0);
  if (x.rank() < 3)
    ctx.fail("input has shape " + x.to_string() + "; expected rank >= 3 ([N,C,D1,...])");
  ctx.set_output(0, DType::f32, x);
}

std::vector<Tensor> lrn_reference(const Node& node, const std::vector<Tensor>& in) {
  const LrnParams p = lrn_params(node);
  const Tensor& x = in[0];
  const int64_t N = x.dim(0), C = x.dim(1), inner = dims_product(x.shape(), 2, x.rank());
  const int64_t before = (p.size - 1) / 2, after = p.size - 1 - before;
  Tensor y(DType::f32, x.shape());
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < inner; ++i) {
        double sum = 0;
        for (int64_t k = std::max<int64_t>(0, c - before); k <= std::min(C - 1, c + after); ++k) {
          const double v = xp[(n * C + k) * inner + i];
          sum += v * v;
        }
        const int64_t at = (n * C + c) * inner + i;
        const double scale = double(p.bias) + double(p.alpha) / double(p.size) * sum;
        yp[at] = static_cast<float>(xp[at] / std::pow(scale, double(p.beta)));
      }
  return {y};
}

}  // namespace

void register_lrn_op(OpRegistry& r) {
  OpSchema s;
  s.name = "LRN";
  s.doc = "local response normalization across channels";
  s.attributes = {"size", "alpha", "beta", "bias"};
  s.infer = infer_lrn;
  s.reference = lrn_reference;
  add_builtin_op(r, std::move(s));
}

}  // namespace minfer
