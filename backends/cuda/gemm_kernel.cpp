// fp32 Gemm and com.minfer:FusedGemm on CUDA: Y = act(alpha * op(A) * op(B) + beta * C), one
// cuBLAS SGEMM (row-major Y computed as column-major Y^T = op(B)^T op(A)^T), then an epilogue
// kernel for the broadcast C and the activation.
#include "backends/cuda/kernels.h"
#include "ops/matmul.h"

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
    g_ = gemm_sizes(ctx);
    act_ = fused_clamp(ctx);
  }

  void run(RunContext& ctx) const override {
    DeviceContext& dc = *ctx.device_context;
    DeviceGuard guard(dc.device);
    const float* a = static_cast<const float*>(ctx.inputs[0]->raw());
    const float* b = static_cast<const float*>(ctx.inputs[1]->raw());
    float* y = static_cast<float*>(ctx.outputs[0]->raw());
    const int m = int(g_.m), n = int(g_.n), k = int(g_.k);  // (cuBLAS's sizes are ints)
    if (m == 0 || n == 0) return;
    const float zero = 0.f;
    MINFER_CUBLAS_CHECK(cublasSgemm(dc.cublas(), g_.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                    g_.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &g_.alpha, b,
                                    g_.trans_b ? k : n, a, g_.trans_a ? m : k, &zero, y, n));
    const float* c = g_.has_c ? static_cast<const float*>(ctx.inputs[2]->raw()) : nullptr;
    gemm_epilogue_f32(y, m, n, c, int(g_.c_row_stride), int(g_.c_col_stride), g_.beta, act_,
                      dc.stream);
  }

 private:
  GemmSizes g_;
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
