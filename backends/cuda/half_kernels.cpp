// The fp16 ops of --precision fp16 on CUDA (ops/fp16/half_ops.h): HConv on the implicit GEMM
// (half_igemm.cu), with its float32 weights converted to fp16 and packed once at prepare, and
// the layout changes and pools (half_ops.cu).
#include <algorithm>
#include <optional>

#include "backends/cuda/igemm_tune.h"
#include "backends/cuda/kernels.h"
#include "ops/int8/int8_ops.h"
#include "runtime/half.h"

namespace minfer::cuda {

namespace {

constexpr size_t kAlign = 256;

bool static_rank4(const PrepareContext& ctx, size_t i, DType t) {
  return is_static(ctx, i, t) && ctx.inputs[i].shape.rank() == 4;
}

class HConvCuda final : public Kernel {
 public:
  static bool supports(const PrepareContext& ctx) {
    if (ctx.inputs.size() < 2 || !static_rank4(ctx, 0, DType::f16) ||
        !static_rank4(ctx, 1, DType::f32) || !ctx.inputs[1].constant || !outputs_fit(ctx) ||
        ctx.node.attrs.get_int("group", 1) != 1 || !ctx.device_context)
      return false;
    if (ctx.inputs.size() > 2 && ctx.inputs[2].present && !ctx.inputs[2].constant) return false;
    if (ctx.inputs.size() > 3 && ctx.inputs[3].present &&
        (!is_static(ctx, 3, DType::f16) || ctx.inputs[3].shape != ctx.outputs[0].shape))
      return false;
    const Shape& w = ctx.inputs[1].shape;
    const int c_bytes = int(2 * w[1]), kw = igemm_window(Window2d{1, 1, 1, 1, 1, int(w[3])}, c_bytes).kw;
    return igemm_accepts(c_bytes, int(c_bytes * w[2] * kw));
  }

  void prepare(PrepareContext& ctx) override {
    DeviceContext& dc = device_context(ctx);
    const Shape& xs = ctx.inputs[0].shape;
    ConvGeometry g = conv_geometry(ctx.node, int8::nhwc_to_nchw_shape(xs), ctx.inputs[1].shape);
    if (g.rank() != 2) ctx.fail("the CUDA HConv kernel supports 2-D convolutions");
    const int c = int(xs[3]), m = int(g.out_channels);
    const Window2d win = igemm_window(window_2d(g), 2 * c);
    cv_ = half_igemm_conv(c, m, int(xs[0]) * win.oh * win.ow, win);
    // Weights [m][ld / 2] in fp16, k = (ky * kw + kx) * C + c as the GEMM reads the input
    // (kw the padded one: the added taps stay zero).
    const Tensor& w = *ctx.inputs[1].constant;
    const int kh = int(ctx.inputs[1].shape[2]), kw = int(ctx.inputs[1].shape[3]);
    const int ld = cv_.ld / 2;
    std::vector<uint16_t> packed(size_t(m) * ld, 0);
    const float* wp = w.data<float>();
    for (int o = 0; o < m; ++o)
      for (int ch = 0; ch < c; ++ch)
        for (int ky = 0; ky < kh; ++ky)
          for (int kx = 0; kx < kw; ++kx)
            packed[size_t(o) * ld + (ky * win.kw + kx) * c + ch] =
                float_to_half(wp[((int64_t(o) * c + ch) * kh + ky) * kw + kx]);
    const Tensor* b = ctx.inputs.size() > 2 && ctx.inputs[2].present ? ctx.inputs[2].constant
                                                                      : nullptr;
    // Shared by the session's plans of every batch: the packing depends only on the node.
    uploaded_ = ctx.share<Uploaded>(
        "cuda.hconv.ld" + std::to_string(ld) + ".kw" + std::to_string(win.kw),
        packed.size() * 2 + (b ? size_t(b->nbytes()) : 0), [&] {
          auto u = std::make_shared<Uploaded>();
          u->weights = upload(dc, packed);
          if (b) u->bias = upload(dc, b->raw(), b->nbytes());
          return u;
        });
    stage_.bias = b ? uploaded_->bias.as<float>() : nullptr;
    stage_.act = fused_clamp(ctx);
    stage_.residual = ctx.inputs.size() > 3 && ctx.inputs[3].present;
    ctx.packed_inputs = {1, 2};
    plan_ = choose_plan(ctx);
    {
      DeviceGuard guard(dc.device);
      hconv_prepare(plan_.tile);
    }
    const size_t bytes = hconv_workspace_bytes(cv_, plan_);
    ctx.workspace_bytes = bytes ? kAlign + bytes : 0;  // run() aligns the start
  }

