// MaxSumDiv3: schema, reference kernel and registration, through the public registry API only
// (as a user's op would be; see examples/custom_op).
#include "ops/max_sum_div3.h"

#include <climits>

#include "backends/cpu/max_sum_div3.h"
#include "minfer/registry.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

constexpr const char* kDoc =
    "Y[...] = the largest sum of a subset of X[..., :] divisible by 3 (empty subset = 0); "
    "X int32/int64 [..., N], Y int64 [...]; a row whose positive values sum past INT64_MAX "
    "is an error";

void infer(InferContext& ctx) {
  DType t = ctx.input_dtype(0);
  ctx.require(t == DType::i32 || t == DType::i64,
              std::string("X must be i32 or i64, got ") + dtype_name(t));
  const Shape& x = ctx.input_shape(0);
  ctx.require(x.rank() >= 1, "X must have rank >= 1 (the op reduces the last axis), got a scalar");
  Shape y(std::vector<int64_t>(x.rank() - 1));
  for (size_t i = 0; i + 1 < x.rank(); ++i) copy_dim(y, i, x, i);
  ctx.set_output(0, DType::i64, std::move(y));
}

// The classic dynamic program, kept plain as the test oracle: best[r] is the largest sum with
// residue r of a subset of the prefix (has[r] = false while there is none). __int128 holds
// every intermediate exactly, whatever the input.
template <typename T>
int64_t reference_row(const Node& node, int64_t row, const T* x, int64_t n) {
  __int128 best[3] = {0, 0, 0};
  bool has[3] = {true, false, false};
  __int128 positive = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = x[i];
    if (v > 0) positive += v;
    const int r = int(((v % 3) + 3) % 3);
    __int128 next[3] = {best[0], best[1], best[2]};
    bool next_has[3] = {has[0], has[1], has[2]};
    for (int k = 0; k < 3; ++k) {
      if (!has[k]) continue;
      const int m = (k + r) % 3;
      const __int128 candidate = best[k] + v;
      if (!next_has[m] || candidate > next[m]) next[m] = candidate, next_has[m] = true;
    }
    for (int k = 0; k < 3; ++k) best[k] = next[k], has[k] = next_has[k];
  }
  if (positive > INT64_MAX) throw_max_sum_div3_overflow(node.describe(), row);
  return int64_t(best[0]);
}

std::vector<Tensor> reference(const Node& node, const std::vector<Tensor>& inputs) {
  const Tensor& x = inputs.at(0);
  op_require(node, x.rank() >= 1, "X must have rank >= 1");
  op_require(node, x.dtype() == DType::i32 || x.dtype() == DType::i64,
             std::string("X must be i32 or i64, got ") + dtype_name(x.dtype()));
  std::vector<int64_t> dims(x.shape().dims().begin(), x.shape().dims().end() - 1);
  Tensor y(DType::i64, Shape(dims));
  const int64_t n = x.shape()[x.rank() - 1];
  int64_t* out = y.data<int64_t>();
  for (int64_t row = 0; row < y.numel(); ++row)
    out[row] = x.dtype() == DType::i32 ? reference_row(node, row, x.data<int32_t>() + row * n, n)
                                       : reference_row(node, row, x.data<int64_t>() + row * n, n);
  return {y};
}

// The CPU kernel (backends/cpu/max_sum_div3.cpp) behind minfer's Kernel interface.
class MaxSumDiv3Cpu final : public Kernel {
 public:
  void prepare(PrepareContext& ctx) override {
    const TensorInfo& x = ctx.inputs.at(0);
    if (x.dtype != DType::i32 && x.dtype != DType::i64)
      ctx.fail(std::string("X must be i32 or i64, got ") + dtype_name(x.dtype));
    if (x.shape.rank() < 1) ctx.fail("X must have rank >= 1");
    node_ = ctx.node.describe();
  }

  void run(RunContext& ctx) const override {
    const Tensor& x = *ctx.inputs[0];
    Tensor& y = *ctx.outputs[0];
    const int64_t n = x.dim(x.rank() - 1);
    const int64_t rows = y.numel();
    int64_t* out = y.data<int64_t>();
    const int64_t bad = x.dtype() == DType::i32
                            ? cpu::max_sum_div3(x.data<int32_t>(), rows, n, out, ctx.threads)
                            : cpu::max_sum_div3(x.data<int64_t>(), rows, n, out, ctx.threads);
    if (bad >= 0) throw_max_sum_div3_overflow(node_, bad);
  }

 private:
  std::string node_;
};

}  // namespace

void throw_max_sum_div3_overflow(const std::string& node, int64_t row) {
  throw Error(ErrorCode::InvalidArgument,
              node + ": row " + std::to_string(row) +
                  " has positive values summing past INT64_MAX, so the result could overflow "
                  "int64; MaxSumDiv3 refuses such input");
}

void register_max_sum_div3(OpRegistry& registry) {
  OpSchema schema;
  schema.domain = kMinferDomain;
  schema.name = "MaxSumDiv3";
  schema.doc = kDoc;
  schema.infer = infer;
  schema.reference = reference;
  registry.register_op(std::move(schema));

  KernelDef cpu;
  cpu.domain = kMinferDomain;
  cpu.op_type = "MaxSumDiv3";
  cpu.device = Device::Type::CPU;
  cpu.dtypes = {DType::i32, DType::i64};
  cpu.name = "cpu-simd-omp";
  cpu.create = [] { return std::make_unique<MaxSumDiv3Cpu>(); };
  registry.register_kernel(std::move(cpu));

#ifdef MINFER_WITH_CUDA
  cuda::register_max_sum_div3_kernel(registry);
#endif
}

}  // namespace minfer
