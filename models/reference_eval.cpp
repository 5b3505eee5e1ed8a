#include "models/reference_eval.h"

#include <unordered_map>

#include "minfer/registry.h"

namespace minfer {

NamedTensors reference_eval(const Graph& g, const NamedTensors& inputs) {
  const OpRegistry& reg = OpRegistry::global();
  std::unordered_map<const Value*, Tensor> values;
  for (const Value* v : g.inputs()) {
    if (v->is_constant()) continue;  // an initializer that is also a graph input
    auto it = inputs.find(v->name);
    check(it != inputs.end(), ErrorCode::InvalidArgument,
          "reference_eval: graph input '" + v->name + "' was not given");
    values[v] = it->second;
  }
  // Remaining uses per value, so intermediate tensors are freed as soon as they are dead.
  std::unordered_map<const Value*, size_t> remaining;
  for (const Value* v : g.values()) remaining[v] = v->uses.size();

  auto fetch = [&](const Value* v) -> Tensor {
    if (v->is_constant()) return *v->constant;
    auto it = values.find(v);
    check(it != values.end(), ErrorCode::Internal,
          "reference_eval: value '" + v->name + "' has not been computed");
    return it->second;
  };

  for (const Node* n : g.topo_order()) {
    const OpSchema& schema = reg.get_op(n->domain, n->op_type);
    std::vector<Tensor> args;
    for (const Value* v : n->inputs) args.push_back(v ? fetch(v) : Tensor());
    std::vector<Tensor> results = schema.reference(*n, args);
    check(results.size() >= n->outputs.size(), ErrorCode::Internal,
          n->describe() + ": the reference kernel returned " + std::to_string(results.size()) +
              " outputs, the node has " + std::to_string(n->outputs.size()));
    for (size_t i = 0; i < n->outputs.size(); ++i) values[n->outputs[i]] = std::move(results[i]);
    for (const Value* v : n->inputs) {
      if (!v || v->is_constant() || v->is_graph_output) continue;
      if (--remaining[v] == 0) values.erase(v);
    }
  }

  NamedTensors out;
  for (const Value* v : g.outputs()) out[v->name] = fetch(v);
  return out;
}

}  // namespace minfer
