// Transformer-block fusions keyed on the patterns exporters write below the opsets that have
// the ops (torch's export of F.layer_norm before 17 and of GELU before 20):
//  * LayerNorm: ReduceMean -> Sub -> Pow 2 -> ReduceMean -> Add eps -> Sqrt -> Div
//    [-> Mul gamma] [-> Add beta] over trailing dims becomes one LayerNormalization;
//  * Gelu: x * 0.5 * (1 + Erf(x / sqrt 2)) (any order of the two Muls, / sqrt 2 or
//    * 1/sqrt 2) becomes one Gelu.
// The fused nodes are in the com.minfer domain (same semantics as the ONNX ops), so that a
// graph exported after the pass does not claim ONNX ops newer than its opset.
#include <cmath>
#include <optional>

#include "graph/passes/passes.h"
#include "graph/passes/rewrite.h"
#include "minfer/registry.h"

namespace minfer::passes {

namespace {

using rewrite::constant_of;
using rewrite::is_op;
using rewrite::sole_user;

// The value of a one-element f32 constant.
std::optional<double> scalar_of(const Value* v) {
  const Tensor* t = v ? constant_of(v) : nullptr;
  if (!t || t->dtype() != DType::f32 || t->numel() != 1) return std::nullopt;
  return double(t->data<float>()[0]);
}

// The operand of binary `n` that is not `v` (null when both or neither are `v`).
Value* other_input(const Node* n, const Value* v) {
  if (n->inputs.size() != 2) return nullptr;
  if (n->inputs[0] == v && n->inputs[1] != v) return n->inputs[1];
  if (n->inputs[1] == v && n->inputs[0] != v) return n->inputs[0];
  return nullptr;
}

bool near(double a, double b) { return std::fabs(a - b) <= 1e-6 * std::fabs(b); }

// ReduceMean over trailing dims of its input with keepdims: the first reduced dim, or -1.
int64_t trailing_mean_axis(const Node* n) {
  if (!is_op(n, "ReduceMean") || n->attrs.get_int("keepdims", 1) != 1) return -1;
  const Value* x = n->inputs[0];
  if (!x->shape_known) return -1;
  const int64_t rank = int64_t(x->shape.rank());
  std::vector<int64_t> axes;
  if (n->attrs.has("axes")) {
    axes = n->attrs.get_ints("axes");
  } else if (const Tensor* t = n->input(1) ? constant_of(n->input(1)) : nullptr) {
    if (t->dtype() != DType::i64) return -1;
    axes.assign(t->data<int64_t>(), t->data<int64_t>() + t->numel());
  }
  if (axes.empty() || int64_t(axes.size()) > rank) return -1;
  std::vector<bool> seen(rank, false);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) return -1;
    seen[a < 0 ? a + rank : a] = true;
  }
  const int64_t first = rank - int64_t(axes.size());
  for (int64_t d = first; d < rank; ++d)
    if (!seen[d]) return -1;
  return first;
}

bool same_axes(const Node* a, const Node* b) {
  return trailing_mean_axis(a) >= 0 && trailing_mean_axis(a) == trailing_mean_axis(b);
}

// The two users of `v` as (Pow, Div), or nulls.
std::pair<Node*, Node*> pow_and_div_users(const Value* v) {
  if (v->uses.size() != 2 || v->is_graph_output) return {nullptr, nullptr};
  Node* a = v->uses[0].node;
  Node* b = v->uses[1].node;
  if (is_op(b, "Pow")) std::swap(a, b);
  if (!is_op(a, "Pow") || !is_op(b, "Div") || a->inputs[0] != v || b->inputs[0] != v)
    return {nullptr, nullptr};
  return {a, b};
}

