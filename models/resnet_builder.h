// Shared pieces of the hand-built ResNets: layers with torchvision names whose parameters
// come from a WeightSource, and the stem/head both families use.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "minfer/builder.h"
#include "models/weights.h"

namespace minfer {

class ResNetBuilder {
 public:
  ResNetBuilder(Graph& g, WeightSource& weights) : g_(g), b_(g), w_(weights) {}

  // Input "input" [N,3,size,size] with a symbolic batch dimension named "N".
  Value* input(int64_t size);
  // Conv without bias; node `name`, weight `name.weight` [cout,cin,k,k].
  Value* conv(const std::string& name, Value* x, int64_t cin, int64_t cout, int64_t k,
              int64_t stride, int64_t pad);
  // BatchNormalization; `name.{weight,bias,running_mean,running_var}` [c]. `residual_last`
  // marks the last BN of a residual branch (small gamma in the seeded init).
  Value* bn(const std::string& name, Value* x, int64_t c, bool residual_last = false);
  Value* relu(const std::string& name, Value* x) { return b_.relu(name, x); }
  Value* add(const std::string& name, Value* a, Value* b) { return b_.add(name, a, b); }
  Value* max_pool(const std::string& name, Value* x, int64_t k, int64_t stride, int64_t pad) {
    return b_.max_pool(name, x, {k, k}, {stride, stride}, {pad, pad, pad, pad});
  }
  // An i64 constant (Slice/Pad parameters).
  Value* ints(const std::string& name, const std::vector<int64_t>& values);
  Value* op(const std::string& op_type, const std::string& name, std::vector<Value*> inputs,
            Attributes attrs = {}) {
    return b_.op(op_type, name, std::move(inputs), std::move(attrs));
  }
  // GlobalAveragePool "avgpool", Flatten "flatten", Gemm `fc_name` (`fc_name.weight`
  // [classes,c], `fc_name.bias`) writing the graph output "logits".
  void head(Value* x, int64_t c, int64_t classes, const std::string& fc_name);

 private:
  Graph& g_;
  GraphBuilder b_;
  WeightSource& w_;
};

Graph build_imagenet_resnet(const std::string& name, int depth, WeightSource& weights);
Graph build_cifar_resnet(const std::string& name, int depth, WeightSource& weights);

}  // namespace minfer
