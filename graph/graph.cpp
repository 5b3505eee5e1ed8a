#include "minfer/graph.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "minfer/registry.h"

namespace minfer {

std::string Node::describe() const {
  std::string op = domain.empty() ? op_type : domain + ":" + op_type;
  return op + " '" + name + "'";
}

std::string Graph::unique_value_name(const std::string& base) {
  std::string name = base;
  if (name.empty()) (name = "v") += std::to_string(next_id_);  // ("v" + ...: GCC 12 -Wrestrict)
  if (!value_by_name_.count(name)) return name;
  for (int k = 1;; ++k) {
    std::string candidate = name + "_" + std::to_string(k);
    if (!value_by_name_.count(candidate)) return candidate;
  }
}

Value* Graph::new_value(const std::string& name) {
  auto v = std::make_unique<Value>();
  v->id = next_id_++;
  v->name = unique_value_name(name);
  Value* raw = v.get();
  value_by_name_[raw->name] = raw;
  values_.push_back(std::move(v));
  return raw;
}

Value* Graph::add_input(const std::string& name, DType dtype, Shape shape) {
  check(!value_by_name_.count(name), ErrorCode::InvalidModel,
        "graph input '" + name + "' is defined twice");
  Value* v = new_value(name);
  v->dtype = dtype;
  v->shape = std::move(shape);
  v->shape_known = true;
  v->is_graph_input = true;
  inputs_.push_back(v);
  return v;
}

Value* Graph::add_constant(const std::string& name, Tensor value) {
  check(!value_by_name_.count(name), ErrorCode::InvalidModel,
        "constant '" + name + "' is defined twice");
  Value* v = new_value(name);
  v->dtype = value.dtype();
  v->shape = value.shape();
  v->shape_known = true;
  v->constant = std::move(value);
  return v;
}

Node* Graph::add_node(const std::string& op_type, const std::string& name,
                      std::vector<Value*> inputs, size_t num_outputs, Attributes attrs,
                      const std::string& domain) {
  std::vector<std::string> names;
  for (size_t i = 0; i < num_outputs; ++i)
    names.push_back(num_outputs == 1 ? name : name + ":" + std::to_string(i));
  for (auto& n : names) n = unique_value_name(n);
  return add_node_named(op_type, name, std::move(inputs), names, std::move(attrs), domain);
}

Node* Graph::add_node_named(const std::string& op_type, const std::string& name,
                            std::vector<Value*> inputs,
                            const std::vector<std::string>& output_names, Attributes attrs,
                            const std::string& domain) {
  auto node = std::make_unique<Node>();
  node->id = next_id_++;
  node->name = name.empty() ? op_type + "_" + std::to_string(node->id) : name;
  node->op_type = op_type;
  node->domain = domain;
  node->attrs = std::move(attrs);
  Node* n = node.get();
  for (size_t i = 0; i < inputs.size(); ++i) {
    n->inputs.push_back(inputs[i]);
    if (inputs[i]) inputs[i]->uses.push_back({n, i});
  }
  for (const auto& out_name : output_names) {
    if (out_name.empty()) {  // an unused optional output
      Value* v = new_value(n->name + ":unused");
      v->producer = n;
      n->outputs.push_back(v);
      continue;
    }
    auto it = value_by_name_.find(out_name);
    if (it != value_by_name_.end()) {
      Value* existing = it->second;
      check(!existing->producer && !existing->is_graph_input && !existing->is_constant(),
            ErrorCode::InvalidModel,
            n->describe() + ": output '" + out_name + "' is already defined (not SSA)");
      existing->producer = n;
      n->outputs.push_back(existing);
    } else {
      Value* v = new_value(out_name);
      v->producer = n;
      n->outputs.push_back(v);
    }
  }
  nodes_.push_back(std::move(node));
  return n;
}

void Graph::add_output(Value* v) {
  check(v != nullptr, ErrorCode::InvalidArgument, "add_output: null value");
  v->is_graph_output = true;
  outputs_.push_back(v);
}

void Graph::clear_outputs() {
  for (Value* v : outputs_) v->is_graph_output = false;
  outputs_.clear();
}

void Graph::set_input(Node* node, size_t index, Value* v) {
  Value* old = node->inputs.at(index);
  if (old) {
    auto& u = old->uses;
    u.erase(std::remove_if(u.begin(), u.end(),
                           [&](const Use& x) { return x.node == node && x.input_index == index; }),
            u.end());
  }
  node->inputs[index] = v;
  if (v) v->uses.push_back({node, index});
}

void Graph::replace_all_uses(Value* from, Value* to) {
  auto uses = from->uses;
  for (const Use& u : uses) set_input(u.node, u.input_index, to);
  for (auto& o : outputs_) {
    if (o == from) {
      // Keep the graph output's public name: the replacement takes it over where it can.
      o = to;
      to->is_graph_output = true;
      from->is_graph_output = false;
    }
  }
}

void Graph::remove_node(Node* node) {
  for (Value* out : node->outputs) {
    check(out->uses.empty() && !out->is_graph_output, ErrorCode::Internal,
          "remove_node: output '" + out->name + "' of " + node->describe() + " is still used");
    out->producer = nullptr;
  }
  for (size_t i = 0; i < node->inputs.size(); ++i) set_input(node, i, nullptr);
  nodes_.erase(std::remove_if(nodes_.begin(), nodes_.end(),
                              [&](const std::unique_ptr<Node>& n) { return n.get() == node; }),
               nodes_.end());
}

void Graph::remove_unused_values() {
  std::set<const Value*> keep;
  for (const auto& n : nodes_) {
    for (Value* v : n->inputs) if (v) keep.insert(v);
    for (Value* v : n->outputs) keep.insert(v);
  }
  for (Value* v : inputs_) keep.insert(v);
  for (Value* v : outputs_) keep.insert(v);
  std::vector<std::unique_ptr<Value>> kept;
  for (auto& v : values_) {
    if (keep.count(v.get()))
      kept.push_back(std::move(v));
    else
      value_by_name_.erase(v->name);
  }
  values_ = std::move(kept);
}

void Graph::rename_value(Value* v, const std::string& new_name) {
  if (v->name == new_name) return;
  auto it = value_by_name_.find(new_name);
  if (it != value_by_name_.end()) {
    Value* holder = it->second;
    bool detached = !holder->producer && holder->uses.empty() && !holder->is_graph_input &&
                    !holder->is_graph_output && !holder->is_constant();
    check(detached, ErrorCode::Internal,
          "rename_value: '" + new_name + "' is still in use by another value");
    holder->name = unique_value_name(new_name + "_stale");
    value_by_name_[holder->name] = holder;
  }
  value_by_name_.erase(v->name);
  v->name = new_name;
  value_by_name_[new_name] = v;
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> r;
  for (const auto& n : nodes_) r.push_back(n.get());
  return r;
}

std::vector<Value*> Graph::values() const {
  std::vector<Value*> r;
  for (const auto& v : values_) r.push_back(v.get());
  return r;
}

Value* Graph::find_value(const std::string& name) const {
  auto it = value_by_name_.find(name);
  return it == value_by_name_.end() ? nullptr : it->second;
}

Node* Graph::find_node(const std::string& name) const {
  for (const auto& n : nodes_)
    if (n->name == name) return n.get();
  return nullptr;
}

std::vector<Node*> Graph::topo_order() const {
  // Kahn's algorithm, stable with respect to insertion order.
  std::map<const Node*, int> pending;
  std::map<const Node*, size_t> position;
  for (size_t i = 0; i < nodes_.size(); ++i) position[nodes_[i].get()] = i;
  for (const auto& n : nodes_) {
    int count = 0;
    for (Value* v : n->inputs)
      if (v && v->producer) ++count;
    pending[n.get()] = count;
  }
  std::set<std::pair<size_t, Node*>> ready;
  for (const auto& n : nodes_)
    if (pending[n.get()] == 0) ready.insert({position[n.get()], n.get()});
  std::vector<Node*> order;
  while (!ready.empty()) {
    Node* n = ready.begin()->second;
    ready.erase(ready.begin());
    order.push_back(n);
    for (Value* out : n->outputs)
      for (const Use& u : out->uses)
        if (--pending[u.node] == 0) ready.insert({position[u.node], u.node});
  }
  if (order.size() != nodes_.size()) {
    for (const auto& n : nodes_)
      if (pending[n.get()] > 0)
        throw Error(ErrorCode::InvalidModel,
                    "graph '" + name + "' has a cycle through " + n->describe());
  }
  return order;
}

std::string Graph::dump() const {
  std::ostringstream os;
  auto val = [](const Value* v) {
    if (!v) return std::string("<none>");
    std::string s = "%" + v->name + ":" + dtype_name(v->dtype) +
                    (v->shape_known ? v->shape.to_string() : "[?]");
    return s;
  };
  os << "graph " << name << " {\n";
  for (Value* v : inputs_) os << "  input  " << val(v) << "\n";
  for (const auto& v : values_)
    if (v->is_constant() && !v->uses.empty()) os << "  const  " << val(v.get()) << "\n";
  for (Node* n : topo_order()) {
    os << "  ";
    for (size_t i = 0; i < n->outputs.size(); ++i) os << (i ? ", " : "") << val(n->outputs[i]);
    os << " = " << (n->domain.empty() ? "" : n->domain + ":") << n->op_type << "[" << n->name
       << "](";
    for (size_t i = 0; i < n->inputs.size(); ++i)
      os << (i ? ", " : "") << (n->inputs[i] ? "%" + n->inputs[i]->name : "<none>");
    os << ")";
    bool first = true;
    for (const auto& [k, a] : n->attrs.all()) {
      os << (first ? " {" : ", ") << k << "=";
      first = false;
      std::visit(
          [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, float>) os << x;
            else if constexpr (std::is_same_v<T, std::string>) os << '"' << x << '"';
            else if constexpr (std::is_same_v<T, Tensor>) os << x.to_string(4);
            else {
              os << "[";
              for (size_t i = 0; i < x.size(); ++i) os << (i ? "," : "") << x[i];
              os << "]";
            }
          },
          a);
    }
    if (!first) os << "}";
    os << "\n";
  }
  for (Value* v : outputs_) os << "  output " << val(v) << "\n";
  os << "}\n";
  return os.str();
}

