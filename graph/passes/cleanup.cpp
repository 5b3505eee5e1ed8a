// Dead-code elimination and removal of nodes that do nothing.
#include "graph/passes/passes.h"
#include "graph/passes/rewrite.h"

namespace minfer::passes {

bool eliminate_dead_code(Graph& g, PassLog& log) {
  bool changed = false;
  auto order = g.topo_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {  // consumers first
    Node* n = *it;
    bool used = false;
    for (const Value* v : n->outputs) used |= !v->uses.empty() || v->is_graph_output;
    if (used) continue;
    log.note("removed unused " + n->describe());
    g.remove_node(n);
    changed = true;
  }
  if (changed) g.remove_unused_values();
  return changed;
}

namespace {
// True when the node's output is its input unchanged (same dtype, shape and data order).
bool is_no_op(const Node& n) {
  if (n.inputs.empty() || !n.inputs[0] || n.outputs.size() != 1) return false;
  const Value* in = n.inputs[0];
  const Value* out = n.outputs[0];
  if (!in->shape_known || !out->shape_known || in->dtype != out->dtype) return false;
  if (n.domain.empty() && n.op_type == "Identity") return true;  // Dropout: dropout_elimination
  if (!in->shape.is_static() || in->shape != out->shape) return false;
  if (n.domain.empty() && (n.op_type == "Reshape" || n.op_type == "Flatten" ||
                           n.op_type == "Squeeze" || n.op_type == "Unsqueeze"))
    return true;
  if (rewrite::is_op(&n, "Transpose")) {
    auto perm = n.attrs.get_ints("perm");
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != static_cast<int64_t>(i)) return false;
    return !perm.empty();
  }
  return false;
}
}  // namespace

bool eliminate_identities(Graph& g, PassLog& log) {
  bool changed = false;
  for (Node* n : g.topo_order()) {
    if (!is_no_op(*n)) continue;
    const std::string what = n->describe();
    if (!rewrite::bypass(g, n)) continue;  // a graph output keeps its name
    log.note("removed no-op " + what);
    changed = true;
  }
  return changed;
}

namespace {
// A Transpose that moves only dims of size 1 keeps every element in place: it is a Reshape
// (which the planner lets share its input's buffer: no copy). Needs static shapes.
bool moves_only_unit_dims(const Node& n) {
  if (!rewrite::is_op(&n, "Transpose") || n.inputs.size() != 1 || n.outputs.size() != 1)
    return false;
  const Value* in = n.inputs[0];
  const Value* out = n.outputs[0];
  if (!in->shape_known || !out->shape_known || !in->shape.is_static() || !out->shape.is_static())
    return false;
  const std::vector<int64_t> perm = n.attrs.get_ints("perm");
  if (perm.size() != in->shape.rank()) return false;  // default perm (reversal): left alone
  int64_t last = -1;
  for (int64_t p : perm) {
    if (p < 0 || p >= int64_t(perm.size())) return false;
    if (in->shape[size_t(p)] == 1) continue;
    if (p < last) return false;
    last = p;
  }
  return true;
}
}  // namespace

bool transposes_to_reshapes(Graph& g, PassLog& log) {
  bool changed = false;
  for (Node* n : g.topo_order()) {
    if (!moves_only_unit_dims(*n)) continue;
    const std::vector<int64_t>& dims = n->outputs[0]->shape.dims();
    std::string name = n->name + "_shape";
    for (int i = 1; g.find_value(name); ++i) name = n->name + "_shape" + std::to_string(i);
    Value* shape = g.add_constant(name, Tensor::from_vector(dims, Shape{int64_t(dims.size())}));
    log.note("made " + n->describe() + " a Reshape (it moves only dims of size 1)");
    n->op_type = "Reshape";
    n->attrs = Attributes{};
    n->inputs.push_back(nullptr);
    g.set_input(n, 1, shape);
    changed = true;
  }
  return changed;
}

}  // namespace minfer::passes
