#include "swish.h"

#include <cmath>

namespace example {

namespace {

using minfer::DType;

float swish(float x, float beta) { return x / (1.0f + std::exp(-beta * x)); }

void infer(minfer::InferContext& ctx) {
  ctx.require(ctx.input_dtype(0) == DType::f32,
              std::string("X must be f32, got ") + minfer::dtype_name(ctx.input_dtype(0)));
  ctx.set_output(0, DType::f32, ctx.input_shape(0));
}

// The reference kernel: plain, allocating, obviously correct (the oracle for faster kernels,
// and what constant folding runs).
std::vector<minfer::Tensor> reference(const minfer::Node& node,
                                      const std::vector<minfer::Tensor>& inputs) {
  const minfer::Tensor& x = inputs.at(0);
  const float beta = node.attrs.get_float("beta", 1.0f);
  minfer::Tensor y(DType::f32, x.shape());
  const float* in = x.data<float>();
  float* out = y.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) out[i] = swish(in[i], beta);
  return {y};
}

// The CPU kernel: reads beta once at prepare, writes into the planned output, allocates
// nothing per run.
class SwishCpu final : public minfer::Kernel {
 public:
  void prepare(minfer::PrepareContext& ctx) override {
    if (ctx.inputs.at(0).dtype != DType::f32) ctx.fail("X must be f32");
    beta_ = ctx.node.attrs.get_float("beta", 1.0f);
  }
  void run(minfer::RunContext& ctx) const override {
    const minfer::Tensor& x = *ctx.inputs[0];
    const float* in = x.data<float>();
    float* out = ctx.outputs[0]->data<float>();
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) out[i] = swish(in[i], beta_);
  }

 private:
  float beta_ = 1.0f;
};

}  // namespace

void register_swish(minfer::OpRegistry& registry) {
  minfer::OpSchema schema;
  schema.domain = kDomain;
  schema.name = "Swish";
  schema.doc = "Y = X * sigmoid(beta * X), f32 (an example of a user-defined op)";
  schema.attributes = {"beta"};
  schema.infer = infer;
  schema.reference = reference;
  registry.register_op(std::move(schema));

  minfer::KernelDef kernel;
  kernel.domain = kDomain;
  kernel.op_type = "Swish";
  kernel.device = minfer::Device::Type::CPU;
  kernel.dtypes = {DType::f32};
  kernel.name = "example-cpu";
  kernel.create = [] { return std::make_unique<SwishCpu>(); };
  registry.register_kernel(std::move(kernel));
}

}  // namespace example