bool fuse_one_layer_norm(Graph& g, Node* mean, PassLog& log, std::set<const Node*>& removed) {
  const int64_t axis = trailing_mean_axis(mean);
  if (axis < 0) return false;
  Value* x = mean->inputs[0];
  Node* sub = sole_user(mean->outputs[0]);
  if (!is_op(sub, "Sub") || sub->inputs[0] != x || sub->inputs[1] != mean->outputs[0]) return false;
  auto [pow, div] = pow_and_div_users(sub->outputs[0]);
  if (!pow || scalar_of(pow->inputs[1]) != 2.0) return false;
  Node* var = sole_user(pow->outputs[0]);
  if (!var || !same_axes(mean, var) || var->inputs[0] != pow->outputs[0]) return false;
  Node* add_eps = sole_user(var->outputs[0]);
  if (!is_op(add_eps, "Add")) return false;
  const std::optional<double> eps = scalar_of(other_input(add_eps, var->outputs[0]));
  Node* sqrt = sole_user(add_eps->outputs[0]);
  if (!eps || *eps < 0 || !is_op(sqrt, "Sqrt") || sole_user(sqrt->outputs[0]) != div ||
      div->inputs[1] != sqrt->outputs[0])
    return false;
  std::vector<Node*> chain{mean, sub, pow, var, add_eps, sqrt, div};
  // Optional affine part: * gamma, + beta, each a constant that covers only normalized dims.
  const size_t norm_rank = x->shape.rank() - size_t(axis);
  auto affine = [&](Node* n, const char* op) -> Value* {
    if (!is_op(n, op)) return nullptr;
    Value* c = other_input(n, chain.back()->outputs[0]);
    const Tensor* t = c ? constant_of(c) : nullptr;
    return t && t->dtype() == DType::f32 && t->rank() <= norm_rank ? c : nullptr;
  };
  Value* gamma = affine(sole_user(div->outputs[0]), "Mul");
  if (gamma) chain.push_back(sole_user(div->outputs[0]));
  Value* beta = affine(sole_user(chain.back()->outputs[0]), "Add");
  if (beta) chain.push_back(sole_user(chain.back()->outputs[0]));
  if (!gamma) {
    std::vector<int64_t> dims(x->shape.dims().begin() + axis, x->shape.dims().end());
    for (int64_t d : dims)
      if (d < 0) return false;  // ones of an unknown size
    Tensor ones(DType::f32, Shape(dims));
    std::fill(ones.data<float>(), ones.data<float>() + ones.numel(), 1.f);
    gamma = g.add_constant(mean->name + "_ones", std::move(ones));
  }
  Attributes attrs;
  attrs.set("axis", axis);
  attrs.set("epsilon", float(*eps));
  std::vector<Value*> inputs{x, gamma};
  if (beta) inputs.push_back(beta);
  Node* ln = g.add_node("LayerNormalization", mean->name, inputs, 1, attrs, kMinferDomain);
  log.note("fused " + std::to_string(chain.size()) + " nodes from " + mean->describe() + " to " +
           chain.back()->describe() + " into LayerNormalization");
  rewrite::replace_chain(g, chain, ln, removed);
  return true;
}

// Gelu: the Erf, then walk out: Add 1, Mul x, Mul 0.5 (the 0.5 may come first, on x).
bool fuse_one_gelu(Graph& g, Node* erf, PassLog& log, std::set<const Node*>& removed) {
  Node* scale = erf->inputs[0]->producer;
  if (!scale || sole_user(scale->outputs[0]) != erf || erf->inputs[0]->is_graph_output)
    return false;
  Value* x = nullptr;
  if (is_op(scale, "Div") && scalar_of(scale->input(1)) &&
      near(*scalar_of(scale->input(1)), std::sqrt(2.0)))
    x = scale->inputs[0];
  else if (is_op(scale, "Mul"))
    for (size_t i = 0; i < 2 && !x; ++i)
      if (scalar_of(scale->input(1 - i)) && near(*scalar_of(scale->input(1 - i)), M_SQRT1_2))
        x = scale->inputs[i];
  if (!x) return false;
  Node* add = sole_user(erf->outputs[0]);
  if (!is_op(add, "Add") || scalar_of(other_input(add, erf->outputs[0])) != 1.0) return false;
  Node* m1 = sole_user(add->outputs[0]);
  if (!is_op(m1, "Mul")) return false;
  Value* m1_other = other_input(m1, add->outputs[0]);
  std::vector<Node*> chain{scale, erf, add, m1};
  if (m1_other == x) {  // (x * (1 + erf)) * 0.5
    Node* m2 = sole_user(m1->outputs[0]);
    if (!is_op(m2, "Mul") || scalar_of(other_input(m2, m1->outputs[0])) != 0.5) return false;
    chain.push_back(m2);
  } else {  // (x * 0.5) * (1 + erf)
    Node* half = m1_other ? m1_other->producer : nullptr;
    if (!is_op(half, "Mul") || other_input(half, x) == nullptr ||
        scalar_of(other_input(half, x)) != 0.5 || sole_user(half->outputs[0]) != m1)
      return false;
    chain.insert(chain.begin(), half);
  }
  Node* gelu = g.add_node("Gelu", erf->name, {x}, 1, {}, kMinferDomain);
  log.note("fused " + std::to_string(chain.size()) + " nodes around " + erf->describe() +
           " into Gelu");
  rewrite::replace_chain(g, chain, gelu, removed);
  return true;
}

}  // namespace

bool fuse_layer_norm(Graph& g, PassLog& log) {
  std::set<const Node*> removed;
  bool changed = false;
  for (Node* n : g.topo_order())
    if (!removed.count(n) && is_op(n, "ReduceMean") && n->inputs[0]->dtype == DType::f32)
      changed |= fuse_one_layer_norm(g, n, log, removed);
  return changed;
}

bool fuse_gelu(Graph& g, PassLog& log) {
  std::set<const Node*> removed;
  bool changed = false;
  for (Node* n : g.topo_order())
    if (!removed.count(n) && is_op(n, "Erf") && n->inputs[0]->dtype == DType::f32)
      changed |= fuse_one_gelu(g, n, log, removed);
  return changed;
}

}  // namespace minfer::passes