namespace {
std::vector<TensorInfo> input_infos(const Node& n) {
  std::vector<TensorInfo> infos;
  for (Value* v : n.inputs) {
    TensorInfo info;
    if (v) {
      info.present = true;
      info.dtype = v->dtype;
      info.shape = v->shape;
      info.constant = v->constant ? &*v->constant : nullptr;
    }
    infos.push_back(info);
  }
  return infos;
}
}  // namespace

std::vector<const Node*> unsupported_nodes(const Graph& g) {
  const OpRegistry& reg = OpRegistry::global();
  std::vector<const Node*> r;
  for (const Node* n : g.nodes())
    if (!reg.find_op(n->domain, n->op_type)) r.push_back(n);
  return r;
}

void check_ops_known(const Graph& g) {
  const std::vector<const Node*> bad = unsupported_nodes(g);
  if (bad.empty()) return;
  // Group by op, in order of first use; a few node names per op are enough to find them.
  constexpr size_t kNamesPerOp = 5;
  std::vector<std::pair<std::string, std::vector<const Node*>>> ops;
  for (const Node* n : bad) {
    const std::string domain = n->domain.empty() ? "ai.onnx" : n->domain;
    const std::string key = "unknown op '" + n->op_type + "' (domain '" + domain + "')";
    auto it = std::find_if(ops.begin(), ops.end(), [&](const auto& o) { return o.first == key; });
    if (it == ops.end()) it = ops.insert(ops.end(), {key, {}});
    it->second.push_back(n);
  }
  std::string msg = "graph '" + g.name + "' uses " + std::to_string(ops.size()) +
                    (ops.size() == 1 ? " op" : " ops") + " that minfer does not support (" +
                    std::to_string(bad.size()) + (bad.size() == 1 ? " node" : " nodes") + "): ";
  for (size_t i = 0; i < ops.size(); ++i) {
    const auto& [key, nodes] = ops[i];
    msg += (i ? "; " : "") + key + " at ";
    for (size_t k = 0; k < nodes.size() && k < kNamesPerOp; ++k)
      msg += (k ? ", " : "") + std::string("node '") + nodes[k]->name + "'";
    if (nodes.size() > kNamesPerOp)
      msg += " and " + std::to_string(nodes.size() - kNamesPerOp) + " more";
  }
  msg +=
      ". No such op is registered; if one comes from a plugin, load it with --plugin LIB.so (or "
      "register it with OpRegistry::register_op); `minfer ops` lists the supported ops";
  throw Error(ErrorCode::Unsupported, msg);
}

