#include "backends/cpu/gemm.h"

#include <algorithm>

#include "backends/cpu/isa.h"
#include "backends/cpu/sgemm.h"
#include "ops/broadcast.h"

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
  const Attributes& attrs = ctx.node.attrs;
  trans_a_ = attrs.get_int("transA", 0) != 0;
  trans_b_ = attrs.get_int("transB", 0) != 0;
  alpha_ = attrs.get_float("alpha", 1.f);
  beta_ = attrs.get_float("beta", 1.f);
  const Shape& a = ctx.inputs[0].shape;
  const Shape& b = ctx.inputs[1].shape;
  m_ = trans_a_ ? a[1] : a[0];
  k_ = trans_a_ ? a[0] : a[1];
  n_ = trans_b_ ? b[0] : b[1];
  if ((trans_b_ ? b[1] : b[0]) != k_)
    ctx.fail("A " + a.to_string() + " and B " + b.to_string() + " have different K");
  has_c_ = ctx.inputs.size() > 2 && ctx.inputs[2].present;
  if (has_c_) {
    std::vector<int64_t> st = broadcast_strides(ctx.inputs[2].shape, Shape{m_, n_});
    c_row_stride_ = st[0];
    c_col_stride_ = st[1];
  }
  act_ = parse_activation(ctx.node);
  b_ = ctx.inputs[1].constant ? *ctx.inputs[1].constant : Tensor();
  // Constant weights (a Linear layer) are packed once, unless A is a single row (a GEMV:
  // Eigen's is memory-bound either way).
  packed_.reset();
  if (b_.defined() && !trans_a_ && m_ > 1 && has_any_isa()) {
    packed_ = share_packed_rhs(ctx, "cpu.gemm.packed_rhs", b_, k_, n_, trans_b_);
  }
  // A Linear layer's bias (C [n] or [1, n], alpha = beta = 1): the packed GEMM adds it.
  bias_row_ =
      has_c_ && alpha_ == 1.f && beta_ == 1.f && c_row_stride_ == 0 && c_col_stride_ == 1;
}

std::string GemmKernel::variant() const {
  return packed_ ? std::string("packed ") + isa_name(packed_->isa()) : std::string();
}

void GemmKernel::run(RunContext& ctx) const {
  const float* a = ctx.inputs[0]->data<float>();
  const float* b = b_.defined() ? b_.data<float>() : ctx.inputs[1]->data<float>();
  float* y = ctx.outputs[0]->data<float>();
  const int64_t m = m_, n = n_;
  if (packed_) {
    // A row bias is added in the GEMM's registers; otherwise Y = alpha * (A B) + beta * C in
    // one more pass over Y. Then the activation.
    const float* c = has_c_ ? ctx.inputs[2]->data<float>() : nullptr;
    packed_->multiply(a, m, k_, y, n, ctx.threads, bias_row_ ? c : nullptr);
    if (bias_row_) {
      if (act_.enabled) act_.apply(y, m * n);
      return;
    }
    const float alpha = alpha_, beta = has_c_ ? beta_ : 0.f;
    for (int64_t i = 0; i < m; ++i) {
      float* yr = y + i * n;
      if (alpha != 1.f)
        for (int64_t j = 0; j < n; ++j) yr[j] *= alpha;
      if (c) {
        const float* cr = c + i * c_row_stride_;
        if (c_col_stride_ == 1)
          for (int64_t j = 0; j < n; ++j) yr[j] += beta * cr[j];
        else
          for (int64_t j = 0; j < n; ++j) yr[j] += beta * cr[0];
      }
      act_.apply(yr, n);
    }
    return;
  }
  if (has_c_) {
    const float* c = ctx.inputs[2]->data<float>();
    const float beta = beta_;
    for (int64_t i = 0; i < m; ++i) {
      float* yr = y + i * n;
      const float* cr = c + i * c_row_stride_;
      if (c_col_stride_ == 1)
        for (int64_t j = 0; j < n; ++j) yr[j] = beta * cr[j];
      else
        std::fill(yr, yr + n, beta * cr[0]);
    }
  } else {
    std::fill(y, y + m * n, 0.f);
  }
  MatrixRef am{a, trans_a_ ? m : k_, trans_a_};
  MatrixRef bm{b, trans_b_ ? k_ : n, trans_b_};
  sgemm_acc_parallel(ctx.threads, m, n, k_, alpha_, am, bm, y, n);
  if (act_.enabled) act_.apply(y, m * n);
}

}  // namespace minfer::cpu
