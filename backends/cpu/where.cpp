// Where(condition, X, Y) on the CPU, any element type: the broadcast collapsed at prepare
// (collapse_broadcast, as for the binary ops), then each row of the output a loop over its
// elements with every operand advancing or fixed. The reference walked each
// element's multi-index: Swin-T's attention masks, [64, 49, 49] each, took 1.1 ms a Where.
#include <cstring>

#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "ops/broadcast.h"

namespace minfer::cpu {

namespace {

// One output row of n elements of kBytes bytes; each operand's step 0 (fixed) or 1.
template <size_t kBytes>
void select_row(const bool* c, int64_t sc, const char* x, int64_t sx, const char* z, int64_t sz,
                char* y, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    const char* src = c[j * sc] ? x + j * sx * int64_t(kBytes) : z + j * sz * int64_t(kBytes);
    std::memcpy(y + j * int64_t(kBytes), src, kBytes);
  }
}

class WhereKernel final : public Kernel {
 public:
  void prepare(PrepareContext& ctx) override {
    CollapsedBroadcast c = collapse_broadcast(
        {ctx.inputs[0].shape, ctx.inputs[1].shape, ctx.inputs[2].shape}, ctx.outputs[0].shape);
    dims_ = std::move(c.dims);
    for (size_t k = 0; k < 3; ++k) strides_[k] = std::move(c.strides[k]);
    bytes_ = dtype_size(ctx.inputs[1].dtype);
  }

  void run(RunContext& ctx) const override {
    const bool* c = ctx.inputs[0]->data<bool>();
    const char* x = static_cast<const char*>(ctx.inputs[1]->raw());
    const char* z = static_cast<const char*>(ctx.inputs[2]->raw());
    char* y = static_cast<char*>(ctx.outputs[0]->raw());
    const int64_t total = ctx.outputs[0]->numel(), inner = dims_.back();
    if (total == 0) return;
    const size_t rank = dims_.size();
    const int64_t rows = total / inner;
    parallel_for(threads_for(total, ctx.threads), rows, [&](int64_t row) {
      int64_t off[3] = {0, 0, 0};
      for (int64_t d = int64_t(rank) - 2, rest = row; d >= 0; --d) {
        const int64_t idx = rest % dims_[size_t(d)];
        rest /= dims_[size_t(d)];
        for (size_t k = 0; k < 3; ++k) off[k] += idx * strides_[k][size_t(d)];
      }
      const int64_t sc = strides_[0].back(), sx = strides_[1].back(), sz = strides_[2].back();
      const int64_t es = int64_t(bytes_);
      const bool* cr = c + off[0];
      const char *xr = x + off[1] * es, *zr = z + off[2] * es;
      char* yr = y + row * inner * es;
      switch (bytes_) {
        case 1:
          return select_row<1>(cr, sc, xr, sx, zr, sz, yr, inner);
        case 2:
          return select_row<2>(cr, sc, xr, sx, zr, sz, yr, inner);
        case 4:
          return select_row<4>(cr, sc, xr, sx, zr, sz, yr, inner);
        default:
          return select_row<8>(cr, sc, xr, sx, zr, sz, yr, inner);
      }
    });
  }

 private:
  std::vector<int64_t> dims_;        // collapsed output dims
  std::vector<int64_t> strides_[3];  // the condition's, X's and Y's element strides on them
  size_t bytes_ = 4;
};

// Static shapes; X's and Y's elements of 1, 2, 4 or 8 bytes.
bool supports_where(const PrepareContext& ctx) {
  if (ctx.inputs.size() != 3 || ctx.outputs.size() != 1 || !ctx.outputs[0].shape.is_static())
    return false;
  for (const TensorInfo& t : ctx.inputs)
    if (!t.present || !t.shape.is_static()) return false;
  const size_t es = dtype_size(ctx.inputs[1].dtype);
  return ctx.inputs[0].dtype == DType::boolean && ctx.inputs[1].dtype == ctx.inputs[2].dtype &&
         (es == 1 || es == 2 || es == 4 || es == 8);
}

}  // namespace

void register_where_kernel(OpRegistry& r) {
  r.register_kernel({"", "Where", Device::Type::CPU, {}, "cpu-where", supports_where, [] {
                       return std::make_unique<WhereKernel>();
                     }});
}

}  // namespace minfer::cpu
