// affine-quantize-fusion (CPU): a per-channel scale and shift, its Relu fused (a
// BatchNormalization that batchnorm-to-depthwise made a 1x1 depthwise conv), then an int8
// QuantizeLinear and the Transpose into the NHWC int8 region, becomes one
// com.minfer:AffineQuantize (ops/int8/affine_quantize.cpp), its scale and shift divided by the
// QuantizeLinear's y_scale. DenseNet puts a BatchNormalization and a Relu before each int8
// conv, between its float Concats (NCHW) and the int8 region: one pass over the floats where
// there were three (the depthwise conv, the quantize, the int8 Transpose).
#include <algorithm>
#include <set>

#include "graph/passes/passes.h"
#include "graph/passes/quantize.h"
#include "graph/passes/rewrite.h"
#include "minfer/registry.h"

namespace minfer::passes {

namespace {

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  return std::all_of(v.begin(), v.end(), [x](int64_t e) { return e == x; });
}

// The per-channel scale of a FusedConv that is one: 1x1 depthwise, unpadded, stride 1, constant
// weights [C, 1, 1, 1], activation none or Relu, no residual; else null.
const Tensor* channel_scale(const Node& conv) {
  if (!rewrite::is_op(&conv, "FusedConv", kMinferDomain) || conv.input(3)) return nullptr;
  const std::string act = conv.attrs.get_string("activation", "");
  const Value* x = conv.inputs[0];
  if ((!act.empty() && act != "Relu") || !x || x->dtype != DType::f32 || !x->shape_known ||
      !x->shape.is_static() || x->shape.rank() != 4)
    return nullptr;
  const int64_t channels = x->shape[1];
  const Tensor* w = rewrite::constant_of(conv.input(1));
  if (!w || w->dtype() != DType::f32 || w->shape() != Shape{channels, 1, 1, 1} ||
      conv.attrs.get_int("group", 1) != channels ||
      conv.attrs.get_string("auto_pad", "NOTSET") != "NOTSET" ||
      !all_equal(conv.attrs.get_ints("pads"), 0) || !all_equal(conv.attrs.get_ints("strides"), 1) ||
      !all_equal(conv.attrs.get_ints("dilations"), 1))
    return nullptr;
  const Tensor* b = conv.input(2) ? rewrite::constant_of(conv.input(2)) : nullptr;
  if (conv.input(2) && (!b || b->dtype() != DType::f32 || b->numel() != channels)) return nullptr;
  return w;
}

bool is_to_nhwc(const Node* n) {
  return rewrite::is_op(n, "Transpose") &&
         n->attrs.get_ints("perm") == std::vector<int64_t>{0, 2, 3, 1};
}

}  // namespace

bool fuse_affine_quantize(Graph& g, PassLog& log) {
  bool changed = false;
  std::set<const Node*> removed;
  for (Node* conv : g.topo_order()) {
    if (removed.count(conv)) continue;
    const Tensor* w = channel_scale(*conv);
    if (!w) continue;
    Node* q = rewrite::sole_user(conv->outputs[0]);
    if (!rewrite::is_op(q, "QuantizeLinear") || q->inputs[0] != conv->outputs[0]) continue;
    const auto p = quant::qdq_params(*q);
    Node* t = rewrite::sole_user(q->outputs[0]);
    if (!p || !p->per_tensor() || p->dtype != DType::i8 || !(p->scale[0] > 0) || !is_to_nhwc(t))
      continue;
    const int64_t channels = w->dim(0);
    const Tensor* bias = conv->input(2) ? rewrite::constant_of(conv->input(2)) : nullptr;
    std::vector<float> scale(channels), shift(channels, 0.f);  // in the output's quanta
    for (int64_t c = 0; c < channels; ++c) {
      scale[c] = static_cast<float>(double(w->data<float>()[c]) / p->scale[0]);
      if (bias) shift[c] = static_cast<float>(double(bias->data<float>()[c]) / p->scale[0]);
    }
    Attributes a;
    a.set("y_zero_point", int64_t{p->zero_point[0]});
    a.set("activation", conv->attrs.get_string("activation", ""));
    Node* fused =
        g.add_node("AffineQuantize", conv->name,
                   {conv->inputs[0],
                    quant::add_unique_constant(g, conv->name + ".scale",
                                               Tensor::from_vector(scale, Shape{channels})),
                    quant::add_unique_constant(g, conv->name + ".shift",
                                               Tensor::from_vector(shift, Shape{channels}))},
                   1, a, kMinferDomain);
    log.note("fused " + conv->describe() + " + " + q->describe() + " + " + t->describe());
    rewrite::replace_chain(g, {conv, q, t}, fused, removed);
    changed = true;
  }
  return changed;
}

}  // namespace minfer::passes
