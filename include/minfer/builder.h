// GraphBuilder: a small convenience layer for building graphs in code.
#pragma once

#include <string>
#include <vector>

#include "minfer/graph.h"

namespace minfer {

class GraphBuilder {
 public:
  explicit GraphBuilder(Graph& g) : g_(g) {}
  Graph& graph() { return g_; }

  Value* input(const std::string& name, DType dtype, Shape shape) {
    return g_.add_input(name, dtype, std::move(shape));
  }
  Value* constant(const std::string& name, Tensor t) { return g_.add_constant(name, std::move(t)); }
  // Any op with one output.
  Value* op(const std::string& op_type, const std::string& name, std::vector<Value*> inputs,
            Attributes attrs = {}, const std::string& domain = "") {
    return g_.add_node(op_type, name, std::move(inputs), 1, std::move(attrs), domain)->outputs[0];
  }
  void output(Value* v) { g_.add_output(v); }

  Value* conv(const std::string& name, Value* x, Value* w, Value* b, std::vector<int64_t> strides,
              std::vector<int64_t> pads, int64_t group = 1,
              std::vector<int64_t> dilations = {1, 1});
  Value* batch_norm(const std::string& name, Value* x, Value* scale, Value* bias, Value* mean,
                    Value* var, float epsilon = 1e-5f);
  Value* relu(const std::string& name, Value* x) { return op("Relu", name, {x}); }
  Value* add(const std::string& name, Value* a, Value* b) { return op("Add", name, {a, b}); }
  Value* max_pool(const std::string& name, Value* x, std::vector<int64_t> kernel,
                  std::vector<int64_t> strides, std::vector<int64_t> pads);
  Value* global_average_pool(const std::string& name, Value* x) {
    return op("GlobalAveragePool", name, {x});
  }
  Value* flatten(const std::string& name, Value* x, int64_t axis = 1);
  // Y = X * W^T + B (Gemm with transB = 1), as a PyTorch Linear layer.
  Value* linear(const std::string& name, Value* x, Value* w, Value* b);

 private:
  Graph& g_;
};

}  // namespace minfer
