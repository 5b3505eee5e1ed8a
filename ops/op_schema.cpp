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
  // An output beyond one tensor's limit (64 GiB, as Tensor enforces) is refused here, where
  // the node is known, rather than when a plan's arena fails (or worse, succeeds) to allocate.
  constexpr uint64_t kMaxBytes = uint64_t{1} << 36;
  uint64_t bytes = dtype_size(dtype);
  bool empty = false;
  for (int64_t d : shape.dims()) empty = empty || d == 0;
  for (int64_t d : shape.dims()) {
    if (d <= 0 || empty) continue;  // symbolic dims are checked once they are known
    if (bytes > kMaxBytes / static_cast<uint64_t>(d))
      throw Error(ErrorCode::OutOfMemory, node_.describe() + ": output " + std::to_string(i) +
                                              " would be " + shape.to_string() + " " +
                                              dtype_name(dtype) +
                                              ", absurdly large (a tensor is limited to 64 GiB)");
    bytes *= static_cast<uint64_t>(d);
  }
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
