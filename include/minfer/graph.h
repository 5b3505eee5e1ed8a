// The graph IR: SSA values produced by nodes, with a builder-friendly API.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "minfer/tensor.h"

namespace minfer {

struct Node;

using Attribute = std::variant<int64_t, float, std::string, std::vector<int64_t>,
                               std::vector<float>, std::vector<std::string>, Tensor>;

// A node's attributes with typed, defaulted accessors.
class Attributes {
 public:
  void set(const std::string& name, Attribute value) { map_[name] = std::move(value); }
  bool has(const std::string& name) const { return map_.count(name) != 0; }
  void erase(const std::string& name) { map_.erase(name); }
  const std::map<std::string, Attribute>& all() const { return map_; }

  int64_t get_int(const std::string& name, int64_t def) const;
  float get_float(const std::string& name, float def) const;
  std::string get_string(const std::string& name, const std::string& def) const;
  std::vector<int64_t> get_ints(const std::string& name, std::vector<int64_t> def = {}) const;
  std::vector<float> get_floats(const std::string& name, std::vector<float> def = {}) const;
  const Tensor* get_tensor(const std::string& name) const;
  // Throws InvalidModel naming the attribute when it is absent.
  int64_t require_int(const std::string& name) const;

 private:
  std::map<std::string, Attribute> map_;
};

struct Use {
  Node* node;
  size_t input_index;
};

// An SSA value: produced by one node (or a graph input, or a constant), used by many.
struct Value {
  int id = -1;
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  bool shape_known = false;   // false until shape inference has run (or the source said so)
  Node* producer = nullptr;   // null for graph inputs and constants
  std::vector<Use> uses;
  std::optional<Tensor> constant;  // initializers and folded values
  bool is_graph_input = false;
  bool is_graph_output = false;

  bool is_constant() const { return constant.has_value(); }
};

struct Node {
  int id = -1;
  std::string name;
  std::string op_type;
  std::string domain;  // "" for ONNX ops, "com.minfer" for ours
  Attributes attrs;
  std::vector<Value*> inputs;  // nullptr marks an absent optional input
  std::vector<Value*> outputs;

  Value* input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  std::string describe() const;  // "Conv 'layer1.0.conv1'"
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;

  std::string name = "graph";
  std::map<std::string, int64_t> opset_imports{{"", 17}};

  // --- building ---
  Value* add_input(const std::string& name, DType dtype, Shape shape);
  Value* add_constant(const std::string& name, Tensor value);
  // Adds a node producing `num_outputs` fresh values named "<name>" or "<name>:k".
  Node* add_node(const std::string& op_type, const std::string& name, std::vector<Value*> inputs,
                 size_t num_outputs = 1, Attributes attrs = {}, const std::string& domain = "");
  // Adds a node writing into output values with the given names.
  Node* add_node_named(const std::string& op_type, const std::string& name,
                       std::vector<Value*> inputs, const std::vector<std::string>& output_names,
                       Attributes attrs = {}, const std::string& domain = "");
  void add_output(Value* v);
  Value* new_value(const std::string& name);  // a fresh, unconnected value (unique name)

  // --- editing (for passes) ---
  void set_input(Node* node, size_t index, Value* v);
  void replace_all_uses(Value* from, Value* to);  // also in graph outputs
  void remove_node(Node* node);                   // detaches inputs; outputs must be unused
  void remove_unused_values();                    // drops values nobody refers to
  // Gives `v` the name `name`; a detached value (no producer, uses or role) holding that
  // name is dropped first. Throws Internal if a live value holds it.
  void rename_value(Value* v, const std::string& name);
  void clear_outputs() ;

  // --- queries ---
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  std::vector<Node*> nodes() const;  // insertion order
  std::vector<Value*> values() const;
  size_t node_count() const { return nodes_.size(); }
  Value* find_value(const std::string& name) const;  // null if absent
  Node* find_node(const std::string& name) const;    // null if absent
  // Nodes in dependency order; throws InvalidModel naming a node on a cycle.
  std::vector<Node*> topo_order() const;
  std::string dump() const;  // one line per node, readable

  // Runs shape/type inference over all nodes using the registry's schemas.
  void infer_shapes();

 private:
  std::string unique_value_name(const std::string& base);
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  std::map<std::string, Value*> value_by_name_;
  std::vector<Value*> inputs_, outputs_;
  int next_id_ = 0;
};

// The nodes whose op (domain and name) has no schema in OpRegistry::global(), in graph order.
std::vector<const Node*> unsupported_nodes(const Graph& g);
// Throws one Unsupported error that lists every op of `g` without a schema and the nodes that
// use it (rather than stopping at the first); does nothing when every op is known.
void check_ops_known(const Graph& g);

// Checks SSA form, that every input is defined, no cycles, known ops, arity, and that stored
// dtypes/shapes agree with inference. Throws InvalidModel naming the first offending node.
void verify(const Graph& g);

}  // namespace minfer
