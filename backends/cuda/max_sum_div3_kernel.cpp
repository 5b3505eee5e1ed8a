// MaxSumDiv3's CUDA kernel behind minfer's Kernel interface, and its registration.
#include <memory>
#include <string>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/max_sum_div3.h"
#include "minfer/registry.h"
#include "ops/max_sum_div3.h"

namespace minfer {

namespace {

class MaxSumDiv3Cuda final : public Kernel {
 public:
  void prepare(PrepareContext& ctx) override {
    const TensorInfo& x = ctx.inputs.at(0);
    if (x.dtype != DType::i32 && x.dtype != DType::i64)
      ctx.fail(std::string("X must be i32 or i64, got ") + dtype_name(x.dtype));
    if (x.shape.rank() < 1 || !x.shape.is_static())
      ctx.fail("X must have a static shape of rank >= 1, got " + x.shape.to_string());
    if (!ctx.device_context) ctx.fail("the CUDA kernel needs a CUDA device context");
    const int64_t n = x.shape[x.shape.rank() - 1];
    const int64_t rows = dims_product(x.shape);
    plan_ = cuda::plan_max_sum_div3(x.dtype, rows, n, ctx.device_context->sm_count);
    ctx.workspace_bytes = plan_.workspace_bytes;
    shape_ = x.shape;
    node_ = ctx.node.describe();
  }

  void run(RunContext& ctx) const override {
    const Tensor& x = *ctx.inputs[0];
    Tensor& y = *ctx.outputs[0];
    check(x.shape() == shape_, ErrorCode::Internal,
          node_ + ": prepared for " + shape_.to_string() + ", run with " + x.shape().to_string());
    DeviceContext& dc = *ctx.device_context;
    cuda::DeviceGuard guard(dc.device);
    cuda::launch_max_sum_div3(plan_, x.raw(), y.data<int64_t>(), ctx.workspace, dc.stream);
    if (plan_.check_overflow) {
      // Only int64 input (or 2^32+ int32 values per row) can overflow; reading the verdict
      // waits for the stream.
      const int64_t row = cuda::max_sum_div3_overflow_row(plan_, ctx.workspace, dc.stream);
      if (row >= 0) throw_max_sum_div3_overflow(node_, row);
    }
  }

 private:
  // The product of all dims but the last: the number of rows.
  static int64_t dims_product(const Shape& s) {
    int64_t p = 1;
    for (size_t i = 0; i + 1 < s.rank(); ++i) p *= s[i];
    return p;
  }

  cuda::MaxSumDiv3Plan plan_;
  Shape shape_;
  std::string node_;
};

}  // namespace

void cuda::register_max_sum_div3_kernel(OpRegistry& registry) {
  KernelDef def;
  def.domain = kMinferDomain;
  def.op_type = "MaxSumDiv3";
  def.device = Device::Type::CUDA;
  def.dtypes = {DType::i32, DType::i64};
  def.name = "cuda-warp-shuffle";
  def.create = [] { return std::make_unique<MaxSumDiv3Cuda>(); };
  registry.register_kernel(std::move(def));
}

}  // namespace minfer
