// Gemm fusions: MatMul + Add(bias) becomes Gemm; Gemm + Relu/Clip becomes com.minfer:FusedGemm,
// whose kernels apply the activation while writing the output. For CPU sessions, MatMul of a
// rank-3+ A (a transformer's [batch, tokens, features]) + Add(bias) becomes
// com.minfer:FusedMatMul, the bias added in the GEMM's registers (and a Gelu after it applied
// in the GEMM's epilogue).
#include <limits>

#include "graph/passes/passes.h"
#include "graph/passes/rewrite.h"
#include "minfer/registry.h"

namespace minfer::passes {

namespace {
// MatMul(A, B) + Add(c) with B a constant matrix and c a constant vector of B's columns (f32):
// the nodes and c, or nulls.
struct BiasedMatMul {
  Node* matmul = nullptr;
  Node* add = nullptr;
  Value* bias = nullptr;
};
BiasedMatMul biased_matmul(Node* n) {
  if (!rewrite::is_op(n, "MatMul")) return {};
  Node* add = rewrite::sole_user(n->outputs[0]);
  if (!rewrite::is_op(add, "Add")) return {};
  const Tensor* b = rewrite::constant_of(n->inputs[1]);
  Value* bias = add->inputs[0] == n->outputs[0] ? add->inputs[1] : add->inputs[0];
  const Tensor* c = rewrite::constant_of(bias);
  if (!n->inputs[0]->shape_known || !b || b->rank() != 2 || !c || c->rank() != 1 ||
      c->numel() != b->dim(1) || n->inputs[0]->dtype != DType::f32)
    return {};
  return {n, add, bias};
}

bool matmul_add_to_gemm(Graph& g, PassLog& log, std::set<const Node*>& removed) {
  bool changed = false;
  for (Node* n : g.topo_order()) {
    if (removed.count(n)) continue;
    const BiasedMatMul m = biased_matmul(n);
    if (!m.matmul || n->inputs[0]->shape.rank() != 2) continue;  // Gemm is 2-D only
    Node* gemm = g.add_node("Gemm", n->name, {n->inputs[0], n->inputs[1], m.bias});
    log.note("fused " + n->describe() + " + " + m.add->describe() + " into Gemm");
    rewrite::replace_chain(g, {n, m.add}, gemm, removed);
    changed = true;
  }
  return changed;
}

bool gemm_activation(Graph& g, PassLog& log, std::set<const Node*>& removed) {
  bool changed = false;
  for (Node* n : g.topo_order()) {
    if (removed.count(n) || !rewrite::is_op(n, "Gemm")) continue;
    Node* act = rewrite::sole_user(n->outputs[0]);
    if (!act || act->inputs[0] != n->outputs[0]) continue;
    Attributes attrs = n->attrs;
    if (rewrite::is_op(act, "Relu")) {
      attrs.set("activation", std::string("Relu"));
    } else if (rewrite::is_op(act, "Clip")) {
      float lo = act->attrs.get_float("min", std::numeric_limits<float>::lowest());
      float hi = act->attrs.get_float("max", std::numeric_limits<float>::max());
      bool ok = true;
      for (size_t i = 1; i <= 2; ++i) {
        if (!act->input(i)) continue;
        const Tensor* t = rewrite::constant_of(act->input(i));
        ok &= t && t->dtype() == DType::f32 && t->numel() == 1;
        if (ok) (i == 1 ? lo : hi) = t->data<float>()[0];
      }
      if (!ok) continue;
      attrs.set("activation", std::string("Clip"));
      attrs.set("activation_min", lo);
      attrs.set("activation_max", hi);
    } else {
      continue;
    }
    Node* fused = g.add_node("FusedGemm", n->name, n->inputs, 1, attrs, kMinferDomain);
    log.note("fused " + n->describe() + " + " + act->describe());
    rewrite::replace_chain(g, {n, act}, fused, removed);
    changed = true;
  }
  return changed;
}
}  // namespace

bool fuse_matmul_bias(Graph& g, PassLog& log) {
  std::set<const Node*> removed;
  bool changed = false;
  for (Node* n : g.topo_order()) {
    if (removed.count(n)) continue;
    const BiasedMatMul m = biased_matmul(n);
    if (!m.matmul || n->inputs[0]->shape.rank() < 3) continue;
    // A Gelu after the bias (transformers' MLP) goes into the GEMM's epilogue too.
    std::vector<Node*> chain{n, m.add};
    Attributes attrs;
    Node* gelu = rewrite::sole_user(m.add->outputs[0]);
    if (gelu && (rewrite::is_op(gelu, "Gelu") || rewrite::is_op(gelu, "Gelu", kMinferDomain))) {
      const std::string approximate = gelu->attrs.get_string("approximate", "none");
      if (approximate == "none" || approximate == "tanh") {
        attrs.set("activation", std::string(approximate == "tanh" ? "GeluTanh" : "Gelu"));
        chain.push_back(gelu);
      }
    }
    Node* fused = g.add_node("FusedMatMul", n->name, {n->inputs[0], n->inputs[1], m.bias}, 1,
                             attrs, kMinferDomain);
    std::string what = n->describe() + " + " + m.add->describe();
    if (chain.size() == 3) what += " + " + gelu->describe();
    log.note("fused " + what + " into FusedMatMul");
    rewrite::replace_chain(g, chain, fused, removed);
    changed = true;
  }
  return changed;
}

bool fuse_gemm(Graph& g, PassLog& log) {
  std::set<const Node*> removed;
  bool changed = matmul_add_to_gemm(g, log, removed);
  changed |= gemm_activation(g, log, removed);
  return changed;
}

}  // namespace minfer::passes
