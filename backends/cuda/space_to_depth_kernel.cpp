// com.minfer:SpaceToDepthNhwc on CUDA (device code in space_to_depth.cu).
#include <cstring>

#include "backends/cuda/kernels.h"

namespace minfer::cuda {

namespace {

class SpaceToDepthCuda final : public Kernel {
 public:
  static bool supports(const PrepareContext& ctx) {
    if (ctx.inputs.empty() || !ctx.inputs[0].present || ctx.inputs[0].shape.rank() != 4 ||
        !is_static(ctx, 0, ctx.inputs[0].dtype) || !outputs_fit(ctx))
      return false;
    const size_t es = dtype_size(ctx.inputs[0].dtype);
    for (size_t i = 1; i < ctx.inputs.size(); ++i)
      if (ctx.inputs[i].present && !ctx.inputs[i].constant) return false;
    return es == 1 || es == 2 || es == 4;
  }
  void prepare(PrepareContext& ctx) override {
    device_context(ctx);
    const Shape& x = ctx.inputs[0].shape;
    s_.n = int(x[0]), s_.c = int(x[1]), s_.h = int(x[2]), s_.w = int(x[3]);
    s_.block = int(ctx.node.attrs.get_int("blocksize", 2));
    s_.channels = int(ctx.node.attrs.require_int("channels"));
    s_.half = ctx.node.attrs.get_int("half", 0) != 0;
    s_.elem_size = int(dtype_size(ctx.inputs[0].dtype));
    if (ctx.inputs.size() > 3 && ctx.inputs[2].present) {
      s_.quantize = true;
      s_.scale = ctx.inputs[2].constant->data<float>()[0];
      s_.zero_point = ctx.inputs[3].constant->data<int8_t>()[0];
    }
    if (ctx.inputs.size() > 1 && ctx.inputs[1].present)
      std::memcpy(&pad_, ctx.inputs[1].constant->raw(), dtype_size(ctx.outputs[0].dtype));
  }
  void run(RunContext& ctx) const override {
    DeviceContext& dc = *ctx.device_context;
    DeviceGuard guard(dc.device);
    space_to_depth_nhwc(ctx.inputs[0]->raw(), ctx.outputs[0]->raw(), s_, &pad_, dc.stream);
  }

 private:
  SpaceToDepth s_;
  uint64_t pad_ = 0;  // the pad value's bytes (zero: 0, +0.0)
};

}  // namespace

void register_space_to_depth_kernel(OpRegistry& r) {
  r.register_kernel(kernel_def(kMinferDomain, "SpaceToDepthNhwc", {}, "cuda-space-to-depth",
                               SpaceToDepthCuda::supports,
                               [] { return std::make_unique<SpaceToDepthCuda>(); }));
}

}  // namespace minfer::cuda
