// fp32 Gemm and com.minfer:FusedGemm on CUDA: Y = act(alpha * op(A) * op(B) + beta * C), one
// cuBLAS SGEMM (row-major Y computed as column-major Y^T = op(B)^T op(A)^T), then an epilogue
// kernel for the broadcast C and the activation.
#include "backends/cuda/kernels.h"
#include "ops/broadcast.h"

namespace minfer::cuda {

namespace {

bool is_matrix(const PrepareContext& ctx, size_t i) {
  return is_static(ctx, i, DType::f32) && ctx.inputs[i].shape.rank() == 2;
}

class GemmCuda final : public Kernel {
 public:
  static bool supports(const PrepareContext& ctx) {
    if (ctx.inputs.size() < 2 || ctx.inputs.size() > 3 || !is_matrix(ctx, 0) ||
        !is_matrix(ctx, 1) || !outputs_fit(ctx))
      return false;
    if (ctx.inputs.size() == 3 && ctx.inputs[2].present)
      return is_static(ctx, 2, DType::f32) && ctx.inputs[2].shape.rank() <= 2;
    return true;
  }

  void prepare(PrepareContext& ctx) override {
    device_context(ctx).cublas();  // now, not inside a CUDA graph capture
    const Attributes& attrs = ctx.node.attrs;
    trans_a_ = attrs.get_int("transA", 0) != 0;
    trans_b_ = attrs.get_int("transB", 0) != 0;
    alpha_ = attrs.get_float("alpha", 1.f);
    beta_ = attrs.get_float("beta", 1.f);
    const Shape& a = ctx.inputs[0].shape;
    const Shape& b = ctx.inputs[1].shape;
    m_ = int(trans_a_ ? a[1] : a[0]);
    k_ = int(trans_a_ ? a[0] : a[1]);
    n_ = int(trans_b_ ? b[0] : b[1]);
    if ((trans_b_ ? b[1] : b[0]) != k_)
      ctx.fail("A " + a.to_string() + " and B " + b.to_string() + " have different K");
    has_c_ = ctx.inputs.size() > 2 && ctx.inputs[2].present;
    if (has_c_) {
      std::vector<int64_t> st = broadcast_strides(ctx.inputs[2].shape, Shape{m_, n_});
      c_row_ = int(st[0]);
      c_col_ = int(st[1]);
    }
    act_ = fused_clamp(ctx);
  }

  void run(RunContext& ctx) const override {
    DeviceContext& dc = *ctx.device_context;
    DeviceGuard guard(dc.device);
    const float* a = static_cast<const float*>(ctx.inputs[0]->raw());
    const float* b = static_cast<const float*>(ctx.inputs[1]->raw());
    float* y = static_cast<float*>(ctx.outputs[0]->raw());
    if (m_ == 0 || n_ == 0) return;
    const float zero = 0.f;
    MINFER_CUBLAS_CHECK(cublasSgemm(dc.cublas(), trans_b_ ? CUBLAS_OP_T : CUBLAS_OP_N,
                                    trans_a_ ? CUBLAS_OP_T : CUBLAS_OP_N, n_, m_, k_, &alpha_, b,
                                    trans_b_ ? k_ : n_, a, trans_a_ ? m_ : k_, &zero, y, n_));
    const float* c = has_c_ ? static_cast<const float*>(ctx.inputs[2]->raw()) : nullptr;
    gemm_epilogue_f32(y, m_, n_, c, c_row_, c_col_, beta_, act_, dc.stream);
  }

 private:
  bool trans_a_ = false, trans_b_ = false, has_c_ = false;
  float alpha_ = 1.f, beta_ = 1.f;
  int m_ = 0, n_ = 0, k_ = 0, c_row_ = 0, c_col_ = 0;
  Clamp act_;
};

}  // namespace

void register_gemm_kernels(OpRegistry& registry) {
  for (const char* domain : {"", kMinferDomain}) {
    const std::string op = *domain ? "FusedGemm" : "Gemm";
    registry.register_kernel(kernel_def(domain, op, {DType::f32}, "cuda-cublas-sgemm",
                                        GemmCuda::supports,
                                        [] { return std::make_unique<GemmCuda>(); }));
  }
}

}  // namespace minfer::cuda
