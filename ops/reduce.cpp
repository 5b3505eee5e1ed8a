// ReduceMax, ReduceMin, ReduceSum, ReduceMean: schemas and reference kernels.
//
// The axes come from the `axes` attribute (ReduceSum before opset 13, the others before 18) or
// from the optional int64 input 1 (later opsets, which also add noop_with_empty_axes). Which
// form a node uses is visible on the node itself, so the schema needs no opset: an axes
// attribute, an axes input, or neither (reduce over all dims, unless noop_with_empty_axes).
#include <cmath>
#include <limits>

#include "ops/broadcast.h"
#include "ops/builtin_ops.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

enum class Reduce { Max, Min, Sum, Mean };

const std::vector<DType> kMinMaxTypes{DType::f32, DType::i32, DType::i64,
                                      DType::i8,  DType::u8,  DType::boolean};
const std::vector<DType> kSumTypes{DType::f32, DType::i32, DType::i64};

// Calls f(T{}) with the C++ element type of `t` (bool only for Max and Min).
template <Reduce kOp, typename F>
void dispatch(const Node& node, DType t, F&& f) {
  if constexpr (kOp == Reduce::Max || kOp == Reduce::Min)
    dispatch_types<float, int32_t, int64_t, int8_t, uint8_t, bool>(node, t, std::forward<F>(f));
  else
    dispatch_types<float, int32_t, int64_t, int8_t, uint8_t>(node, t, std::forward<F>(f));
}

// Which dims of a rank-`rank` input are reduced; all false = the input passes through.
using ReducedDims = std::vector<bool>;

bool noop_with_empty_axes(const Node& node) {
  return node.attrs.get_int("noop_with_empty_axes", 0) != 0;
}

// The reduced dims for the given axes (nullptr: no axes were given at all).
ReducedDims reduced_dims(const Node& node, size_t rank, const std::vector<int64_t>* axes) {
  if (!axes || axes->empty()) return ReducedDims(rank, !noop_with_empty_axes(node));
  ReducedDims r(rank, false);
  for (int64_t a : *axes) {
    size_t d = normalize_axis(node, a, static_cast<int64_t>(rank), "axis");
    if (r[d]) op_fail(node, "axes " + ints_to_string(*axes) + " has a duplicate");
    r[d] = true;
  }
  return r;
}

Shape reduced_shape(const Node& node, const Shape& x, const ReducedDims& r) {
  const bool keep = node.attrs.get_int("keepdims", 1) != 0;
  Shape out(std::vector<int64_t>{});
  for (size_t d = 0; d < x.rank(); ++d) {
    if (!r[d]) {
      out.dims().push_back(x[d]);
      set_dim_symbol(out, out.rank() - 1, dim_symbol(x, d));
    } else if (keep) {
      out.dims().push_back(1);
    }
  }
  return out;
}

void check_axes_input(InferContext& ctx) {
  const Node& node = ctx.node();
  if (node.attrs.has("axes")) ctx.fail("has both an axes attribute and an axes input; use one");
  require_dtype(ctx, 1, {DType::i64, DType::i32});
  const Shape& s = ctx.input_shape(1);
  if (s.rank() != 1) ctx.fail("axes input has shape " + s.to_string() + "; expected 1-D");
}

// The output shape when the axes input is known only at run time: its length (if known)
// gives the rank, but not which dims go.
Shape shape_for_unknown_axes(InferContext& ctx) {
  const Node& node = ctx.node();
  const Shape& x = ctx.input_shape(0);
  const int64_t n = ctx.input_shape(1)[0];
  if (n == 0) return reduced_shape(node, x, reduced_dims(node, x.rank(), nullptr));
  if (node.attrs.get_int("keepdims", 1) != 0)
    return Shape(std::vector<int64_t>(x.rank(), Shape::kDynamic));
  if (n < 0)
    ctx.fail(
        "axes input is not a constant and its length is unknown (with keepdims=0 the "
        "output rank depends on it)");
  if (n > static_cast<int64_t>(x.rank()))
    ctx.fail("axes input has " + std::to_string(n) + " values, the input has rank " +
             std::to_string(x.rank()));
  return Shape(std::vector<int64_t>(x.rank() - n, Shape::kDynamic));
}

InferFn infer_reduce(std::vector<DType> types) {
  return [types](InferContext& ctx) {
    require_dtype(ctx, 0, types);
    const Node& node = ctx.node();
    const Shape& x = ctx.input_shape(0);
    std::vector<int64_t> axes;
    bool given = false;
    if (ctx.has_input(1)) {
      check_axes_input(ctx);
      const Tensor* t = ctx.input_constant(1);
      if (!t) {
        ctx.set_output(0, ctx.input_dtype(0), shape_for_unknown_axes(ctx));
        return;
      }
      axes = read_int_tensor(node, *t, "axes input");
      given = true;
    } else if (node.attrs.has("axes")) {
      axes = node.attrs.get_ints("axes");
      given = true;
    }
    ReducedDims r = reduced_dims(node, x.rank(), given ? &axes : nullptr);
    ctx.set_output(0, ctx.input_dtype(0), reduced_shape(node, x, r));
  };
}