  // Forced by MINFER_IGEMM_PLAN, else the fastest tile with the heuristic's K split (the
  // split decides the rounding; the tile does not), timed on this conv's sizes.
  IgemmPlan choose_plan(const PrepareContext& ctx) const {
    if (const std::optional<IgemmPlan> forced = forced_igemm_plan()) return *forced;
    DeviceContext& dc = *ctx.device_context;
    const IgemmPlan heuristic = igemm_plan(cv_, dc.sm_count);
    std::vector<IgemmPlan> candidates = {heuristic};
    for (const IgemmPlan& p : igemm_candidates(cv_, dc.sm_count, heuristic.splits))
      if (!(p == heuristic)) candidates.push_back(p);
    IgemmScratchSizes sizes;
    sizes.x = size_t(ctx.inputs[0].shape.numel()) * 2;
    sizes.y = size_t(ctx.outputs[0].shape.numel()) * 2;
    sizes.z = stage_.residual ? sizes.y : 0;
    sizes.workspace = hconv_workspace_bytes(cv_, heuristic);
    const std::string key =
        std::string("fp16/") + (stage_.residual ? "z/" : "/") + igemm_key(cv_);
    const uint16_t* w = uploaded_->weights.as<uint16_t>();
    return tuned_igemm_plan(
        dc, key, candidates, sizes, [](const IgemmPlan& p) { hconv_prepare(p.tile); },
        [&](const IgemmPlan& p, const IgemmScratch& b, cudaStream_t stream) {
          hconv_igemm(b.x, w, cv_, stage_, b.z, b.y, p, b.workspace, stream);
        });
  }

  std::string variant() const override { return igemm_plan_name(plan_); }

  void run(RunContext& ctx) const override {
    DeviceContext& dc = *ctx.device_context;
    DeviceGuard guard(dc.device);
    void* ws = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(ctx.workspace) + kAlign - 1) /
                                       kAlign * kAlign);
    hconv_igemm(ctx.inputs[0]->raw(), uploaded_->weights.as<uint16_t>(), cv_, stage_,
                stage_.residual ? ctx.inputs[3]->raw() : nullptr, ctx.outputs[0]->raw(), plan_,
                ws, dc.stream);
  }

 private:
  IgemmConv cv_;
  IgemmPlan plan_;
  HStage stage_;
  struct Uploaded {
    DeviceBuffer weights;  // fp16 [m][ld / 2]
    DeviceBuffer bias;     // float [m], or none
  };
  std::shared_ptr<const Uploaded> uploaded_;
};

class HMaxPoolCuda final : public Kernel {
 public:
  static bool supports(const PrepareContext& ctx) {
    return static_rank4(ctx, 0, DType::f16) && ctx.outputs.size() == 1 && outputs_fit(ctx);
  }
  void prepare(PrepareContext& ctx) override {
    device_context(ctx);
    const Shape& xs = ctx.inputs[0].shape;
    PoolGeometry g = pool_geometry(ctx.node, int8::nhwc_to_nchw_shape(xs));
    if (g.rank() != 2) ctx.fail("the CUDA HMaxPool kernel supports 2-D pooling");
    n_ = int(xs[0]);
    c_ = int(xs[3]);
    win_ = window_2d(g);
  }
  void run(RunContext& ctx) const override {
    DeviceContext& dc = *ctx.device_context;
    DeviceGuard guard(dc.device);
    hmax_pool_nhwc(ctx.inputs[0]->raw(), ctx.outputs[0]->raw(), n_, c_, win_, dc.stream);
  }

