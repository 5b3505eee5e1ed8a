// Mod (numpy broadcasting; fmod=0: the sign of the divisor, as Python's %, integers only;
// fmod=1: the sign of the dividend, as C's fmod) and Not (bool). Swin's exports compute
// window shifts and masks with them.
#include <cmath>

#include "ops/broadcast.h"
#include "ops/builtin_ops.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

const std::vector<DType> kModTypes{DType::f32, DType::i32, DType::i64, DType::i8, DType::u8};

bool use_fmod(const Node& node) {
  const int64_t f = node.attrs.get_int("fmod", 0);
  op_require(node, f == 0 || f == 1, "fmod must be 0 or 1, got " + std::to_string(f));
  return f == 1;
}

void infer_mod(InferContext& ctx) {
  const bool fmod = use_fmod(ctx.node());
  require_dtype(ctx, 0, kModTypes);
  require_same_dtype(ctx, 0, 1);
  if (ctx.input_dtype(0) == DType::f32 && !fmod)
    ctx.fail("fmod=0 is for integers; a float Mod needs fmod=1");
  ctx.set_output(0, ctx.input_dtype(0),
                 broadcast_shapes(ctx.node(), {ctx.input_shape(0), ctx.input_shape(1)}));
}

template <typename T>
T mod_of(const Node& node, T a, T b, bool fmod) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::fmod(a, b);
  } else {
    op_require(node, b != 0, "integer division by zero");
    if constexpr (std::is_signed_v<T>)
      if (b == T(-1)) return T(0);  // lowest() % -1 overflows
    T r = static_cast<T>(a % b);
    if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);  // Python's %
    return r;
  }
}

std::vector<Tensor> mod_reference(const Node& node, const std::vector<Tensor>& in) {
  const bool fmod = use_fmod(node);
  const Shape out = broadcast_shapes(node, {in[0].shape(), in[1].shape()});
  const std::vector<std::vector<int64_t>> st{broadcast_strides(in[0].shape(), out),
                                             broadcast_strides(in[1].shape(), out)};
  Tensor y(in[0].dtype(), out);
  dispatch_types<float, int32_t, int64_t, int8_t, uint8_t>(node, in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* a = in[0].data<T>();
    const T* b = in[1].data<T>();
    T* p = y.data<T>();
    for_each_broadcast(out, st, [&](int64_t i, const std::vector<int64_t>& off) {
      p[i] = mod_of<T>(node, a[off[0]], b[off[1]], fmod);
    });
    return 0;
  });
  return {y};
}

}  // namespace

void register_mod_not_ops(OpRegistry& r) {
  OpSchema mod;
  mod.name = "Mod";
  mod.doc = "remainder with numpy broadcasting (fmod=0: divisor's sign; 1: dividend's)";
  mod.min_inputs = mod.max_inputs = 2;
  mod.attributes = {"fmod"};
  mod.infer = infer_mod;
  mod.reference = mod_reference;
  add_builtin_op(r, std::move(mod));

  OpSchema no;
  no.name = "Not";
  no.doc = "logical not of a bool tensor";
  no.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, {DType::boolean});
    ctx.set_output(0, DType::boolean, ctx.input_shape(0));
  };
  no.reference = [](const Node&, const std::vector<Tensor>& in) {
    Tensor y(DType::boolean, in[0].shape());
    const bool* x = in[0].data<bool>();
    bool* p = y.data<bool>();
    for (int64_t i = 0; i < y.numel(); ++i) p[i] = !x[i];
    return std::vector<Tensor>{y};
  };
  add_builtin_op(r, std::move(no));
}

}  // namespace minfer
