// BatchNormalization (inference) and Softmax fp32 kernels.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/isa.h"
#include "backends/cpu/isa/isa_kernels.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/vec8.h"
#include "ops/op_util.h"

namespace minfer::cpu {

namespace {

// Y = X * a[c] + b[c] with a = scale / sqrt(var + eps), b = B - mean * a. The per-channel
// factors are computed once at prepare when all four parameters are constants, else per run
// into the workspace.
class BatchNormKernel final : public Kernel {
 public:
  void prepare(PrepareContext& ctx) override {
    const Shape& x = ctx.inputs[0].shape;
    channels_ = x[1];
    batch_ = x[0];
    size_ = dims_product(x, 2, x.rank());
    eps_ = ctx.node.attrs.get_float("epsilon", 1e-5f);
    bool constant = true;
    for (size_t i = 1; i < 5; ++i) constant = constant && ctx.inputs[i].constant;
    factors_.clear();
    if (constant) {
      factors_.resize(2 * channels_);
      compute_factors(ctx.inputs[1].constant->data<float>(), ctx.inputs[2].constant->data<float>(),
                      ctx.inputs[3].constant->data<float>(), ctx.inputs[4].constant->data<float>(),
                      factors_.data());
    }
    ctx.workspace_bytes = constant ? 0 : 2 * channels_ * sizeof(float);
  }

  void run(RunContext& ctx) const override {
    const float* f = factors_.data();
    if (factors_.empty()) {
      float* ws = static_cast<float*>(ctx.workspace);
      compute_factors(ctx.inputs[1]->data<float>(), ctx.inputs[2]->data<float>(),
                      ctx.inputs[3]->data<float>(), ctx.inputs[4]->data<float>(), ws);
      f = ws;
    }
    const float* x = ctx.inputs[0]->data<float>();
    float* y = ctx.outputs[0]->data<float>();
    const int64_t planes = batch_ * channels_, size = size_, channels = channels_;
    parallel_for(threads_for(planes * size, ctx.threads), planes, [&](int64_t p) {
      const float a = f[p % channels], b = f[channels + p % channels];
      const float* xp = x + p * size;
      float* yp = y + p * size;
      for (int64_t i = 0; i < size; ++i) yp[i] = xp[i] * a + b;
    });
  }

 private:
  void compute_factors(const float* scale, const float* bias, const float* mean, const float* var,
                       float* out) const {
    for (int64_t c = 0; c < channels_; ++c) {
      const double a = double(scale[c]) / std::sqrt(double(var[c]) + double(eps_));
      out[c] = static_cast<float>(a);
      out[channels_ + c] = static_cast<float>(double(bias[c]) - double(mean[c]) * a);
    }
  }

  int64_t batch_ = 0, channels_ = 0, size_ = 0;
  float eps_ = 1e-5f;
  std::vector<float> factors_;  // [a; b], empty when computed per run
};

bool supports_batch_norm(const PrepareContext& ctx) {
  if (ctx.inputs.size() != 5 || ctx.node.attrs.get_int("training_mode", 0) != 0) return false;
  for (size_t i = 0; i < 5; ++i)
    if (!is_static_f32(ctx, i)) return false;
  return ctx.inputs[0].shape.rank() >= 2;
}

// y = softmax(x) over one contiguous row of n: the max, exp(x - max) with its sum, the
// scaling; 8 at a time, the last 1..7 through a padded vector. Differences below exp's range
// give exactly 0 (a masked -inf score stays out of the sum).
void softmax_row(const float* x, float* y, int64_t n) {
  const int64_t full = n / 8 * 8, tail = n - full;
  const Int32x8 lane = {0, 1, 2, 3, 4, 5, 6, 7};
  Vec8 v, mx = Vec8{} - INFINITY;
  for (int64_t i = 0; i < full; i += 8) {
    std::memcpy(&v, x + i, sizeof v);
    mx = v > mx ? v : mx;
  }
  float m = -INFINITY;
  for (int l = 0; l < 8; ++l) m = std::max(m, mx[l]);
  for (int64_t i = full; i < n; ++i) m = std::max(m, x[i]);
  auto exp_of = [m](Vec8 t) {
    t -= m;
    return t < -87.33654f ? Vec8{} : exp8(t);
  };
  Vec8 sum = {};
  for (int64_t i = 0; i < full; i += 8) {
    std::memcpy(&v, x + i, sizeof v);
    v = exp_of(v);
    sum += v;
    std::memcpy(y + i, &v, sizeof v);
  }
  if (tail) {
    v = Vec8{} + m;
    std::memcpy(&v, x + full, size_t(tail) * sizeof(float));
    v = exp_of(v);
    sum += lane < int32_t(tail) ? v : Vec8{};
    std::memcpy(y + full, &v, size_t(tail) * sizeof(float));
  }
  float total = 0.f;
  for (int l = 0; l < 8; ++l) total += sum[l];
  const float scale = 1.f / total;
  for (int64_t i = 0; i < full; i += 8) {
    std::memcpy(&v, y + i, sizeof v);
    v *= scale;
    std::memcpy(y + i, &v, sizeof v);
  }
  for (int64_t i = full; i < n; ++i) y[i] *= scale;
}

// Softmax along one axis (opset 13), viewing X as [outer, n, inner].
class SoftmaxKernel final : public Kernel {
 public:
  void prepare(PrepareContext& ctx) override {
    const Shape& x = ctx.inputs[0].shape;
    const int64_t rank = int64_t(x.rank());
    const size_t axis = normalize_axis(ctx.node, ctx.node.attrs.get_int("axis", -1), rank, "axis");
    outer_ = dims_product(x, 0, axis);
    n_ = x[axis];
    inner_ = dims_product(x, axis + 1, x.rank());
    // Rows at the ISA level's width and with its exp where there is one (the generic code
    // is built for the portable baseline).
    const LevelKernels* level = has_any_isa() ? level_kernels(active_isa()) : nullptr;
    row_ = level ? level->smooth_activation->softmax_row : softmax_row;
  }