void Graph::infer_shapes() {
  auto& reg = OpRegistry::global();
  check_ops_known(*this);
  for (Node* n : topo_order()) {
    const OpSchema& schema = reg.get_op(n->domain, n->op_type);
    auto mark_unknown = [&] {
      for (Value* out : n->outputs) out->shape_known = false;
    };
    bool inputs_known = true, shape_data_pending = false;
    for (const Value* v : n->inputs) {
      if (!v) continue;
      inputs_known &= v->shape_known;
      // An integer tensor computed at run time is usually shape arithmetic (PyTorch's
      // exporter emits Shape->Gather->Concat->Reshape), and an integer graph input of unknown
      // length may be a target shape: its value is known once the inputs are, so the plan
      // resolves it; until then the outputs stay unknown.
      const bool integer = v->dtype == DType::i64 || v->dtype == DType::i32;
      shape_data_pending |=
          integer && !v->is_constant() && (v->producer || !v->shape.is_static());
    }
    if (!inputs_known) {
      mark_unknown();
      continue;
    }
    InferContext ctx(*n, input_infos(*n));
    try {
      schema.infer(ctx);
    } catch (const Error&) {
      if (!shape_data_pending) throw;
      mark_unknown();
      continue;
    }
    for (size_t i = 0; i < n->outputs.size(); ++i) {
      n->outputs[i]->dtype = ctx.outputs()[i].dtype;
      n->outputs[i]->shape = ctx.outputs()[i].shape;
      n->outputs[i]->shape_known = ctx.outputs()[i].present;
    }
  }
}

