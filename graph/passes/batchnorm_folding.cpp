// BatchNormalization folding: y = gamma * (conv(x) + b - mean) / sqrt(var + eps) + beta
// is a conv with weights scaled per output channel and a new bias (created if absent).
// A BatchNormalization that follows no conv but is followed by a Relu (DenseNet's and the
// pre-activation ResNets' BN -> Relu -> Conv) becomes a 1x1 depthwise conv (its scale and
// shift per channel), which the Relu then fuses into: one pass over the tensor, not two.
#include <cmath>

#include "graph/passes/passes.h"
#include "graph/passes/rewrite.h"

namespace minfer::passes {

namespace {
struct BnParams {
  std::vector<double> scale, shift;  // y = scale * x + shift, per channel
};

std::optional<BnParams> bn_params(const Node& bn, int64_t channels) {
  const Tensor* t[4];
  for (int i = 0; i < 4; ++i) {
    t[i] = rewrite::constant_of(bn.input(i + 1));
    if (!t[i] || t[i]->dtype() != DType::f32 || t[i]->numel() != channels) return std::nullopt;
  }
  double eps = bn.attrs.get_float("epsilon", 1e-5f);
  BnParams p;
  for (int64_t c = 0; c < channels; ++c) {
    double gamma = t[0]->data<float>()[c], beta = t[1]->data<float>()[c];
    double mean = t[2]->data<float>()[c], var = t[3]->data<float>()[c];
    double s = gamma / std::sqrt(var + eps);
    p.scale.push_back(s);
    p.shift.push_back(beta - mean * s);
  }
  return p;
}

// Scales rows (out channels, along `axis` 0) or columns (axis 1) of a 2-D+ weight.
Tensor scale_weight(const Tensor& w, const std::vector<double>& scale, int axis) {
  Tensor out = w.clone();
  float* p = out.data<float>();
  const int64_t channels = static_cast<int64_t>(scale.size());
  if (axis == 0) {
    const int64_t per = w.numel() / channels;
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t i = 0; i < per; ++i) p[c * per + i] = float(p[c * per + i] * scale[c]);
  } else {
    const int64_t rows = w.numel() / channels;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < channels; ++c)
        p[r * channels + c] = float(p[r * channels + c] * scale[c]);
  }
  return out;
}

Tensor fold_bias(const Tensor* bias, const BnParams& p) {
  std::vector<float> b(p.scale.size());
  for (size_t c = 0; c < b.size(); ++c) {
    double old = bias ? bias->data<float>()[c] : 0.0;
    b[c] = float(old * p.scale[c] + p.shift[c]);
  }
  return Tensor::from_vector(b, Shape{static_cast<int64_t>(b.size())});
}
}  // namespace

bool fold_batchnorm(Graph& g, PassLog& log) {
  bool changed = false;
  std::set<const Node*> removed;
  for (Node* n : g.topo_order()) {
    if (removed.count(n)) continue;
    const bool is_conv = rewrite::is_op(n, "Conv");
    const bool is_gemm = rewrite::is_op(n, "Gemm");
    if (!is_conv && !is_gemm) continue;
    Node* bn = rewrite::sole_user(n->outputs[0]);
    if (!rewrite::is_op(bn, "BatchNormalization") || bn->inputs[0] != n->outputs[0] ||
        bn->outputs.size() != 1)
      continue;
    const Tensor* w = rewrite::constant_of(n->input(1));
    const Tensor* b = rewrite::constant_of(n->input(2));
    if (!w || w->dtype() != DType::f32 || (n->input(2) && !b)) continue;
    if (is_gemm && (w->rank() != 2 || n->attrs.get_float("alpha", 1.f) != 1.f ||
                    n->attrs.get_float("beta", 1.f) != 1.f || (b && b->rank() != 1)))
      continue;
    const bool trans_b = is_gemm && n->attrs.get_int("transB", 0) != 0;
    const int64_t channels = is_conv ? w->dim(0) : (trans_b ? w->dim(0) : w->dim(1));
    if (b && b->numel() != channels) continue;
    auto params = bn_params(*bn, channels);
    if (!params) continue;

    Value* new_w = g.add_constant(n->name + ".weight_bnfolded",
                                  scale_weight(*w, params->scale, (is_conv || trans_b) ? 0 : 1));
    Value* new_b = g.add_constant(n->name + ".bias_bnfolded", fold_bias(b, *params));
    Node* fused = g.add_node(n->op_type, n->name, {n->inputs[0], new_w, new_b}, 1, n->attrs);
    log.note("folded " + bn->describe() + " into " + n->describe());
    rewrite::replace_chain(g, {n, bn}, fused, removed);
    changed = true;
  }
  return changed;
}

bool batchnorm_to_depthwise(Graph& g, PassLog& log) {
  bool changed = false;
  std::set<const Node*> removed;
  for (Node* bn : g.topo_order()) {
    if (removed.count(bn) || !rewrite::is_op(bn, "BatchNormalization") || bn->outputs.size() != 1)
      continue;
    Value* x = bn->inputs[0];
    if (!x || !x->shape_known || x->shape.rank() != 4 || x->dtype != DType::f32 ||
        x->shape[1] < 1 || !rewrite::is_op(rewrite::sole_user(bn->outputs[0]), "Relu"))
      continue;
    const int64_t channels = x->shape[1];
    auto params = bn_params(*bn, channels);
    if (!params) continue;
    std::vector<float> scale(params->scale.begin(), params->scale.end());
    Attributes a;
    a.set("group", channels);
    a.set("kernel_shape", std::vector<int64_t>{1, 1});
    Value* w = g.add_constant(bn->name + ".weight_depthwise",
                              Tensor::from_vector(scale, Shape{channels, 1, 1, 1}));
    Value* b = g.add_constant(bn->name + ".bias_depthwise", fold_bias(nullptr, *params));
    Node* conv = g.add_node("Conv", bn->name, {x, w, b}, 1, a);
    log.note("made " + bn->describe() + " a 1x1 depthwise conv (the Relu after it fuses)");
    rewrite::replace_chain(g, {bn}, conv, removed);
    changed = true;
  }
  return changed;
}

}  // namespace minfer::passes
