#include "backends/cpu/gemm.h"

#include <algorithm>

#include "backends/cpu/isa.h"
#include "backends/cpu/sgemm.h"
#include "ops/matmul.h"

namespace minfer::cpu {

namespace {
bool is_static_f32(const TensorInfo& t, size_t rank) {
  return t.present && t.dtype == DType::f32 && t.shape.is_static() && t.shape.rank() == rank;
}
}  // namespace

bool GemmKernel::supports(const PrepareContext& ctx) {
  if (ctx.inputs.size() < 2 || ctx.inputs.size() > 3 || !is_static_f32(ctx.inputs[0], 2) ||
      !is_static_f32(ctx.inputs[1], 2) || ctx.outputs.empty() || !ctx.outputs[0].shape.is_static())
    return false;
  if (ctx.inputs.size() == 3 && ctx.inputs[2].present)
    return ctx.inputs[2].dtype == DType::f32 && ctx.inputs[2].shape.is_static() &&
           ctx.inputs[2].shape.rank() <= 2;
  return true;
}

void GemmKernel::prepare(PrepareContext& ctx) {
  g_ = gemm_sizes(ctx);
  act_ = parse_activation(ctx.node);
  b_ = ctx.inputs[1].constant ? *ctx.inputs[1].constant : Tensor();
  // Constant weights (a Linear layer) are packed once, unless A is a single row (a GEMV:
  // Eigen's is memory-bound either way).
  packed_.reset();
  if (b_.defined() && !g_.trans_a && g_.m > 1 && has_any_isa()) {
    packed_ = share_packed_rhs(ctx, "cpu.gemm.packed_rhs", b_, g_.k, g_.n, g_.trans_b);
  }
  // A Linear layer's bias (C [n] or [1, n], alpha = beta = 1): the packed GEMM adds it.
  bias_row_ =
      g_.has_c && g_.alpha == 1.f && g_.beta == 1.f && g_.c_row_stride == 0 && g_.c_col_stride == 1;
}

std::string GemmKernel::variant() const {
  return packed_ ? std::string("packed ") + isa_name(packed_->isa()) : std::string();
}

void GemmKernel::run(RunContext& ctx) const {
  const float* a = ctx.inputs[0]->data<float>();
  const float* b = b_.defined() ? b_.data<float>() : ctx.inputs[1]->data<float>();
  float* y = ctx.outputs[0]->data<float>();
  const int64_t m = g_.m, n = g_.n;
  if (packed_) {
    // A row bias is added in the GEMM's registers; otherwise Y = alpha * (A B) + beta * C in
    // one more pass over Y. Then the activation.
    const float* c = g_.has_c ? ctx.inputs[2]->data<float>() : nullptr;
    packed_->multiply(a, m, g_.k, y, n, ctx.threads, bias_row_ ? c : nullptr);
    if (bias_row_) {
      if (act_.enabled) act_.apply(y, m * n);
      return;
    }
    const float alpha = g_.alpha, beta = g_.has_c ? g_.beta : 0.f;
    for (int64_t i = 0; i < m; ++i) {
      float* yr = y + i * n;
      if (alpha != 1.f)
        for (int64_t j = 0; j < n; ++j) yr[j] *= alpha;
      if (c) {
        const float* cr = c + i * g_.c_row_stride;
        if (g_.c_col_stride == 1)
          for (int64_t j = 0; j < n; ++j) yr[j] += beta * cr[j];
        else
          for (int64_t j = 0; j < n; ++j) yr[j] += beta * cr[0];
      }
      act_.apply(yr, n);
    }
    return;
  }
  if (g_.has_c) {
    const float* c = ctx.inputs[2]->data<float>();
    const float beta = g_.beta;
    for (int64_t i = 0; i < m; ++i) {
      float* yr = y + i * n;
      const float* cr = c + i * g_.c_row_stride;
      if (g_.c_col_stride == 1)
        for (int64_t j = 0; j < n; ++j) yr[j] = beta * cr[j];
      else
        std::fill(yr, yr + n, beta * cr[0]);
    }
  } else {
    std::fill(y, y + m * n, 0.f);
  }
  MatrixRef am{a, g_.trans_a ? m : g_.k, g_.trans_a};
  MatrixRef bm{b, g_.trans_b ? g_.k : n, g_.trans_b};
  sgemm_acc_parallel(ctx.threads, m, n, g_.k, g_.alpha, am, bm, y, n);
  if (act_.enabled) act_.apply(y, m * n);
}

}  // namespace minfer::cpu
