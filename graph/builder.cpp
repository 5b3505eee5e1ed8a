#include "minfer/builder.h"

namespace minfer {

Value* GraphBuilder::conv(const std::string& name, Value* x, Value* w, Value* b,
                          std::vector<int64_t> strides, std::vector<int64_t> pads, int64_t group,
                          std::vector<int64_t> dilations) {
  Attributes a;
  a.set("strides", std::move(strides));
  a.set("pads", std::move(pads));
  a.set("dilations", std::move(dilations));
  a.set("group", group);
  std::vector<Value*> inputs{x, w};
  if (b) inputs.push_back(b);
  return op("Conv", name, inputs, std::move(a));
}

Value* GraphBuilder::batch_norm(const std::string& name, Value* x, Value* scale, Value* bias,
                                Value* mean, Value* var, float epsilon) {
  Attributes a;
  a.set("epsilon", epsilon);
  return op("BatchNormalization", name, {x, scale, bias, mean, var}, std::move(a));
}

Value* GraphBuilder::max_pool(const std::string& name, Value* x, std::vector<int64_t> kernel,
                              std::vector<int64_t> strides, std::vector<int64_t> pads) {
  Attributes a;
  a.set("kernel_shape", std::move(kernel));
  a.set("strides", std::move(strides));
  a.set("pads", std::move(pads));
  return op("MaxPool", name, {x}, std::move(a));
}

Value* GraphBuilder::flatten(const std::string& name, Value* x, int64_t axis) {
  Attributes a;
  a.set("axis", axis);
  return op("Flatten", name, {x}, std::move(a));
}

Value* GraphBuilder::linear(const std::string& name, Value* x, Value* w, Value* b) {
  Attributes a;
  a.set("transB", int64_t{1});
  return op("Gemm", name, {x, w, b}, std::move(a));
}

}  // namespace minfer