 private:
  int n_ = 0, c_ = 0;
  Window2d win_;
};

class HGlobalAveragePoolCuda final : public Kernel {
 public:
  static bool supports(const PrepareContext& ctx) {
    return is_static(ctx, 0, DType::f16) && ctx.inputs[0].shape.rank() >= 3 && outputs_fit(ctx);
  }
  void prepare(PrepareContext& ctx) override {
    device_context(ctx);
    const Shape& x = ctx.inputs[0].shape;
    n_ = int(x[0]);
    c_ = int(x[x.rank() - 1]);
    hw_ = n_ > 0 && c_ > 0 ? int(x.numel() / (int64_t(n_) * c_)) : 0;
  }
  void run(RunContext& ctx) const override {
    DeviceContext& dc = *ctx.device_context;
    DeviceGuard guard(dc.device);
    hglobal_avg_pool(ctx.inputs[0]->raw(), static_cast<float*>(ctx.outputs[0]->raw()), n_, hw_,
                     c_, dc.stream);
  }

 private:
  int n_ = 0, hw_ = 0, c_ = 0;
};

// ToHalfNhwc (to_half) and FromHalfNhwc: [n][c][hw] float <-> [n][hw][c] fp16.
class HalfLayoutCuda final : public Kernel {
 public:
  explicit HalfLayoutCuda(bool to_half) : to_half_(to_half) {}
  static bool supports_to(const PrepareContext& ctx) {
    return is_static(ctx, 0, DType::f32) && outputs_fit(ctx);
  }
  static bool supports_from(const PrepareContext& ctx) {
    return is_static(ctx, 0, DType::f16) && outputs_fit(ctx);
  }
  void prepare(PrepareContext& ctx) override {
    device_context(ctx);
    const Shape& x = ctx.inputs[0].shape;
    n_ = int(x[0]);
    c_ = int(to_half_ ? x[1] : x[x.rank() - 1]);
    hw_ = n_ > 0 && c_ > 0 ? int(x.numel() / (int64_t(n_) * c_)) : 0;
  }
  void run(RunContext& ctx) const override {
    DeviceContext& dc = *ctx.device_context;
    DeviceGuard guard(dc.device);
    if (to_half_)
      to_half_nhwc(static_cast<const float*>(ctx.inputs[0]->raw()), ctx.outputs[0]->raw(), n_,
                   c_, hw_, dc.stream);
    else
      from_half_nhwc(ctx.inputs[0]->raw(), static_cast<float*>(ctx.outputs[0]->raw()), n_, c_,
                     hw_, dc.stream);
  }

 private:
  bool to_half_;
  int n_ = 0, c_ = 0, hw_ = 0;
};

}  // namespace

void register_half_kernels(OpRegistry& r) {
  r.register_kernel(kernel_def(kMinferDomain, "HConv", {DType::f16}, "cuda-fp16-igemm",
                               HConvCuda::supports, [] { return std::make_unique<HConvCuda>(); }));
  r.register_kernel(kernel_def(kMinferDomain, "HMaxPool", {DType::f16}, "cuda-fp16-maxpool",
                               HMaxPoolCuda::supports,
                               [] { return std::make_unique<HMaxPoolCuda>(); }));
  r.register_kernel(kernel_def(kMinferDomain, "HGlobalAveragePool", {DType::f16},
                               "cuda-fp16-global-avgpool", HGlobalAveragePoolCuda::supports,
                               [] { return std::make_unique<HGlobalAveragePoolCuda>(); }));
  r.register_kernel(kernel_def(kMinferDomain, "ToHalfNhwc", {DType::f32}, "cuda-to-fp16-nhwc",
                               HalfLayoutCuda::supports_to,
                               [] { return std::make_unique<HalfLayoutCuda>(true); }));
  r.register_kernel(kernel_def(kMinferDomain, "FromHalfNhwc", {DType::f16},
                               "cuda-from-fp16-nhwc", HalfLayoutCuda::supports_from,
                               [] { return std::make_unique<HalfLayoutCuda>(false); }));
}

}  // namespace minfer::cuda
