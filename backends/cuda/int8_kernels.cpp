// QuantizeLinear, DequantizeLinear, QAdd, QMaxPool and QGlobalAveragePool on CUDA (device
// code in int8_ops.cu), with the parameters parsed once at prepare as the CPU kernels do.
#include <algorithm>
#include <cstring>

#include "backends/cuda/kernels.h"
#include "ops/conv_geometry.h"
#include "ops/int8/int8_ops.h"

namespace minfer::cuda {

namespace {

// ---- QuantizeLinear / DequantizeLinear ---------------------------------------------------

// Constant scale (f32) and zero point, no blocked quantization.
bool constant_params(const PrepareContext& ctx) {
  if (ctx.inputs.size() < 2 || !ctx.inputs[1].constant || ctx.inputs[1].dtype != DType::f32)
    return false;
  if (ctx.inputs.size() > 2 && ctx.inputs[2].present && !ctx.inputs[2].constant) return false;
  return ctx.node.attrs.get_int("block_size", 0) == 0 && outputs_fit(ctx);
}

// The per-tensor or per-axis parameters, uploaded; `params` points into `buffer`.
struct DeviceAxisParams {
  DeviceBuffer buffer;
  AxisParams params;
};

DeviceAxisParams axis_params(PrepareContext& ctx) {
  const Shape& x = ctx.inputs[0].shape;
  const Tensor& s = *ctx.inputs[1].constant;
  const int64_t count = s.numel();
  const Tensor* z =
      ctx.inputs.size() > 2 && ctx.inputs[2].present ? ctx.inputs[2].constant : nullptr;
  std::vector<int32_t> values(size_t(2 * count), 0);  // scale bits, then zero points
  std::memcpy(values.data(), s.data<float>(), size_t(count) * sizeof(float));
  for (int64_t i = 0; i < count && z; ++i) {
    if (z->dtype() == DType::i8) values[count + i] = z->data<int8_t>()[i];
    if (z->dtype() == DType::u8) values[count + i] = z->data<uint8_t>()[i];
    if (z->dtype() == DType::i32) values[count + i] = z->data<int32_t>()[i];
  }
  DeviceAxisParams r;
  r.params.count = int(count);
  if (count > 1) {
    const int64_t rank = int64_t(x.rank());
    int64_t axis = ctx.node.attrs.get_int("axis", 1);
    if (axis < 0) axis += rank;
    int64_t inner = 1;
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x[d];
    r.params.inner = int(inner);
  }
  r.buffer = upload(device_context(ctx), values);
  r.params.scale = r.buffer.as<float>();
  r.params.zero_point = r.buffer.as<int32_t>() + count;
  return r;
}

class QuantizeCuda final : public Kernel {
 public:
  static bool supports(const PrepareContext& ctx) {
    return is_static(ctx, 0, DType::f32) && constant_params(ctx) &&
           (ctx.outputs[0].dtype == DType::i8 || ctx.outputs[0].dtype == DType::u8);
  }
  void prepare(PrepareContext& ctx) override {
    p_ = axis_params(ctx);
    to_u8_ = ctx.outputs[0].dtype == DType::u8;
  }
  void run(RunContext& ctx) const override {
    DeviceContext& dc = *ctx.device_context;
    DeviceGuard guard(dc.device);
    quantize_f32(static_cast<const float*>(ctx.inputs[0]->raw()), ctx.outputs[0]->raw(),
                 int(ctx.outputs[0]->numel()), p_.params, to_u8_, dc.stream);
  }

 private:
  DeviceAxisParams p_;
  bool to_u8_ = false;
};

class DequantizeCuda final : public Kernel {
 public:
  static bool supports(const PrepareContext& ctx) {
    const bool typed = is_static(ctx, 0, DType::i8) || is_static(ctx, 0, DType::u8) ||
                       is_static(ctx, 0, DType::i32);
    return typed && constant_params(ctx);
  }
  void prepare(PrepareContext& ctx) override {
    p_ = axis_params(ctx);
    in_bytes_ = int(dtype_size(ctx.inputs[0].dtype));
    unsigned_ = ctx.inputs[0].dtype == DType::u8;
  }
  void run(RunContext& ctx) const override {
    DeviceContext& dc = *ctx.device_context;
    DeviceGuard guard(dc.device);
    dequantize_f32(ctx.inputs[0]->raw(), static_cast<float*>(ctx.outputs[0]->raw()),
                   int(ctx.outputs[0]->numel()), p_.params, in_bytes_, unsigned_, dc.stream);
  }

 private:
  DeviceAxisParams p_;
  int in_bytes_ = 1;
  bool unsigned_ = false;
};

// ---- QAdd --------------------------------------------------------------------------------

class QAddCuda final : public Kernel {
 public:
  static bool supports(const PrepareContext& ctx) {
    return ctx.inputs.size() == 2 && is_static(ctx, 0, DType::i8) && is_static(ctx, 1, DType::i8) &&
           ctx.inputs[0].shape == ctx.inputs[1].shape && outputs_fit(ctx);
  }
  void prepare(PrepareContext& ctx) override {
    device_context(ctx);
    const int8::AddStage st = int8::parse_add_stage(ctx.node);
    p_ = {st.mult.ma,      st.mult.mb,      st.mult.k, st.a_zero_point,
          st.b_zero_point, st.y_zero_point, st.y_min,  st.y_max};
  }
  void run(RunContext& ctx) const override {
    DeviceContext& dc = *ctx.device_context;
    DeviceGuard guard(dc.device);
    qadd(static_cast<const int8_t*>(ctx.inputs[0]->raw()),
         static_cast<const int8_t*>(ctx.inputs[1]->raw()),
         static_cast<int8_t*>(ctx.outputs[0]->raw()), int(ctx.outputs[0]->numel()), p_, dc.stream);
  }

