// MatMul (numpy semantics: batched, broadcast batch dims, 1-D promotion) on Eigen's GEMM, or
// on PackedRhs's micro-kernel (packed_rhs_gemm.h): when B is a constant matrix shared by every
// batch (a layer's weights), packed once at prepare; when each batch has its own B (attention's
// Q K^T and P V), packed by the thread that multiplies it. It also runs com.minfer:FusedMatMul
// (a bias added to every row and an activation such as Gelu: in PackedRhs's epilogue, else in
// one more pass).
#include <algorithm>

#include "backends/cpu/epilogue.h"
#include "backends/cpu/isa.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/packed_rhs_gemm.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/sgemm.h"
#include "ops/broadcast.h"

namespace minfer::cpu {

namespace {

class MatMulKernel final : public Kernel {
 public:
  void prepare(PrepareContext& ctx) override {
    std::vector<int64_t> ad = ctx.inputs[0].shape.dims(), bd = ctx.inputs[1].shape.dims();
    if (ad.size() == 1) ad.insert(ad.begin(), 1);
    if (bd.size() == 1) bd.push_back(1);
    m_ = ad[ad.size() - 2];
    k_ = ad.back();
    n_ = bd.back();
    if (bd[bd.size() - 2] != k_)
      ctx.fail("A " + ctx.inputs[0].shape.to_string() + " and B " +
               ctx.inputs[1].shape.to_string() + " have different K");
    Shape abatch(std::vector<int64_t>(ad.begin(), ad.end() - 2));
    Shape bbatch(std::vector<int64_t>(bd.begin(), bd.end() - 2));
    Shape batch = broadcast_shapes(ctx.node, {abatch, bbatch});
    std::vector<std::vector<int64_t>> strides{broadcast_strides(abatch, batch),
                                              broadcast_strides(bbatch, batch)};
    a_index_.clear();
    b_index_.clear();
    for_each_broadcast(batch, strides, [&](int64_t, const std::vector<int64_t>& off) {
      a_index_.push_back(off[0]);
      b_index_.push_back(off[1]);
    });
    // One B for every batch and the A matrices back to back: a single taller GEMM.
    fold_batch_ = true;
    for (size_t i = 0; i < a_index_.size(); ++i)
      fold_batch_ = fold_batch_ && b_index_[i] == 0 && a_index_[i] == int64_t(i);
    b_ = ctx.inputs[1].constant ? *ctx.inputs[1].constant : Tensor();
    has_bias_ = ctx.inputs.size() > 2 && ctx.inputs[2].present;  // FusedMatMul
    act_ = parse_activation(ctx.node);
    packed_.reset();
    pack_per_batch_ = false;
    if (b_.defined() && fold_batch_ && bd.size() == 2 && m_ * int64_t(a_index_.size()) > 1 &&
        has_any_isa()) {
      packed_ = share_packed_rhs(ctx, "cpu.matmul.packed_rhs", b_, k_, n_, false);
    } else if (!fold_batch_ && m_ >= 8 && has_any_isa()) {
      // Batched products of run-time matrices (attention): each B packed by its thread.
      pack_per_batch_ = true;
      tiles_ = &fp32_micro_kernels();
      threads_ = std::max(1, ctx.threads);
      ctx.workspace_bytes = size_t(threads_) * scratch_floats() * sizeof(float);
    }
  }

  std::string variant() const override {  // with the ISA level of the tiles
    if (packed_) return std::string("packed ") + isa_name(packed_->isa());
    return pack_per_batch_ ? std::string("packed per batch ") + isa_name(tiles_->isa)
                           : std::string();
  }

  void run(RunContext& ctx) const override {
    const float* a = ctx.inputs[0]->data<float>();
    const float* b = b_.defined() ? b_.data<float>() : ctx.inputs[1]->data<float>();
    float* y = ctx.outputs[0]->data<float>();
    const int64_t m = m_, n = n_, k = k_, batches = int64_t(a_index_.size());
    const float* bias = has_bias_ ? ctx.inputs[2]->data<float>() : nullptr;
    if (packed_) {
      packed_->multiply(a, batches * m, k, y, n, ctx.threads, bias, &act_);
      return;
    }
    multiply(ctx, a, b, y);
    if (!bias && !act_.enabled) return;
    // The other paths add the bias and apply the activation in one more pass.
    const int64_t rows = batches * m;
    parallel_for(threads_for(rows * n, ctx.threads), rows, [&](int64_t r) {
      if (bias)
        for (int64_t j = 0; j < n; ++j) y[r * n + j] += bias[j];
      act_.apply(y + r * n, n);
    });
  }

