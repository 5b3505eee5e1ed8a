// Elementwise fp32 kernels: Relu, Clip, Sigmoid and Add/Sub/Mul/Div with numpy broadcasting.
//
// Binary ops collapse the broadcast into as few dims as possible at prepare time (adjacent
// dims merge when both operands step through them the same way), so that same-shape,
// scalar and per-channel operands all become one inner loop over a contiguous run with
// each operand either advancing (stride 1) or fixed (stride 0).
#include <algorithm>
#include <limits>

#include "backends/cpu/epilogue.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "ops/broadcast.h"

namespace minfer::cpu {

namespace {

// Splits [0, n) over threads for streaming work, calling f(begin, end).
template <typename F>
void parallel_ranges(int threads, int64_t n, F&& f) {
  const int t = threads_for(n, threads);
  parallel_for(t, t,
               [&](int64_t i) { f(split_begin(n, t, int(i)), split_begin(n, t, int(i) + 1)); });
}

// ---- unary -------------------------------------------------------------------------------

class ReluKernel final : public Kernel {
 public:
  void run(RunContext& ctx) const override {
    const float* x = ctx.inputs[0]->data<float>();
    float* y = ctx.outputs[0]->data<float>();
    parallel_ranges(ctx.threads, ctx.outputs[0]->numel(), [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) y[i] = x[i] > 0.f ? x[i] : 0.f;
    });
  }
};

class SigmoidKernel final : public Kernel {
 public:
  void run(RunContext& ctx) const override {
    const float* x = ctx.inputs[0]->data<float>();
    float* y = ctx.outputs[0]->data<float>();
    Activation sigmoid;  // the fused epilogues' vectorized sigmoid
    sigmoid.enabled = true;
    sigmoid.kind = Activation::Kind::Sigmoid;
    parallel_ranges(ctx.threads, ctx.outputs[0]->numel(), [&](int64_t lo, int64_t hi) {
      for (int64_t b = lo; b < hi; b += 1024) {  // copied and computed while in L1
        const int64_t e = std::min(hi, b + 1024);
        if (y != x) std::copy(x + b, x + e, y + b);
        sigmoid.apply(y + b, e - b);
      }
    });
  }
};

// Clip bounds come from optional scalar inputs 1 and 2 (read per run: they need not be
// constants) or, for opset < 11, from the min/max attributes.
class ClipKernel final : public Kernel {
 public:
  void prepare(PrepareContext& ctx) override {
    const Attributes& attrs = ctx.node.attrs;
    lo_ = attrs.get_float("min", -std::numeric_limits<float>::infinity());
    hi_ = attrs.get_float("max", std::numeric_limits<float>::infinity());
  }
  void run(RunContext& ctx) const override {
    float lo = lo_, hi = hi_;
    if (ctx.inputs.size() > 1 && ctx.inputs[1]) lo = ctx.inputs[1]->data<float>()[0];
    if (ctx.inputs.size() > 2 && ctx.inputs[2]) hi = ctx.inputs[2]->data<float>()[0];
    const float* x = ctx.inputs[0]->data<float>();
    float* y = ctx.outputs[0]->data<float>();
    parallel_ranges(ctx.threads, ctx.outputs[0]->numel(), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        float v = x[i] < lo ? lo : x[i];
        y[i] = v > hi ? hi : v;
      }
    });
  }

 private:
  float lo_ = 0.f, hi_ = 0.f;
};

bool supports_unary(const PrepareContext& ctx) { return is_static_f32(ctx, 0); }

bool supports_clip(const PrepareContext& ctx) {
  for (size_t i = 0; i < ctx.inputs.size(); ++i)
    if (ctx.inputs[i].present && ctx.inputs[i].dtype != DType::f32) return false;
  return is_static_f32(ctx, 0);
}

// ---- binary ------------------------------------------------------------------------------

enum class BinaryOp { Add, Sub, Mul, Div };

template <BinaryOp kOp>
inline float apply(float a, float b) {
  if constexpr (kOp == BinaryOp::Add) return a + b;
  if constexpr (kOp == BinaryOp::Sub) return a - b;
  if constexpr (kOp == BinaryOp::Mul) return a * b;
  return a / b;
}

