// OpSchema: what an op is, independent of hardware.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "minfer/graph.h"

namespace minfer {

// What is known about one input or output of a node while inferring or preparing.
struct TensorInfo {
  bool present = false;  // false for an absent optional input
  DType dtype = DType::f32;
  Shape shape;
  const Tensor* constant = nullptr;  // the value, when it is known before running
};

// Shape/type inference for one node: read inputs, set outputs, or fail().
class InferContext {
 public:
  InferContext(const Node& node, std::vector<TensorInfo> inputs);

  const Node& node() const { return node_; }
  const Attributes& attrs() const { return node_.attrs; }
  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i].present; }
  const TensorInfo& input(size_t i) const;  // fails when absent
  DType input_dtype(size_t i) const { return input(i).dtype; }
  const Shape& input_shape(size_t i) const { return input(i).shape; }
  const Tensor* input_constant(size_t i) const { return has_input(i) ? inputs_[i].constant : nullptr; }

  size_t num_outputs() const { return node_.outputs.size(); }
  void set_output(size_t i, DType dtype, Shape shape);
  const std::vector<TensorInfo>& outputs() const { return outputs_; }

  // Throws InvalidModel: "<Op> '<name>': <message>".
  [[noreturn]] void fail(const std::string& message) const;
  void require(bool condition, const std::string& message) const {
    if (!condition) fail(message);
  }

 private:
  const Node& node_;
  std::vector<TensorInfo> inputs_;
  std::vector<TensorInfo> outputs_;
};

// Computes a node's outputs from its inputs (absent optional inputs are undefined tensors).
// Plain, obviously-correct C++: the oracle for every optimized kernel, and constant folding.
using ReferenceFn = std::function<std::vector<Tensor>(const Node&, const std::vector<Tensor>&)>;
using InferFn = std::function<void(InferContext&)>;

struct OpSchema {
  std::string domain;  // "" = ONNX default domain
  std::string name;
  std::string doc;     // one line for `minfer ops`
  int min_inputs = 1, max_inputs = 1;
  int min_outputs = 1, max_outputs = 1;
  std::vector<std::string> attributes;  // names it understands
  InferFn infer;
  ReferenceFn reference;

  std::string qualified_name() const { return domain.empty() ? name : domain + ":" + name; }
};

}  // namespace minfer