  void run(RunContext& ctx) const override {
    const float* x = ctx.inputs[0]->data<float>();
    float* y = ctx.outputs[0]->data<float>();
    const int64_t n = n_, inner = inner_;
    if (n == 0) return;
    const int threads = threads_for(outer_ * n * inner, ctx.threads, 8192);
    if (inner == 1) {
      parallel_for(threads, outer_, [&](int64_t o) { row_(x + o * n, y + o * n, n); });
      return;
    }
    // Strided axis: process columns in blocks, so that the running max and sum of a block
    // stay in registers/L1 and every pass reads contiguous rows.
    constexpr int64_t kBlock = 256;
    const int64_t blocks = (inner + kBlock - 1) / kBlock;
    parallel_for(threads, outer_ * blocks, [&](int64_t u) {
      const int64_t o = u / blocks, c0 = u % blocks * kBlock;
      const int64_t len = std::min(kBlock, inner - c0);
      const float* xs = x + o * n * inner + c0;
      float* ys = y + o * n * inner + c0;
      float mx[kBlock], sum[kBlock];
      std::copy(xs, xs + len, mx);
      for (int64_t k = 1; k < n; ++k)
        for (int64_t i = 0; i < len; ++i) mx[i] = std::max(mx[i], xs[k * inner + i]);
      std::fill(sum, sum + len, 0.f);
      for (int64_t k = 0; k < n; ++k) {
        Eigen::Map<const Eigen::ArrayXf> xr(xs + k * inner, len);
        Eigen::Map<Eigen::ArrayXf> yr(ys + k * inner, len);
        yr = (xr - Eigen::Map<Eigen::ArrayXf>(mx, len)).exp();
        Eigen::Map<Eigen::ArrayXf>(sum, len) += yr;
      }
      for (int64_t i = 0; i < len; ++i) sum[i] = 1.f / sum[i];
      for (int64_t k = 0; k < n; ++k)
        for (int64_t i = 0; i < len; ++i) ys[k * inner + i] *= sum[i];
    });
  }

 private:
  int64_t outer_ = 0, n_ = 0, inner_ = 0;
  void (*row_)(const float* x, float* y, int64_t n) = softmax_row;
};

bool supports_softmax(const PrepareContext& ctx) {
  return is_static_f32(ctx, 0) && ctx.inputs[0].shape.rank() >= 1;
}

}  // namespace

void register_norm_kernels(OpRegistry& r) {
  r.register_kernel({"",
                     "BatchNormalization",
                     Device::Type::CPU,
                     {DType::f32},
                     "cpu-batchnorm",
                     supports_batch_norm,
                     [] { return std::make_unique<BatchNormKernel>(); }});
  r.register_kernel(
      {"", "Softmax", Device::Type::CPU, {DType::f32}, "cpu-softmax", supports_softmax, [] {
         return std::make_unique<SoftmaxKernel>();
       }});
}

}  // namespace minfer::cpu
