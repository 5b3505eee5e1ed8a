// The two ends of an SE block in the NHWC int8 region (EfficientNet's), each made one node so
// that an intermediate tensor is never written and read back, with the same arithmetic:
//
// gated-quantize-fusion: Mul(x, gate) -> QuantizeLinear to int8, where the gate is one float
// per channel of x's last axis (the block's channel scale), becomes one com.minfer:GatedQuantize
// (ops/int8/gated_quantize.cpp): the float product, then the QuantizeLinear's division,
// rounding and clamp.
//
// quantize-pool-fusion: QuantizeLinear to int8 -> QGlobalAveragePool (the block's squeeze, its
// only reader) becomes the pool on the floats, which it quantizes with its own x_scale and
// x_zero_point (ops/int8/qpool.cpp): where those are the QuantizeLinear's, the same int8 values.
#include <set>
#include <utility>

#include "graph/passes/passes.h"
#include "graph/passes/quantize.h"
#include "graph/passes/rewrite.h"
#include "minfer/registry.h"

namespace minfer::passes {

namespace {

// Whether `gate` (f32) is one value per channel of `x`'s last axis: [..1.., C].
bool per_channel_gate(const Value& x, const Value& gate) {
  if (!x.shape_known || !gate.shape_known || x.dtype != DType::f32 || gate.dtype != DType::f32 ||
      x.shape.rank() == 0 || gate.shape.rank() == 0 || gate.shape.rank() > x.shape.rank() ||
      !x.shape.is_static() || !gate.shape.is_static())
    return false;
  const int64_t channels = x.shape[x.shape.rank() - 1];
  if (gate.shape[gate.shape.rank() - 1] != channels || channels <= 1) return false;
  for (size_t d = 0; d + 1 < gate.shape.rank(); ++d)
    if (gate.shape[d] != 1) return false;
  return true;
}

}  // namespace

bool fuse_gated_quantize(Graph& g, PassLog& log) {
  bool changed = false;
  std::set<const Node*> removed;
  for (Node* mul : g.topo_order()) {
    if (removed.count(mul) || !rewrite::is_op(mul, "Mul") || mul->inputs.size() != 2) continue;
    Node* q = rewrite::sole_user(mul->outputs[0]);
    if (!rewrite::is_op(q, "QuantizeLinear") || q->inputs[0] != mul->outputs[0]) continue;
    const auto p = quant::qdq_params(*q);
    if (!p || !p->per_tensor() || p->dtype != DType::i8) continue;
    // Either input may be the gate; x has the product's shape.
    Value* x = mul->inputs[0];
    Value* gate = mul->inputs[1];
    if (!per_channel_gate(*x, *gate)) std::swap(x, gate);
    if (!per_channel_gate(*x, *gate) || x->shape != mul->outputs[0]->shape) continue;
    Attributes attrs;
    attrs.set("y_scale", p->scale[0]);
    attrs.set("y_zero_point", int64_t{p->zero_point[0]});
    Node* fused = g.add_node("GatedQuantize", mul->name, {x, gate}, 1, attrs, kMinferDomain);
    log.note("fused " + mul->describe() + " + " + q->describe());
    rewrite::replace_chain(g, {mul, q}, fused, removed);
    changed = true;
  }
  return changed;
}

bool fuse_quantize_global_pool(Graph& g, PassLog& log) {
  bool changed = false;
  std::set<const Node*> removed;
  for (Node* q : g.topo_order()) {
    if (removed.count(q) || !rewrite::is_op(q, "QuantizeLinear")) continue;
    Node* pool = rewrite::sole_user(q->outputs[0]);
    if (!rewrite::is_op(pool, "QGlobalAveragePool", kMinferDomain) ||
        pool->attrs.get_string("layout", "NCHW") != "NHWC" || q->inputs[0]->dtype != DType::f32)
      continue;
    const auto p = quant::qdq_params(*q);
    if (!p || !p->per_tensor() || p->dtype != DType::i8 ||
        pool->attrs.get_float("x_scale", 0.f) != p->scale[0] ||
        pool->attrs.get_int("x_zero_point", 0) != p->zero_point[0])
      continue;
    Node* fused =
        g.add_node("QGlobalAveragePool", pool->name, {q->inputs[0]}, 1, pool->attrs, kMinferDomain);
    log.note("fused " + q->describe() + " into " + pool->describe());
    rewrite::replace_chain(g, {q, pool}, fused, removed);
    changed = true;
  }
  return changed;
}

}  // namespace minfer::passes