// y[i] = a[i * sa] op b[i * sb] with sa, sb in {0, 1}: three loops the compiler vectorizes.
template <BinaryOp kOp>
void binary_run(const float* a, int64_t sa, const float* b, int64_t sb, float* y, int64_t n) {
  if (sa && sb) {
    for (int64_t i = 0; i < n; ++i) y[i] = apply<kOp>(a[i], b[i]);
  } else if (sa) {
    const float s = b[0];
    for (int64_t i = 0; i < n; ++i) y[i] = apply<kOp>(a[i], s);
  } else if (sb) {
    const float s = a[0];
    for (int64_t i = 0; i < n; ++i) y[i] = apply<kOp>(s, b[i]);
  } else {
    const float v = apply<kOp>(a[0], b[0]);
    std::fill(y, y + n, v);
  }
}

template <BinaryOp kOp>
class BinaryKernel final : public Kernel {
 public:
  void prepare(PrepareContext& ctx) override {
    CollapsedBroadcast c =
        collapse_broadcast({ctx.inputs[0].shape, ctx.inputs[1].shape}, ctx.outputs[0].shape);
    dims_ = std::move(c.dims);
    sa_ = std::move(c.strides[0]);
    sb_ = std::move(c.strides[1]);
  }

  void run(RunContext& ctx) const override {
    const float* a = ctx.inputs[0]->data<float>();
    const float* b = ctx.inputs[1]->data<float>();
    float* y = ctx.outputs[0]->data<float>();
    const size_t rank = dims_.size();
    const int64_t inner = dims_.back(), ia = sa_.back(), ib = sb_.back();
    parallel_ranges(ctx.threads, ctx.outputs[0]->numel(), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end;) {
        // Offsets of the row holding flat index i, then the rest of that row.
        int64_t row = i / inner, col = i % inner, oa = 0, ob = 0;
        for (size_t d = rank - 1; d-- > 0;) {
          const int64_t idx = row % dims_[d];
          row /= dims_[d];
          oa += idx * sa_[d];
          ob += idx * sb_[d];
        }
        const int64_t n = std::min(inner - col, end - i);
        binary_run<kOp>(a + oa + col * ia, ia, b + ob + col * ib, ib, y + i, n);
        i += n;
      }
    });
  }

 private:
  std::vector<int64_t> dims_, sa_, sb_;  // collapsed output dims and operand strides
};

bool supports_binary(const PrepareContext& ctx) {
  return ctx.inputs.size() == 2 && is_static_f32(ctx, 0) && is_static_f32(ctx, 1) &&
         !ctx.outputs.empty() && ctx.outputs[0].shape.is_static();
}

template <typename K>
KernelDef def(const char* op, const char* name, std::function<bool(const PrepareContext&)> sup) {
  return {"", op, Device::Type::CPU, {DType::f32}, name, std::move(sup), [] {
            return std::make_unique<K>();
          }};
}

// Relu and the binary ops read element i (of a same-shaped operand) before writing it.
KernelDef in_place(KernelDef d) {
  d.in_place = true;
  return d;
}

}  // namespace

void register_elementwise_kernels(OpRegistry& r) {
  r.register_kernel(in_place(def<ReluKernel>("Relu", "cpu-relu", supports_unary)));
  r.register_kernel(def<SigmoidKernel>("Sigmoid", "cpu-sigmoid", supports_unary));
  r.register_kernel(def<ClipKernel>("Clip", "cpu-clip", supports_clip));
  r.register_kernel(
      in_place(def<BinaryKernel<BinaryOp::Add>>("Add", "cpu-add", supports_binary)));
  r.register_kernel(
      in_place(def<BinaryKernel<BinaryOp::Sub>>("Sub", "cpu-sub", supports_binary)));
  r.register_kernel(
      in_place(def<BinaryKernel<BinaryOp::Mul>>("Mul", "cpu-mul", supports_binary)));
  r.register_kernel(
      in_place(def<BinaryKernel<BinaryOp::Div>>("Div", "cpu-div", supports_binary)));
}

}  // namespace minfer::cpu
