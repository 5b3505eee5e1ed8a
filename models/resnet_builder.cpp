#include "models/resnet_builder.h"

namespace minfer {

Value* ResNetBuilder::input(int64_t size) {
  Shape shape{Shape::kDynamic, 3, size, size};
  shape.symbols = {"N"};
  return b_.input("input", DType::f32, shape);
}

Value* ResNetBuilder::conv(const std::string& name, Value* x, int64_t cin, int64_t cout, int64_t k,
                           int64_t stride, int64_t pad) {
  Value* w = b_.constant(name + ".weight", w_.get(name + ".weight", Shape{cout, cin, k, k},
                                                  WeightInit::ConvHe, cin * k * k));
  return b_.conv(name, x, w, nullptr, {stride, stride}, {pad, pad, pad, pad});
}

Value* ResNetBuilder::bn(const std::string& name, Value* x, int64_t c, bool residual_last) {
  auto param = [&](const char* suffix, WeightInit init) {
    const std::string n = name + "." + suffix;
    return b_.constant(n, w_.get(n, Shape{c}, init));
  };
  Value* gamma = param("weight", residual_last ? WeightInit::BnGammaResidual : WeightInit::BnGamma);
  Value* beta = param("bias", WeightInit::BnBeta);
  Value* mean = param("running_mean", WeightInit::BnMean);
  Value* var = param("running_var", WeightInit::BnVar);
  return b_.batch_norm(name, x, gamma, beta, mean, var, 1e-5f);  // PyTorch's default eps
}

Value* ResNetBuilder::ints(const std::string& name, const std::vector<int64_t>& values) {
  return b_.constant(
      name, Tensor::from_vector<int64_t>(values, Shape{static_cast<int64_t>(values.size())}));
}

void ResNetBuilder::head(Value* x, int64_t c, int64_t classes, const std::string& fc_name) {
  Value* pooled = b_.global_average_pool("avgpool", x);
  Value* flat = b_.flatten("flatten", pooled, 1);
  Value* w = b_.constant(fc_name + ".weight", w_.get(fc_name + ".weight", Shape{classes, c},
                                                     WeightInit::LinearUniform, c));
  Value* bias = b_.constant(
      fc_name + ".bias", w_.get(fc_name + ".bias", Shape{classes}, WeightInit::LinearUniform, c));
  Attributes a;
  a.set("transB", int64_t{1});
  // The node keeps the torchvision module name; its output is the graph output "logits".
  Node* gemm = g_.add_node_named("Gemm", fc_name, {flat, w, bias}, {"logits"}, std::move(a));
  b_.output(gemm->outputs[0]);
}

}  // namespace minfer