 private:
  QAddParams p_;
};

// ---- QMaxPool, QGlobalAveragePool ----------------------------------------------------------

bool is_nhwc(const PrepareContext& ctx) {
  return ctx.node.attrs.get_string("layout", "NCHW") == "NHWC";
}

class QMaxPoolCuda final : public Kernel {
 public:
  static bool supports(const PrepareContext& ctx) {
    return is_static(ctx, 0, DType::i8) && ctx.inputs[0].shape.rank() == 4 && is_nhwc(ctx) &&
           outputs_fit(ctx);
  }
  void prepare(PrepareContext& ctx) override {
    device_context(ctx);
    const Shape& x = ctx.inputs[0].shape;
    PoolGeometry g = pool_geometry(ctx.node, int8::nhwc_to_nchw_shape(x));
    if (g.rank() != 2) ctx.fail("the CUDA QMaxPool kernel supports 2-D windows");
    n_ = int(x[0]);
    c_ = int(x[3]);
    win_ = {int(x[1]),           int(x[2]),           int(g.out_h()),    int(g.out_w()),
            int(g.kernel_h()),   int(g.kernel_w()),   int(g.stride_h()), int(g.stride_w()),
            int(g.dilations[0]), int(g.dilations[1]), int(g.pad_top()),  int(g.pad_left())};
  }
  void run(RunContext& ctx) const override {
    DeviceContext& dc = *ctx.device_context;
    DeviceGuard guard(dc.device);
    qmax_pool_nhwc(static_cast<const int8_t*>(ctx.inputs[0]->raw()),
                   static_cast<int8_t*>(ctx.outputs[0]->raw()), n_, c_, win_, dc.stream);
  }

 private:
  int n_ = 0, c_ = 0;
  Window2d win_;
};

class QGlobalAveragePoolCuda final : public Kernel {
 public:
  static bool supports(const PrepareContext& ctx) {
    return is_static(ctx, 0, DType::i8) && ctx.inputs[0].shape.rank() >= 3 && outputs_fit(ctx);
  }
  void prepare(PrepareContext& ctx) override {
    device_context(ctx);
    const Shape& x = ctx.inputs[0].shape;
    const int64_t rank = int64_t(x.rank());
    // NHWC: sums over the middle dims of [N, HW, C]; NCHW: over the planes of [N*C, HW, 1].
    if (int8::is_nhwc(ctx.node)) {
      n_ = int(x[0]);
      c_ = int(x[rank - 1]);
    } else {
      n_ = int(x[0] * x[1]);
      c_ = 1;
    }
    const int64_t nc = int64_t(n_) * c_;
    hw_ = nc ? int(x.numel() / nc) : 0;
    const int8::PoolStage st = int8::parse_pool_stage(ctx.node);
    const int8::Multiplier m = int8::pool_multiplier(st, std::max(hw_, 1));
    p_ = {m.m, m.n, m.l, st.x_zero_point, st.y_zero_point};
  }
  void run(RunContext& ctx) const override {
    DeviceContext& dc = *ctx.device_context;
    DeviceGuard guard(dc.device);
    qglobal_avg_pool(static_cast<const int8_t*>(ctx.inputs[0]->raw()),
                     static_cast<int8_t*>(ctx.outputs[0]->raw()), n_, hw_, c_, p_, dc.stream);
  }

 private:
  int n_ = 0, hw_ = 0, c_ = 1;
  QPoolParams p_;
};

template <typename K>
KernelDef def(const std::string& domain, const char* op, std::vector<DType> dtypes,
              bool (*supports)(const PrepareContext&)) {
  return kernel_def(domain, op, std::move(dtypes), "cuda-int8", supports,
                    [] { return std::make_unique<K>(); });
}

}  // namespace

void register_int8_kernels(OpRegistry& r) {
  r.register_kernel(def<QuantizeCuda>("", "QuantizeLinear", {DType::f32}, QuantizeCuda::supports));
  r.register_kernel(def<DequantizeCuda>("", "DequantizeLinear", {DType::i8, DType::u8, DType::i32},
                                        DequantizeCuda::supports));
  r.register_kernel(def<QAddCuda>(kMinferDomain, "QAdd", {DType::i8}, QAddCuda::supports));
  r.register_kernel(
      def<QMaxPoolCuda>(kMinferDomain, "QMaxPool", {DType::i8}, QMaxPoolCuda::supports));
  r.register_kernel(def<QGlobalAveragePoolCuda>(kMinferDomain, "QGlobalAveragePool", {DType::i8},
                                                QGlobalAveragePoolCuda::supports));
}

}  // namespace minfer::cuda
