#include "graph/passes/rewrite.h"

namespace minfer::rewrite {

Node* sole_user(const Value* v) {
  if (!v || v->is_graph_output || v->uses.size() != 1) return nullptr;
  return v->uses[0].node;
}

bool is_op(const Node* n, const char* op_type, const char* domain) {
  return n && n->op_type == op_type && n->domain == domain;
}

const Tensor* constant_of(const Value* v) { return v && v->constant ? &*v->constant : nullptr; }

void replace_chain(Graph& g, const std::vector<Node*>& old_nodes, Node* replacement,
                   std::set<const Node*>& removed) {
  Value* result = old_nodes.back()->outputs[0];
  Value* fresh = replacement->outputs[0];
  fresh->dtype = result->dtype;
  fresh->shape = result->shape;
  fresh->shape_known = result->shape_known;
  const std::string name = result->name;
  g.replace_all_uses(result, fresh);
  for (auto it = old_nodes.rbegin(); it != old_nodes.rend(); ++it) {
    removed.insert(*it);
    g.remove_node(*it);
  }
  g.remove_unused_values();
  g.rename_value(fresh, name);
}

bool bypass(Graph& g, Node* n) {
  Value* in = n->inputs[0];
  Value* out = n->outputs[0];
  if (out->is_graph_output && (in->is_graph_input || in->is_graph_output || in->is_constant()))
    return false;
  const std::string name = out->name;
  g.replace_all_uses(out, in);
  g.remove_node(n);
  g.remove_unused_values();
  if (in->is_graph_output) g.rename_value(in, name);
  return true;
}

void substitute_graph_output(Graph& g, Value* out, Value* replacement, const std::string& suffix) {
  const std::string name = out->name;
  std::vector<Value*> outputs = g.outputs();
  g.clear_outputs();
  for (Value* o : outputs) g.add_output(o == out ? replacement : o);
  g.rename_value(out, name + suffix);
  g.rename_value(replacement, name);
}

}  // namespace minfer::rewrite
