// fp32 kernels for the transformer-block ops: LayerNormalization (rows normalized in
// parallel, statistics in double over the row, vectorized) and Gelu/Erf (Eigen's vectorized erf and tanh).
// Both the ONNX ops and the com.minfer forms the fusion passes make are registered.
#include <Eigen/Core>
#include <cmath>
#include <cstring>
#include <unsupported/Eigen/SpecialFunctions>

#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "ops/op_util.h"

namespace minfer::cpu {

namespace {

using Float4 = float __attribute__((vector_size(16)));
using Double4 = double __attribute__((vector_size(32)));

// Sum over x[0, n) of (x[i] - shift)^power (power 1 or 2), in double: the floats are widened
// 4 at a time into two independent accumulators (a vectorized loop: Eigen's cast<double>() sum
// was scalar, 2.6 ns per element). Double keeps rows far from 0 exact enough for the variance.
template <int Power>
double sum_widened(const float* x, int64_t n, double shift) {
  Double4 acc0 = {}, acc1 = {};
  int64_t i = 0;
  for (Float4 a, b; i + 8 <= n; i += 8) {
    std::memcpy(&a, x + i, sizeof a);
    std::memcpy(&b, x + i + 4, sizeof b);
    const Double4 da = __builtin_convertvector(a, Double4) - shift;
    const Double4 db = __builtin_convertvector(b, Double4) - shift;
    acc0 += Power == 1 ? da : da * da;
    acc1 += Power == 1 ? db : db * db;
  }
  const Double4 acc = acc0 + acc1;
  double s = acc[0] + acc[1] + acc[2] + acc[3];
  for (; i < n; ++i) s += Power == 1 ? x[i] - shift : (x[i] - shift) * (x[i] - shift);
  return s;
}

// One row: y = (x - mean) / sqrt(var + eps) * scale (+ bias). Two passes for the statistics,
// the variance around the mean (no cancellation for rows far from 0), then one for y.
void normalize_row(const float* x, int64_t n, float eps, const float* scale, const float* bias,
                   float* y) {
  const double mean = sum_widened<1>(x, n, 0.0) / double(n);
  const double var = sum_widened<2>(x, n, mean) / double(n);
  const float inv = float(1.0 / std::sqrt(var + double(eps)));
  // The mean as a float and the float of its remainder: x - hi is exact for x near the mean
  // (where the values of a row far from 0 are), so the deviations keep the double's accuracy.
  const float hi = float(mean), lo = float(mean - double(hi));
  if (bias)
    for (int64_t i = 0; i < n; ++i) y[i] = ((x[i] - hi) - lo) * inv * scale[i] + bias[i];
  else
    for (int64_t i = 0; i < n; ++i) y[i] = ((x[i] - hi) - lo) * inv * scale[i];
}

// Y = (X - mean) / sqrt(var + eps) * Scale + B over rows of n elements. Scale and B have
// exactly n elements (the normalized dims; other broadcasts go to the reference).
class LayerNormKernel final : public Kernel {
 public:
  void prepare(PrepareContext& ctx) override {
    const Shape& x = ctx.inputs[0].shape;
    const size_t axis = size_t(
        normalize_axis(ctx.node, ctx.node.attrs.get_int("axis", -1), int64_t(x.rank()), "axis"));
    rows_ = dims_product(x, 0, axis);
    n_ = dims_product(x, axis, x.rank());
    eps_ = ctx.node.attrs.get_float("epsilon", 1e-5f);
    has_bias_ = ctx.inputs.size() > 2 && ctx.inputs[2].present;
  }

  void run(RunContext& ctx) const override {
    const float* x = ctx.inputs[0]->data<float>();
    const float* scale = ctx.inputs[1]->data<float>();
    const float* bias = has_bias_ ? ctx.inputs[2]->data<float>() : nullptr;
    float* y = ctx.outputs[0]->data<float>();
    const int64_t n = n_;
    const int threads = threads_for(rows_ * n, ctx.threads, 16384);
    parallel_for(threads, rows_, [&](int64_t r) {
      normalize_row(x + r * n, n, eps_, scale, bias, y + r * n);
    });
  }

