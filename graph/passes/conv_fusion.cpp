// Conv fusions into com.minfer:FusedConv, whose kernels apply bias, the residual add and the
// activation in the same pass over the output: Y = act(conv(X, W) + B + Z).
#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include "graph/passes/passes.h"
#include "graph/passes/quantize.h"
#include "graph/passes/rewrite.h"
#include "minfer/registry.h"

namespace minfer::passes {

namespace {
bool is_conv(const Node* n) {
  return rewrite::is_op(n, "Conv") || rewrite::is_op(n, "FusedConv", kMinferDomain);
}
bool has_activation(const Node* n) { return !n->attrs.get_string("activation", "").empty(); }
bool has_residual(const Node* n) { return n->input(3) != nullptr; }

// A FusedConv with the conv's inputs and attributes; inputs beyond are filled by the caller.
Node* make_fused(Graph& g, const Node& conv, Value* bias, Value* residual, Attributes attrs) {
  std::vector<Value*> inputs{conv.inputs[0], conv.inputs[1], bias};
  if (residual) inputs.push_back(residual);
  return g.add_node("FusedConv", conv.name, inputs, 1, std::move(attrs), kMinferDomain);
}

// Relu, or Clip with constant bounds: the activation attributes, or nothing.
std::optional<Attributes> activation_of(const Node& act, Attributes attrs) {
  if (rewrite::is_op(&act, "Relu")) {
    attrs.set("activation", std::string("Relu"));
    return attrs;
  }
  if (!rewrite::is_op(&act, "Clip")) return std::nullopt;
  float lo = act.attrs.get_float("min", std::numeric_limits<float>::lowest());
  float hi = act.attrs.get_float("max", std::numeric_limits<float>::max());
  for (size_t i = 1; i <= 2; ++i) {
    if (!act.input(i)) continue;
    const Tensor* t = rewrite::constant_of(act.input(i));
    if (!t || t->dtype() != DType::f32 || t->numel() != 1) return std::nullopt;
    (i == 1 ? lo : hi) = t->data<float>()[0];
  }
  attrs.set("activation", std::string("Clip"));
  attrs.set("activation_min", lo);
  attrs.set("activation_max", hi);
  return attrs;
}

// x * g(x) with g's output used only by that Mul: the Mul, or null.
Node* gating_mul(const Node& gate, const Value* x) {
  Node* mul = rewrite::sole_user(gate.outputs[0]);
  if (!rewrite::is_op(mul, "Mul") || mul->inputs.size() != 2) return nullptr;
  const bool pairs = (mul->inputs[0] == x && mul->inputs[1] == gate.outputs[0]) ||
                     (mul->inputs[1] == x && mul->inputs[0] == gate.outputs[0]);
  return pairs ? mul : nullptr;
}

bool is_hard_swish_gate(const Node& n) {  // HardSigmoid(x / 6 + 1/2): torch's opset < 14 export
  return rewrite::is_op(&n, "HardSigmoid") &&
         std::abs(n.attrs.get_float("alpha", 0.2f) - 1.f / 6.f) < 1e-6f &&
         n.attrs.get_float("beta", 0.5f) == 0.5f;
}

// The smooth activation a conv's output goes through, as the nodes that compute it (after the
// conv) and FusedConv's attributes; or no nodes.
std::vector<Node*> smooth_activation_of(const Value* x, Attributes& attrs) {
  if (x->is_graph_output) return {};
  if (x->uses.size() == 1) {  // Sigmoid, HardSigmoid, HardSwish or Gelu of x
    Node* act = x->uses[0].node;
    if (act->inputs.empty() || act->inputs[0] != x) return {};
    const std::string approximate = act->attrs.get_string("approximate", "none");
    if (rewrite::is_op(act, "Sigmoid") || rewrite::is_op(act, "HardSwish")) {
      attrs.set("activation", act->op_type);
    } else if ((rewrite::is_op(act, "Gelu") || rewrite::is_op(act, "Gelu", kMinferDomain)) &&
               (approximate == "none" || approximate == "tanh")) {
      attrs.set("activation", std::string(approximate == "tanh" ? "GeluTanh" : "Gelu"));
    } else if (rewrite::is_op(act, "HardSigmoid")) {
      attrs.set("activation", std::string("HardSigmoid"));
      attrs.set("activation_alpha", act->attrs.get_float("alpha", 0.2f));
      attrs.set("activation_beta", act->attrs.get_float("beta", 0.5f));
    } else {
      return {};
    }
    return {act};
  }
  if (x->uses.size() != 2) return {};
  // x * Sigmoid(x) = SiLU, x * HardSigmoid(x / 6 + 1/2) = HardSwish: x's two users.
  for (const Use& use : x->uses) {
    Node* gate = use.node;
    const bool silu = rewrite::is_op(gate, "Sigmoid");
    if ((!silu && !is_hard_swish_gate(*gate)) || gate->inputs[0] != x) continue;
    Node* mul = gating_mul(*gate, x);
    if (!mul) continue;
    attrs.set("activation", std::string(silu ? "Silu" : "HardSwish"));
    return {gate, mul};
  }
  return {};
}

// Fuses each node with the nodes after it that `match(node, attrs)` returns (in order; it also
// sets the fused node's attributes, from the node's): make(node, attrs) takes their place.
template <typename Match, typename Make>
bool fuse_chains(Graph& g, PassLog& log, Match match, Make make) {
  bool changed = false;
  std::set<const Node*> removed;
  for (Node* n : g.topo_order()) {
    if (removed.count(n)) continue;  // (freed)
    Attributes attrs = n->attrs;
    const std::vector<Node*> act = match(*n, attrs);
    if (act.empty()) continue;
    Node* fused = make(*n, std::move(attrs));
    std::string what = "fused " + n->describe();
    for (const Node* a : act) what += " + " + a->describe();
    log.note(what);
    std::vector<Node*> chain{n};
    chain.insert(chain.end(), act.begin(), act.end());
    rewrite::replace_chain(g, chain, fused, removed);
    changed = true;
  }
  return changed;
}

// Fuses each conv without an activation with the nodes after it that `match(conv, attrs)`
// returns: one FusedConv takes their place.
template <typename Match>
bool fuse_conv_with(Graph& g, PassLog& log, Match match) {
  return fuse_chains(
      g, log,
      [&](const Node& n, Attributes& attrs) -> std::vector<Node*> {
        if (!is_conv(&n) || has_activation(&n)) return {};
        return match(n, attrs);
      },
      [&](const Node& n, Attributes attrs) {
        return make_fused(g, n, n.input(2), n.input(3), std::move(attrs));
      });
}
}  // namespace

bool fuse_conv_bias(Graph& g, PassLog& log) {
  bool changed = false;
  std::set<const Node*> removed;
  for (Node* n : g.topo_order()) {
    if (removed.count(n)) continue;
    if (!is_conv(n) || has_activation(n) || has_residual(n)) continue;
    Node* add = rewrite::sole_user(n->outputs[0]);
    if (!rewrite::is_op(add, "Add")) continue;
    const Value* other = add->inputs[0] == n->outputs[0] ? add->inputs[1] : add->inputs[0];
    const Tensor* c = rewrite::constant_of(other);
    const Tensor* w = rewrite::constant_of(n->input(1));
    if (!c || !w || c->dtype() != DType::f32) continue;
    const int64_t channels = w->dim(0);
    // Only a per-output-channel constant: [C,1,1] or [1,C,1,1].
    const auto& d = c->shape().dims();
    bool per_channel = c->numel() == channels && d.size() >= 3 && d.size() <= 4 &&
                       d[d.size() - 3] == channels;
    if (!per_channel || n->outputs[0]->shape.rank() != 4) continue;
    const Tensor* b = rewrite::constant_of(n->input(2));
    if (n->input(2) && !b) continue;
    std::vector<float> bias(channels);
    for (int64_t k = 0; k < channels; ++k)
      bias[k] = (b ? b->data<float>()[k] : 0.f) + c->data<float>()[k];
    Value* new_b = g.add_constant(n->name + ".bias_fused", Tensor::from_vector(bias, Shape{channels}));
    Node* fused = g.add_node(n->op_type, n->name, {n->inputs[0], n->inputs[1], new_b}, 1,
                             n->attrs, n->domain);
    log.note("fused " + add->describe() + " into the bias of " + n->describe());
    rewrite::replace_chain(g, {n, add}, fused, removed);
    changed = true;
  }
  return changed;
}

bool fuse_conv_residual(Graph& g, PassLog& log) {
  bool changed = false;
  std::set<const Node*> removed;
  for (Node* add : g.topo_order()) {
    if (removed.count(add)) continue;
    if (!rewrite::is_op(add, "Add") || add->inputs.size() != 2) continue;
    // Prefer fusing the conv on input 0 (torchvision: out += identity).
    for (int side = 0; side < 2; ++side) {
      Value* mine = add->inputs[side];
      Value* shortcut = add->inputs[1 - side];
      Node* conv = mine ? mine->producer : nullptr;
      if (!is_conv(conv) || has_activation(conv) || has_residual(conv)) continue;
      if (rewrite::sole_user(mine) != add || !shortcut || shortcut == mine) continue;
      if (!mine->shape_known || !shortcut->shape_known || mine->shape != shortcut->shape ||
          mine->dtype != DType::f32 || shortcut->dtype != DType::f32)
        continue;
      std::vector<Node*> chain{conv, add};
      Attributes attrs = conv->attrs;
      Node* relu = rewrite::sole_user(add->outputs[0]);
      if (rewrite::is_op(relu, "Relu")) {
        attrs.set("activation", std::string("Relu"));
        chain.push_back(relu);
      }
      Node* fused = make_fused(g, *conv, conv->input(2), shortcut, attrs);
      std::string what = "fused " + conv->describe() + " + " + add->describe();
      if (chain.size() == 3) what += " + " + relu->describe();
      log.note(what);
      rewrite::replace_chain(g, chain, fused, removed);
      changed = true;
      break;
    }
  }
  return changed;
}

bool fuse_conv_activation(Graph& g, PassLog& log) {
  return fuse_conv_with(g, log, [](const Node& conv, Attributes& attrs) -> std::vector<Node*> {
    Node* act = rewrite::sole_user(conv.outputs[0]);
    if (!act || act->inputs[0] != conv.outputs[0]) return {};
    std::optional<Attributes> fused = activation_of(*act, attrs);
    if (!fused) return {};
    attrs = std::move(*fused);
    return {act};
  });
}

bool fuse_conv_smooth_activation(Graph& g, PassLog& log) {
  return fuse_conv_with(g, log, [](const Node& conv, Attributes& attrs) -> std::vector<Node*> {
    if (conv.outputs[0]->dtype != DType::f32) return {};
    return smooth_activation_of(conv.outputs[0], attrs);
  });
}

bool fuse_int8_smooth_activation(Graph& g, PassLog& log) {
  auto match = [](const Node& n, Attributes& attrs) -> std::vector<Node*> {
    const bool int8_op =
        rewrite::is_op(&n, "QConv", kMinferDomain) || rewrite::is_op(&n, "QGemm", kMinferDomain);
    if (!int8_op || n.attrs.has("y_scale") || has_activation(&n)) return {};
    std::vector<Node*> act = smooth_activation_of(n.outputs[0], attrs);
    if (act.empty()) return {};
    // A per-tensor int8 QuantizeLinear as the activation's only user: the op's int8 output.
    Node* q = rewrite::sole_user(act.back()->outputs[0]);
    const auto p = rewrite::is_op(q, "QuantizeLinear") && q->inputs[0] == act.back()->outputs[0]
                       ? quant::qdq_params(*q)
                       : std::nullopt;
    if (p && p->per_tensor() && p->dtype == DType::i8) {
      attrs.set("y_scale", p->scale[0]);
      attrs.set("y_zero_point", int64_t{p->zero_point[0]});
      act.push_back(q);
    }
    return act;
  };
  return fuse_chains(g, log, match, [&](const Node& n, Attributes attrs) {
    return g.add_node(n.op_type, n.name, n.inputs, 1, std::move(attrs), kMinferDomain);
  });
}

}  // namespace minfer::passes