// The accumulator of one output element: double for floats, int64 for integers (a sum wraps
// like the output type when stored), bool for bools.
template <typename T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double,
                               std::conditional_t<std::is_same_v<T, bool>, bool, int64_t>>;

template <Reduce kOp, typename T>
Acc<T> initial() {
  // The identity of each reduction, which is also its result over an empty axis.
  constexpr bool kFloat = std::is_floating_point_v<T>;
  if constexpr (kOp == Reduce::Max)
    return kFloat ? Acc<T>(-INFINITY) : Acc<T>(std::numeric_limits<T>::lowest());
  else if constexpr (kOp == Reduce::Min)
    return kFloat ? Acc<T>(INFINITY) : Acc<T>(std::numeric_limits<T>::max());
  else
    return Acc<T>(0);
}

template <Reduce kOp, typename A>
A combine(A acc, A v) {
  if constexpr (kOp == Reduce::Max || kOp == Reduce::Min) {
    // NaN propagates, as numpy's max/min.
    if constexpr (std::is_floating_point_v<A>)
      if (std::isnan(acc) || std::isnan(v)) return std::isnan(acc) ? acc : v;
    return kOp == Reduce::Max ? (v > acc ? v : acc) : (v < acc ? v : acc);
  } else if constexpr (std::is_integral_v<A>) {
    // Integer sums wrap around (two's complement) instead of overflowing.
    return static_cast<A>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v));
  } else {
    return acc + v;
  }
}

template <Reduce kOp>
std::vector<Tensor> reduce_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const Shape& xs = x.shape();
  ReducedDims r;
  if (in[1].defined()) {
    std::vector<int64_t> axes = read_int_tensor(node, in[1], "axes input");
    r = reduced_dims(node, xs.rank(), &axes);
  } else if (node.attrs.has("axes")) {
    std::vector<int64_t> axes = node.attrs.get_ints("axes");
    r = reduced_dims(node, xs.rank(), &axes);
  } else {
    r = reduced_dims(node, xs.rank(), nullptr);
  }
  // Walk the input once, accumulating into the output seen with keepdims (stride 0 on the
  // reduced dims); the result then takes the requested shape.
  Shape kept = xs;
  int64_t count = 1;  // input elements per output element
  for (size_t d = 0; d < xs.rank(); ++d)
    if (r[d]) {
      kept[d] = 1;
      count *= xs[d];
    }
  kept.symbols.clear();
  std::vector<int64_t> out_st = broadcast_strides(kept, xs);
  Tensor y(x.dtype(), reduced_shape(node, Shape(xs.dims()), r));
  dispatch<kOp>(node, x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    using A = Acc<T>;
    if constexpr (kOp == Reduce::Mean && std::is_integral_v<T>) {
      if (count == 0)
        throw Error(ErrorCode::InvalidArgument,
                    node.describe() + ": the mean over an empty axis is undefined for " +
                        dtype_name(x.dtype()));
    }
    std::vector<A> acc(y.numel(), initial<kOp, T>());
    const T* xp = x.data<T>();
    for_each_broadcast(xs, {out_st}, [&](int64_t i, const std::vector<int64_t>& off) {
      acc[off[0]] = combine<kOp, A>(acc[off[0]], static_cast<A>(xp[i]));
    });
    T* yp = y.data<T>();
    for (int64_t i = 0; i < y.numel(); ++i) {
      A v = acc[i];
      if constexpr (kOp == Reduce::Mean) {
        if constexpr (std::is_floating_point_v<T>)
          v = v / static_cast<double>(count);  // 0/0 = NaN over an empty axis
        else
          v = v / count;  // truncates toward zero, as numpy's integer mean
      }
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
        yp[i] = static_cast<T>(static_cast<std::make_unsigned_t<T>>(v));  // sums wrap
      else
        yp[i] = static_cast<T>(v);
    }
  });
  return {y};
}

void add_reduce(OpRegistry& reg, const char* name, const char* doc, std::vector<DType> types,
                ReferenceFn ref) {
  OpSchema s;
  s.name = name;
  s.doc = doc;
  s.max_inputs = 2;
  s.attributes = {"axes", "keepdims", "noop_with_empty_axes"};
  s.infer = infer_reduce(std::move(types));
  s.reference = std::move(ref);
  add_builtin_op(reg, std::move(s));
}

}  // namespace

void register_reduce_ops(OpRegistry& r) {
  add_reduce(r, "ReduceMax", "max over axes (attribute or input)", kMinMaxTypes,
             reduce_reference<Reduce::Max>);
  add_reduce(r, "ReduceMin", "min over axes (attribute or input)", kMinMaxTypes,
             reduce_reference<Reduce::Min>);
  add_reduce(r, "ReduceSum", "sum over axes (attribute or input)", kSumTypes,
             reduce_reference<Reduce::Sum>);
  add_reduce(r, "ReduceMean", "mean over axes (attribute or input)", kSumTypes,
             reduce_reference<Reduce::Mean>);
}

}  // namespace minfer
