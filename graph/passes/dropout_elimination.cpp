// Removes Dropout nodes that run in inference mode and whose mask nobody reads: at inference
// Dropout is the identity, so its consumers can read its input directly.
#include "graph/passes/passes.h"
#include "graph/passes/rewrite.h"

namespace minfer::passes {

namespace {

bool constant_scalar_is(const Value* v, DType dtype, double value) {
  if (!v || !v->is_constant() || v->constant->numel() != 1 || v->constant->dtype() != dtype)
    return false;
  return dtype == DType::boolean ? v->constant->data<bool>()[0] == (value != 0)
                                 : v->constant->data<float>()[0] == value;
}

// Inference mode: training_mode absent or a constant false (a run-time training_mode input
// could be true, and is then refused by the kernel, so such a node stays); or training mode
// with a constant ratio of 0, which keeps every element.
bool inference_mode(const Node& n) {
  const Value* t = n.input(2);
  return !t || constant_scalar_is(t, DType::boolean, 0) ||
         (constant_scalar_is(t, DType::boolean, 1) &&
          constant_scalar_is(n.input(1), DType::f32, 0));
}

bool mask_unused(const Node& n) {
  return n.outputs.size() < 2 || (n.outputs[1]->uses.empty() && !n.outputs[1]->is_graph_output);
}

}  // namespace

bool eliminate_dropout(Graph& g, PassLog& log) {
  bool changed = false;
  for (Node* n : g.topo_order()) {
    if (!n->domain.empty() || n->op_type != "Dropout" || !n->input(0)) continue;
    if (!inference_mode(*n) || !mask_unused(*n)) continue;
    const std::string what = n->describe();
    if (!rewrite::bypass(g, n)) continue;  // a graph output keeps its name
    log.note("removed inference-mode " + what);
    changed = true;
  }
  return changed;
}

}  // namespace minfer::passes
