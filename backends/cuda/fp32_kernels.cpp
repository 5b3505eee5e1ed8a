// fp32 MaxPool, GlobalAveragePool, Relu and Add on CUDA (device code in pool.cu and
// elementwise.cu).
#include <limits>

#include "backends/cuda/kernels.h"
#include "ops/conv_geometry.h"

namespace minfer::cuda {

namespace {

// 1-D and 2-D MaxPool on NCHW, without the Indices output.
class MaxPoolCuda final : public Kernel {
 public:
  static bool supports(const PrepareContext& ctx) {
    if (!is_static(ctx, 0, DType::f32) || ctx.outputs.size() != 1 || !outputs_fit(ctx))
      return false;
    const size_t rank = ctx.inputs[0].shape.rank();
    return rank == 3 || rank == 4;
  }
  void prepare(PrepareContext& ctx) override {
    device_context(ctx);
    PoolGeometry g = pool_geometry(ctx.node, ctx.inputs[0].shape);
    planes_ = int(g.batch * g.channels);
    win_ = window_2d(g);
  }
  void run(RunContext& ctx) const override {
    DeviceContext& dc = *ctx.device_context;
    DeviceGuard guard(dc.device);
    max_pool_f32(static_cast<const float*>(ctx.inputs[0]->raw()),
                 static_cast<float*>(ctx.outputs[0]->raw()), planes_, win_, dc.stream);
  }

 private:
  int planes_ = 0;
  Window2d win_;
};

class GlobalAveragePoolCuda final : public Kernel {
 public:
  static bool supports(const PrepareContext& ctx) {
    return is_static(ctx, 0, DType::f32) && ctx.inputs[0].shape.rank() >= 3 && outputs_fit(ctx);
  }
  void prepare(PrepareContext& ctx) override {
    device_context(ctx);
    const Shape& x = ctx.inputs[0].shape;
    planes_ = int(x[0] * x[1]);
    size_ = planes_ ? int(x.numel() / planes_) : 0;
  }
  void run(RunContext& ctx) const override {
    DeviceContext& dc = *ctx.device_context;
    DeviceGuard guard(dc.device);
    global_avg_pool_f32(static_cast<const float*>(ctx.inputs[0]->raw()),
                        static_cast<float*>(ctx.outputs[0]->raw()), planes_, size_, dc.stream);
  }

 private:
  int planes_ = 0, size_ = 0;
};

class ReluCuda final : public Kernel {
 public:
  static bool supports(const PrepareContext& ctx) {
    return is_static(ctx, 0, DType::f32) && outputs_fit(ctx);
  }
  void run(RunContext& ctx) const override {
    DeviceContext& dc = *ctx.device_context;
    DeviceGuard guard(dc.device);
    clamp_f32(static_cast<const float*>(ctx.inputs[0]->raw()),
              static_cast<float*>(ctx.outputs[0]->raw()), int(ctx.outputs[0]->numel()), 0.f,
              std::numeric_limits<float>::infinity(), dc.stream);
  }
};

// Same-shape Add only: broadcasting ones are left to the CPU.
class AddCuda final : public Kernel {
 public:
  static bool supports(const PrepareContext& ctx) {
    return ctx.inputs.size() == 2 && is_static(ctx, 0, DType::f32) &&
           is_static(ctx, 1, DType::f32) && outputs_fit(ctx) &&
           ctx.inputs[0].shape == ctx.inputs[1].shape &&
           ctx.inputs[0].shape == ctx.outputs[0].shape;
  }
  void run(RunContext& ctx) const override {
    DeviceContext& dc = *ctx.device_context;
    DeviceGuard guard(dc.device);
    add_f32(static_cast<const float*>(ctx.inputs[0]->raw()),
            static_cast<const float*>(ctx.inputs[1]->raw()),
            static_cast<float*>(ctx.outputs[0]->raw()), int(ctx.outputs[0]->numel()), dc.stream);
  }
};

template <typename K>
KernelDef def(const char* op, const char* name, bool (*supports)(const PrepareContext&)) {
  return kernel_def("", op, {DType::f32}, name, supports, [] { return std::make_unique<K>(); });
}

}  // namespace

void register_fp32_kernels(OpRegistry& r) {
  r.register_kernel(def<MaxPoolCuda>("MaxPool", "cuda-maxpool", MaxPoolCuda::supports));
  r.register_kernel(def<GlobalAveragePoolCuda>("GlobalAveragePool", "cuda-global-avgpool",
                                               GlobalAveragePoolCuda::supports));
  r.register_kernel(def<ReluCuda>("Relu", "cuda-relu", ReluCuda::supports));
  r.register_kernel(def<AddCuda>("Add", "cuda-add", AddCuda::supports));
}

}  // namespace minfer::cuda