  static bool supports(const PrepareContext& ctx) {
    if (!is_static_f32(ctx, 0) || !is_static_f32(ctx, 1)) return false;
    for (size_t o = 1; o < ctx.node.outputs.size(); ++o) {
      const Value* v = ctx.node.outputs[o];
      if (v && (!v->uses.empty() || v->is_graph_output)) return false;  // Mean, InvStdDev
    }
    const Shape& x = ctx.inputs[0].shape;
    if (x.rank() == 0) return false;
    const int64_t axis = ctx.node.attrs.get_int("axis", -1);
    if (axis < -int64_t(x.rank()) || axis >= int64_t(x.rank())) return false;
    const size_t a = size_t(axis < 0 ? axis + int64_t(x.rank()) : axis);
    const int64_t n = dims_product(x, a, x.rank());
    auto full = [&](size_t i) {  // n elements, laid out as the normalized dims
      const Shape& s = ctx.inputs[i].shape;
      if (s.numel() != n || s.rank() > x.rank() - a) return false;
      for (size_t k = 0; k < s.rank(); ++k)
        if (s[s.rank() - 1 - k] != x[x.rank() - 1 - k]) return false;
      return true;
    };
    if (!full(1)) return false;
    return ctx.inputs.size() < 3 || !ctx.inputs[2].present || (is_static_f32(ctx, 2) && full(2));
  }

 private:
  int64_t rows_ = 0, n_ = 0;
  float eps_ = 1e-5f;
  bool has_bias_ = false;
};

// Elementwise f(x) over chunks of a flat f32 tensor.
template <typename F>
void map_chunks(const RunContext& ctx, F&& f) {
  const float* x = ctx.inputs[0]->data<float>();
  float* y = ctx.outputs[0]->data<float>();
  const int64_t total = ctx.inputs[0]->numel();
  constexpr int64_t kChunk = 4096;
  const int64_t chunks = (total + kChunk - 1) / kChunk;
  parallel_for(threads_for(total, ctx.threads, 16384), chunks, [&](int64_t c) {
    const int64_t begin = c * kChunk, len = std::min(kChunk, total - begin);
    f(Eigen::Map<const Eigen::ArrayXf>(x + begin, len), Eigen::Map<Eigen::ArrayXf>(y + begin, len));
  });
}

template <typename X, typename Y>
void gelu_of(const X& x, Y& y, bool tanh) {
  if (tanh) {
    const float k = float(std::sqrt(2.0 / M_PI));
    y = 0.5f * x * (1.f + (k * (x + 0.044715f * x.cube())).tanh());
  } else {
    y = 0.5f * x * (1.f + (x * float(M_SQRT1_2)).erf());
  }
}

class GeluKernel final : public Kernel {
 public:
  void prepare(PrepareContext& ctx) override {
    tanh_ = ctx.node.attrs.get_string("approximate", "none") == "tanh";
  }
  void run(RunContext& ctx) const override {
    map_chunks(ctx, [this](auto x, auto y) { gelu_of(x, y, tanh_); });
  }

 private:
  bool tanh_ = false;
};

class ErfKernel final : public Kernel {
 public:
  void prepare(PrepareContext&) override {}
  void run(RunContext& ctx) const override {
    map_chunks(ctx, [](auto x, auto y) { y = x.erf(); });
  }
};

bool supports_unary(const PrepareContext& ctx) { return is_static_f32(ctx, 0); }

bool supports_gelu(const PrepareContext& ctx) {
  const std::string a = ctx.node.attrs.get_string("approximate", "none");
  return supports_unary(ctx) && (a == "none" || a == "tanh");
}

}  // namespace

void gelu_in_place(float* p, int64_t n, bool tanh) {
  Eigen::Map<Eigen::ArrayXf> x(p, n);
  gelu_of(x, x, tanh);
}

void register_transformer_kernels(OpRegistry& r) {
  for (const char* domain : {"", kMinferDomain}) {
    r.register_kernel({domain,
                       "LayerNormalization",
                       Device::Type::CPU,
                       {DType::f32},
                       "cpu-layernorm",
                       LayerNormKernel::supports,
                       [] { return std::make_unique<LayerNormKernel>(); }});
    r.register_kernel(
        {domain, "Gelu", Device::Type::CPU, {DType::f32}, "cpu-gelu", supports_gelu, [] {
           return std::make_unique<GeluKernel>();
         }});
  }
  r.register_kernel({"", "Erf", Device::Type::CPU, {DType::f32}, "cpu-erf", supports_unary, [] {
                       return std::make_unique<ErfKernel>();
                     }});
}

}  // namespace minfer::cpu