void verify(const Graph& g) {
  auto& reg = OpRegistry::global();
  std::set<const Value*> produced;
  std::set<const Node*> node_set;
  for (Node* n : g.nodes()) node_set.insert(n);
  for (Value* v : g.inputs()) produced.insert(v);
  for (Value* v : g.values())
    if (v->is_constant()) produced.insert(v);
  check_ops_known(g);
  for (Node* n : g.topo_order()) {  // throws on cycles
    const OpSchema& schema = reg.get_op(n->domain, n->op_type);
    int ni = static_cast<int>(n->inputs.size()), no = static_cast<int>(n->outputs.size());
    check(ni >= schema.min_inputs && ni <= schema.max_inputs, ErrorCode::InvalidModel,
          n->describe() + ": has " + std::to_string(ni) + " inputs, expected " +
              std::to_string(schema.min_inputs) + ".." + std::to_string(schema.max_inputs));
    check(no >= schema.min_outputs && no <= schema.max_outputs, ErrorCode::InvalidModel,
          n->describe() + ": has " + std::to_string(no) + " outputs, expected " +
              std::to_string(schema.min_outputs) + ".." + std::to_string(schema.max_outputs));
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      Value* v = n->inputs[i];
      if (!v) continue;
      check(produced.count(v) != 0, ErrorCode::InvalidModel,
            n->describe() + ": input '" + v->name + "' is not defined before it is used");
      bool listed = false;
      for (const Use& u : v->uses) listed |= (u.node == n && u.input_index == i);
      check(listed, ErrorCode::Internal, n->describe() + ": use list of '" + v->name + "' is stale");
    }
    for (Value* v : n->outputs) {
      check(v->producer == n, ErrorCode::InvalidModel,
            n->describe() + ": output '" + v->name + "' has another producer (not SSA)");
      check(produced.insert(v).second, ErrorCode::InvalidModel,
            n->describe() + ": output '" + v->name + "' is defined twice (not SSA)");
    }
    bool all_known = true, any_output_known = false;
    for (Value* v : n->inputs) all_known &= (!v || v->shape_known);
    for (Value* v : n->outputs) any_output_known |= v->shape_known;
    // Outputs left unknown by infer_shapes wait for run-time shape data: nothing to check.
    if (!all_known || !any_output_known) continue;
    std::vector<TensorInfo> infos = input_infos(*n);
    InferContext ctx(*n, infos);
    schema.infer(ctx);
    for (size_t i = 0; i < n->outputs.size(); ++i) {
      const Value* v = n->outputs[i];
      if (!v->shape_known || !ctx.outputs()[i].present) continue;
      check(v->dtype == ctx.outputs()[i].dtype, ErrorCode::InvalidModel,
            n->describe() + ": output '" + v->name + "' is stored as " + dtype_name(v->dtype) +
                " but infers as " + dtype_name(ctx.outputs()[i].dtype));
      const Shape& inferred = ctx.outputs()[i].shape;
      bool same = inferred.rank() == v->shape.rank();
      for (size_t d = 0; same && d < inferred.rank(); ++d)
        same = inferred[d] == v->shape[d] || inferred[d] < 0 || v->shape[d] < 0;
      check(same, ErrorCode::InvalidModel,
            n->describe() + ": output '" + v->name + "' is stored as " + v->shape.to_string() +
                " but infers as " + inferred.to_string());
    }
  }
  for (Value* v : g.outputs())
    check(produced.count(v) != 0, ErrorCode::InvalidModel,
          "graph output '" + v->name + "' is not produced by any node, input or constant");
}

}  // namespace minfer
