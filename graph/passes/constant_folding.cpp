// Constant folding: evaluate, with the reference kernels, every node whose inputs are all
// constants, and Shape nodes (and Gathers of them) whose answer is already static.
#include "graph/passes/passes.h"
#include "graph/passes/rewrite.h"
#include "minfer/registry.h"

namespace minfer::passes {

namespace {
// Folding must never make the model file balloon or the load slow: skip huge results.
constexpr int64_t kMaxFoldedElements = int64_t{1} << 24;

// The dims of a Shape node's output when those it selects are all static.
std::optional<Tensor> static_shape_of(const Node& n) {
  const Value* x = n.inputs[0];
  if (!x || !x->shape_known) return std::nullopt;
  int64_t rank = static_cast<int64_t>(x->shape.rank());
  int64_t start = n.attrs.get_int("start", 0), end = n.attrs.get_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  std::vector<int64_t> dims;
  for (int64_t i = start; i < end; ++i) {
    if (x->shape[i] < 0) return std::nullopt;
    dims.push_back(x->shape[i]);
  }
  return Tensor::from_vector(dims, Shape{static_cast<int64_t>(dims.size())});
}

// Gather(Shape(x), constant indices) is static when the selected dims are, even if x has a
// symbolic batch: PyTorch's exporter writes x.size(1) this way.
std::optional<Tensor> static_gather_of_shape(const Node& n) {
  const Node* shape_node = n.inputs.size() == 2 && n.inputs[0] ? n.inputs[0]->producer : nullptr;
  const Tensor* idx = rewrite::constant_of(n.input(1));
  if (!rewrite::is_op(shape_node, "Shape") || !idx || n.attrs.get_int("axis", 0) != 0 ||
      !shape_node->inputs[0] || !shape_node->inputs[0]->shape_known)
    return std::nullopt;
  const Shape& xs = shape_node->inputs[0]->shape;
  int64_t rank = static_cast<int64_t>(xs.rank());
  int64_t start = shape_node->attrs.get_int("start", 0);
  if (start < 0) start += rank;
  int64_t end = shape_node->attrs.get_int("end", rank);
  if (end < 0) end += rank;
  int64_t len = std::clamp<int64_t>(end, 0, rank) - std::clamp<int64_t>(start, 0, rank);
  std::vector<int64_t> picked;
  for (int64_t i = 0; i < idx->numel(); ++i) {
    int64_t k = idx->dtype() == DType::i64 ? idx->data<int64_t>()[i] : idx->data<int32_t>()[i];
    if (k < 0) k += len;
    if (k < 0 || k >= len || xs[start + k] < 0) return std::nullopt;
    picked.push_back(xs[start + k]);
  }
  Tensor t = Tensor::from_vector(picked, Shape{static_cast<int64_t>(picked.size())});
  return idx->rank() == 0 ? t.reshaped(Shape{}) : t.reshaped(idx->shape());
}
}  // namespace

bool fold_constants(Graph& g, PassLog& log) {
  bool changed = false;
  auto& registry = OpRegistry::global();
  for (Node* n : g.topo_order()) {
    std::vector<Tensor> results;
    if (rewrite::is_op(n, "Shape")) {
      if (auto t = static_shape_of(*n)) results.push_back(std::move(*t));
    } else if (rewrite::is_op(n, "Gather") && static_gather_of_shape(*n)) {
      results.push_back(*static_gather_of_shape(*n));
    } else {
      bool all_constant = !n->inputs.empty();
      for (const Value* v : n->inputs) all_constant &= (!v || v->is_constant());
      for (const Value* v : n->outputs)
        all_constant &= v->shape_known && v->shape.is_static() &&
                        v->shape.numel() <= kMaxFoldedElements;
      if (!all_constant) continue;
      std::vector<Tensor> inputs;
      for (const Value* v : n->inputs) inputs.push_back(v ? *v->constant : Tensor());
      results = registry.get_op(n->domain, n->op_type).reference(*n, inputs);
    }
    if (results.empty()) continue;
    // Each used output becomes a constant that takes over the output's name.
    std::vector<std::pair<Value*, std::string>> renames;
    for (size_t i = 0; i < n->outputs.size() && i < results.size(); ++i) {
      Value* out = n->outputs[i];
      if (out->uses.empty() && !out->is_graph_output) continue;
      Value* c = g.add_constant(out->name + "__folded", std::move(results[i]));
      renames.push_back({c, out->name});
      g.replace_all_uses(out, c);
    }
    log.note("folded " + n->describe());
    g.remove_node(n);
    g.remove_unused_values();
    for (auto& [c, name] : renames) g.rename_value(c, name);
    changed = true;
  }
  return changed;
}

}  // namespace minfer::passes
