// BatchNormalization (inference mode) and Softmax: schemas and reference kernels.
#include <cmath>

#include "ops/builtin_ops.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

// True when output i exists on the node and something reads it.
bool output_used(const Node& node, size_t i) {
  if (i >= node.outputs.size()) return false;
  const Value* v = node.outputs[i];
  return v && (!v->uses.empty() || v->is_graph_output);
}

// ---- BatchNormalization: Y = (X - mean) / sqrt(var + epsilon) * scale + B ----------------

void infer_batch_norm(InferContext& ctx) {
  const Node& node = ctx.node();
  if (node.attrs.get_int("training_mode", 0) != 0)
    throw Error(ErrorCode::Unsupported,
                node.describe() + ": training_mode=1 is not supported (inference only)");
  for (size_t i = 1; i < node.outputs.size(); ++i)
    if (output_used(node, i))
      throw Error(ErrorCode::Unsupported,
                  node.describe() + ": the training outputs (running mean/var, saved stats) " +
                      "are not supported (inference only)");
  if (node.attrs.get_int("spatial", 1) != 1)
    throw Error(ErrorCode::Unsupported, node.describe() + ": spatial=0 is not supported");
  require_dtype(ctx, 0, {DType::f32});
  const Shape& x = ctx.input_shape(0);
  if (x.rank() < 2)
    ctx.fail("input has shape " + x.to_string() + "; expected rank >= 2 ([N,C,...])");
  static const char* names[] = {"", "scale", "B", "mean", "var"};
  for (size_t i = 1; i < 5; ++i) {
    require_same_dtype(ctx, 0, i);
    const Shape& s = ctx.input_shape(i);
    if (s.rank() != 1 || !dims_compatible(s[0], x[1]))
      ctx.fail(std::string(names[i]) + " has shape " + s.to_string() + ", expected [" +
               (x[1] >= 0 ? std::to_string(x[1]) : std::string("C")) +
               "] (one per channel of input " + x.to_string() + ")");
  }
  ctx.set_output(0, DType::f32, x);
  // Optional training outputs that nobody uses get no shape.
}

std::vector<Tensor> batch_norm_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  double eps = node.attrs.get_float("epsilon", 1e-5f);
  Tensor y(DType::f32, x.shape());
  int64_t N = x.dim(0), C = x.dim(1), sz = dims_product(x.shape(), 2, x.rank());
  const float *xp = x.data<float>(), *sc = in[1].data<float>(), *b = in[2].data<float>();
  const float *mean = in[3].data<float>(), *var = in[4].data<float>();
  float* yp = y.data<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      double inv = 1.0 / std::sqrt(double(var[c]) + eps);
      int64_t base = (n * C + c) * sz;
      for (int64_t i = 0; i < sz; ++i)
        yp[base + i] = static_cast<float>((xp[base + i] - double(mean[c])) * inv * sc[c] + b[c]);
    }
  std::vector<Tensor> out{y};
  for (size_t i = 1; i < node.outputs.size(); ++i) out.emplace_back();  // unused outputs
  return out;
}

// ---- Softmax -----------------------------------------------------------------------------
// Opset >= 13 semantics: softmax along the one axis `axis` (default -1). Opset < 13 models
// (flatten to 2-D at `axis`, default 1) are rewritten by the ONNX importer, which knows the
// model's opset; the Node does not carry it.

void infer_softmax(InferContext& ctx) {
  require_dtype(ctx, 0, {DType::f32});
  const Shape& x = ctx.input_shape(0);
  if (x.rank() == 0) ctx.fail("input must have rank >= 1");
  normalize_axis(ctx.node(), ctx.attrs().get_int("axis", -1), int64_t(x.rank()), "axis");
  ctx.set_output(0, DType::f32, x);
}

std::vector<Tensor> softmax_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  size_t axis = normalize_axis(node, node.attrs.get_int("axis", -1), int64_t(x.rank()), "axis");
  int64_t outer = dims_product(x.shape(), 0, axis), n = x.dim(axis);
  int64_t inner = dims_product(x.shape(), axis + 1, x.rank());
  Tensor y(DType::f32, x.shape());
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const float* xs = xp + o * n * inner + i;
      float* ys = yp + o * n * inner + i;
      double mx = -INFINITY, sum = 0;
      for (int64_t k = 0; k < n; ++k) mx = std::max(mx, double(xs[k * inner]));
      for (int64_t k = 0; k < n; ++k) sum += std::exp(double(xs[k * inner]) - mx);
      for (int64_t k = 0; k < n; ++k)
        ys[k * inner] = static_cast<float>(std::exp(double(xs[k * inner]) - mx) / sum);
    }
  return {y};
}

}  // namespace

void register_norm_ops(OpRegistry& r) {
  OpSchema bn;
  bn.name = "BatchNormalization";
  bn.doc = "inference-mode batch norm with running mean/var";
  bn.min_inputs = bn.max_inputs = 5;
  bn.max_outputs = 5;  // the training outputs are accepted only when nothing uses them
  bn.attributes = {"epsilon", "momentum", "training_mode", "spatial"};
  bn.infer = infer_batch_norm;
  bn.reference = batch_norm_reference;
  add_builtin_op(r, std::move(bn));

  OpSchema sm;
  sm.name = "Softmax";
  sm.doc = "softmax along one axis (opset 13 semantics)";
  sm.attributes = {"axis"};
  sm.infer = infer_softmax;
  sm.reference = softmax_reference;
  add_builtin_op(r, std::move(sm));
}

}  // namespace minfer
