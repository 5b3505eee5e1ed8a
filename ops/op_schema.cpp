#include "minfer/op_schema.h"

#include "minfer/kernel.h"

namespace minfer {

InferContext::InferContext(const Node& node, std::vector<TensorInfo> inputs)
    : node_(node), inputs_(std::move(inputs)), outputs_(node.outputs.size()) {}

const TensorInfo& InferContext::input(size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is missing");
  return inputs_[i];
}

void InferContext::set_output(size_t i, DType dtype, Shape shape) {
  if (i >= outputs_.size()) return;  // an optional output the node does not have
  outputs_[i].present = true;
  outputs_[i].dtype = dtype;
  outputs_[i].shape = std::move(shape);
}

void InferContext::fail(const std::string& message) const {
  throw Error(ErrorCode::InvalidModel, node_.describe() + ": " + message);
}

void PrepareContext::fail(const std::string& message) const {
  throw Error(ErrorCode::InvalidModel, node.describe() + ": " + message);
}

}  // namespace minfer