 private:
  void multiply(const RunContext& ctx, const float* a, const float* b, float* y) const {
    const int64_t m = m_, n = n_, k = k_, batches = int64_t(a_index_.size());
    if (pack_per_batch_) {
      const int most = std::clamp(ctx.threads, 1, threads_);
      const int parts =
          int(std::min<int64_t>(batches, threads_for(batches * m * n * k, most, 1 << 18)));
      parallel_region(parts, [&](int part, int nparts) {
        float* packed = static_cast<float*>(ctx.workspace) + part * scratch_floats();
        int64_t packed_index = -1;  // the B in `packed`: a broadcast B is packed once
        for (int64_t i = split_begin(batches, nparts, part);
             i < split_begin(batches, nparts, part + 1); ++i) {
          if (b_index_[i] != packed_index)
            PackedRhs::pack(b + b_index_[i] * k * n, k, n, n, packed);
          packed_index = b_index_[i];
          PackedRhs::multiply_packed(*tiles_, a + a_index_[i] * m * k, m, k, packed, k, n,
                                     y + i * m * n, n);
        }
      });
      return;
    }
    std::fill(y, y + batches * m * n, 0.f);
    if (fold_batch_) {
      sgemm_acc_parallel(ctx.threads, batches * m, n, k, 1.f, {a, k}, {b, n}, y, n);
      return;
    }
    auto one = [&](int64_t i, int threads) {
      sgemm_acc_parallel(threads, m, n, k, 1.f, {a + a_index_[i] * m * k, k},
                         {b + b_index_[i] * k * n, n}, y + i * m * n, n);
    };
    if (batches >= ctx.threads) {
      const int threads = threads_for(batches * m * n * k, ctx.threads, 1 << 18);
      parallel_for(threads, batches, [&](int64_t i) { one(i, 1); });
    } else {
      for (int64_t i = 0; i < batches; ++i) one(i, ctx.threads);
    }
  }

  int64_t m_ = 0, k_ = 0, n_ = 0;
  std::vector<int64_t> a_index_, b_index_;  // matrix index of A and B for each output batch
  bool fold_batch_ = false;
  bool has_bias_ = false;  // FusedMatMul's third input
  Activation act_;         // FusedMatMul's activation
  Tensor b_;
  std::shared_ptr<const PackedRhs> packed_;  // B packed, when constant and shared by all batches
  bool pack_per_batch_ = false;  // else each batch's B packed at run time, A and C in place
  const f32::MicroKernels* tiles_ = nullptr;  // with pack_per_batch_: the level prepared for
  int threads_ = 1;              // the workspace holds this many threads' packed B
  // One packed B, rounded to whole cache lines (the workspace is 64-byte aligned).
  size_t scratch_floats() const { return (PackedRhs::packed_floats(k_, n_) + 15) / 16 * 16; }
};

bool supports_matmul(const PrepareContext& ctx) {
  for (size_t i = 0; i < 2; ++i)
    if (i >= ctx.inputs.size() || !ctx.inputs[i].present || ctx.inputs[i].dtype != DType::f32 ||
        !ctx.inputs[i].shape.is_static())
      return false;
  return true;
}

// FusedMatMul: MatMul's inputs and a static f32 bias of the output's last dim.
bool supports_fused_matmul(const PrepareContext& ctx) {
  if (!supports_matmul(ctx) || ctx.inputs.size() != 3 || !ctx.inputs[2].present ||
      ctx.inputs[2].dtype != DType::f32 || ctx.outputs.empty())
    return false;
  const Shape &bias = ctx.inputs[2].shape, &y = ctx.outputs[0].shape;
  return bias.rank() == 1 && y.rank() >= 1 && bias[0] == y[y.rank() - 1];
}

}  // namespace

void register_matmul_kernels(OpRegistry& registry) {
  registry.register_kernel(
      {"", "MatMul", Device::Type::CPU, {DType::f32}, "cpu-eigen-matmul", supports_matmul, [] {
         return std::make_unique<MatMulKernel>();
       }});
  registry.register_kernel({kMinferDomain, "FusedMatMul", Device::Type::CPU, {DType::f32},
                            "cpu-eigen-matmul", supports_fused_matmul,
                            [] { return std::make_unique<MatMulKernel>(); }});
}

}  // namespace minfer::cpu
