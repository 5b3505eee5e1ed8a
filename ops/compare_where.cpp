// Less, Greater, Equal (numpy broadcasting, bool output) and Where (select with 3-way
// broadcasting): schemas and reference kernels.
#include <cstring>

#include "ops/broadcast.h"
#include "ops/builtin_ops.h"
#include "ops/op_util.h"
#include "runtime/half.h"

namespace minfer {

namespace {

// The dtypes Less and Greater compare; Equal also compares bools.
const std::vector<DType> kOrderedTypes{DType::f32, DType::f16, DType::i32,
                                       DType::i64, DType::i8,  DType::u8};
const std::vector<DType> kEqualTypes{DType::f32, DType::f16, DType::i32,    DType::i64,
                                     DType::i8,  DType::u8,  DType::boolean};

// float16 elements compare without converting: NaN is unordered; otherwise the magnitude
// bits with the sign applied order like the values, and +0 equals -0.
bool is_nan(Half h) { return (h.bits & 0x7fff) > 0x7c00; }
int32_t order_key(Half h) {
  const int32_t magnitude = h.bits & 0x7fff;
  return h.bits & 0x8000 ? -magnitude : magnitude;
}
bool operator<(Half a, Half b) { return !is_nan(a) && !is_nan(b) && order_key(a) < order_key(b); }
bool operator>(Half a, Half b) { return b < a; }
bool operator==(Half a, Half b) { return !is_nan(a) && !is_nan(b) && order_key(a) == order_key(b); }

// ---- Less, Greater, Equal ----------------------------------------------------------------

enum class Compare { Less, Greater, Equal };

InferFn infer_compare(std::vector<DType> types) {
  return [types](InferContext& ctx) {
    require_dtype(ctx, 0, types);
    require_same_dtype(ctx, 0, 1);
    ctx.set_output(0, DType::boolean,
                   broadcast_shapes(ctx.node(), {ctx.input_shape(0), ctx.input_shape(1)}));
  };
}

template <Compare kOp>
std::vector<Tensor> compare_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor &a = in[0], &b = in[1];
  Shape out = broadcast_shapes(node, {a.shape(), b.shape()});
  std::vector<std::vector<int64_t>> st{broadcast_strides(a.shape(), out),
                                       broadcast_strides(b.shape(), out)};
  Tensor y(DType::boolean, out);
  bool* yp = y.data<bool>();
  auto compare = [&](auto zero) {
    using T = decltype(zero);
    const T* ap = a.data<T>();
    const T* bp = b.data<T>();
    // Any comparison with NaN is false, as in numpy.
    for_each_broadcast(out, st, [&](int64_t i, const std::vector<int64_t>& off) {
      const T x = ap[off[0]], z = bp[off[1]];
      if constexpr (kOp == Compare::Less) yp[i] = x < z;
      if constexpr (kOp == Compare::Greater) yp[i] = x > z;
      if constexpr (kOp == Compare::Equal) yp[i] = x == z;
    });
  };
  dispatch_types<float, Half, int32_t, int64_t, int8_t, uint8_t, bool>(node, a.dtype(), compare);
  return {y};
}

// ---- Where -------------------------------------------------------------------------------

void infer_where(InferContext& ctx) {
  require_dtype(ctx, 0, {DType::boolean});
  require_same_dtype(ctx, 1, 2);
  ctx.set_output(
      0, ctx.input_dtype(1),
      broadcast_shapes(ctx.node(), {ctx.input_shape(0), ctx.input_shape(1), ctx.input_shape(2)}));
}

// Copies bytes, so it serves every dtype.
std::vector<Tensor> where_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor &c = in[0], &x = in[1], &z = in[2];
  Shape out = broadcast_shapes(node, {c.shape(), x.shape(), z.shape()});
  std::vector<std::vector<int64_t>> st{broadcast_strides(c.shape(), out),
                                       broadcast_strides(x.shape(), out),
                                       broadcast_strides(z.shape(), out)};
  Tensor y(x.dtype(), out);
  const size_t es = dtype_size(x.dtype());
  const bool* cp = c.data<bool>();
  const char *xp = static_cast<const char*>(x.raw()), *zp = static_cast<const char*>(z.raw());
  char* yp = static_cast<char*>(y.raw());
  for_each_broadcast(out, st, [&](int64_t i, const std::vector<int64_t>& off) {
    const char* src = cp[off[0]] ? xp + off[1] * es : zp + off[2] * es;
    std::memcpy(yp + i * es, src, es);
  });
  return {y};
}

void add_compare(OpRegistry& r, const char* name, const char* doc, std::vector<DType> types,
                 ReferenceFn ref) {
  OpSchema s;
  s.name = name;
  s.doc = doc;
  s.min_inputs = s.max_inputs = 2;
  s.infer = infer_compare(std::move(types));
  s.reference = std::move(ref);
  add_builtin_op(r, std::move(s));
}

}  // namespace

void register_compare_where_ops(OpRegistry& r) {
  add_compare(r, "Less", "a < b with numpy broadcasting (bool)", kOrderedTypes,
              compare_reference<Compare::Less>);
  add_compare(r, "Greater", "a > b with numpy broadcasting (bool)", kOrderedTypes,
              compare_reference<Compare::Greater>);
  add_compare(r, "Equal", "a == b with numpy broadcasting (bool)", kEqualTypes,
              compare_reference<Compare::Equal>);

  OpSchema where;
  where.name = "Where";
  where.doc = "cond ? x : y elementwise, with numpy broadcasting of all three";
  where.min_inputs = where.max_inputs = 3;
  where.infer = infer_where;
  where.reference = where_reference;
  add_builtin_op(r, std::move(where));
}

}  // namespace minfer
