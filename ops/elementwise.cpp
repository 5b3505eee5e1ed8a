// Elementwise ops: Relu, Sigmoid, Exp, Clip (unary), Add, Sub, Mul, Div (numpy broadcasting)
// and the variadic Max, Min, Sum, Mean.
#include <cmath>
#include <limits>

#include "ops/broadcast.h"
#include "ops/builtin_ops.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

// The dtypes of the arithmetic ops: f32, the integer types of shape subgraphs, and 8-bit.
const std::vector<DType> kNumericTypes{DType::f32, DType::i32, DType::i64, DType::i8, DType::u8};

// Calls f(T{}) with the C++ type T of `t` (one of kNumericTypes).
template <typename F>
auto dispatch_numeric(const Node& node, DType t, F&& f) {
  return dispatch_types<float, int32_t, int64_t, int8_t, uint8_t>(node, t, std::forward<F>(f));
}

// ---- unary -------------------------------------------------------------------------------

void infer_same_as_input(InferContext& ctx) {
  ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0));
}

std::vector<Tensor> relu_reference(const Node& node, const std::vector<Tensor>& in) {
  return dispatch_numeric(node, in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    Tensor y(in[0].dtype(), in[0].shape());
    const T* x = in[0].data<T>();
    T* p = y.data<T>();
    for (int64_t i = 0; i < y.numel(); ++i) p[i] = x[i] > T(0) ? x[i] : T(0);
    return std::vector<Tensor>{y};
  });
}

std::vector<Tensor> sigmoid_reference(const Node&, const std::vector<Tensor>& in) {
  Tensor y(DType::f32, in[0].shape());
  const float* x = in[0].data<float>();
  float* p = y.data<float>();
  for (int64_t i = 0; i < y.numel(); ++i)
    p[i] = static_cast<float>(1.0 / (1.0 + std::exp(-double(x[i]))));
  return {y};
}

std::vector<Tensor> exp_reference(const Node&, const std::vector<Tensor>& in) {
  Tensor y(DType::f32, in[0].shape());
  const float* x = in[0].data<float>();
  float* p = y.data<float>();
  for (int64_t i = 0; i < y.numel(); ++i) p[i] = static_cast<float>(std::exp(double(x[i])));
  return {y};
}

// Clip takes its bounds from optional scalar inputs 1 and 2 (opset >= 11) or from the float
// attributes min/max (opset < 11); an absent bound does not clip.
void infer_clip(InferContext& ctx) {
  require_dtype(ctx, 0, kNumericTypes);
  for (size_t i = 1; i < 3; ++i) {
    if (!ctx.has_input(i)) continue;
    require_same_dtype(ctx, 0, i);
    const Shape& s = ctx.input_shape(i);
    bool scalar = s.rank() == 0 || (s.rank() == 1 && s[0] == 1);
    if (!scalar)
      ctx.fail(std::string(i == 1 ? "min" : "max") + " input has shape " + s.to_string() +
               "; expected a scalar");
  }
  infer_same_as_input(ctx);
}

std::vector<Tensor> clip_reference(const Node& node, const std::vector<Tensor>& in) {
  return dispatch_numeric(node, in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
    if (in[1].defined())
      lo = in[1].data<T>()[0];
    else if (node.attrs.has("min"))
      lo = static_cast<T>(node.attrs.get_float("min", 0.f));
    if (in[2].defined())
      hi = in[2].data<T>()[0];
    else if (node.attrs.has("max"))
      hi = static_cast<T>(node.attrs.get_float("max", 0.f));
    Tensor y(in[0].dtype(), in[0].shape());
    const T* x = in[0].data<T>();
    T* p = y.data<T>();
    // min(max(x, lo), hi), as numpy.clip: when lo > hi everything becomes hi.
    for (int64_t i = 0; i < y.numel(); ++i) {
      T v = x[i] < lo ? lo : x[i];
      p[i] = v > hi ? hi : v;
    }
    return std::vector<Tensor>{y};
  });
}

// ---- binary ------------------------------------------------------------------------------

enum class BinaryOp { Add, Sub, Mul, Div };

// Integer results wrap around (two's complement, as numpy and ONNX Runtime) instead of
// overflowing, which would be undefined behaviour on signed types: compute unsigned.
template <typename T, typename F>
T wrapping(T x, T z, F f) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(f(static_cast<U>(x), static_cast<U>(z))));
  } else {
    return f(x, z);
  }
}

void infer_binary(InferContext& ctx) {
  require_dtype(ctx, 0, kNumericTypes);
  require_same_dtype(ctx, 0, 1);
  ctx.set_output(0, ctx.input_dtype(0),
                 broadcast_shapes(ctx.node(), {ctx.input_shape(0), ctx.input_shape(1)}));
}

template <BinaryOp kOp>
std::vector<Tensor> binary_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor &a = in[0], &b = in[1];
  Shape out = broadcast_shapes(node, {a.shape(), b.shape()});
  std::vector<std::vector<int64_t>> st{broadcast_strides(a.shape(), out),
                                       broadcast_strides(b.shape(), out)};
  return dispatch_numeric(node, a.dtype(), [&](auto zero) {
    using T = decltype(zero);
    Tensor y(a.dtype(), out);
    const T *ap = a.data<T>(), *bp = b.data<T>();
    T* yp = y.data<T>();
    for_each_broadcast(out, st, [&](int64_t i, const std::vector<int64_t>& off) {
      T x = ap[off[0]], z = bp[off[1]];
      if constexpr (kOp == BinaryOp::Add)
        yp[i] = wrapping<T>(x, z, [](auto p, auto q) { return p + q; });
      if constexpr (kOp == BinaryOp::Sub)
        yp[i] = wrapping<T>(x, z, [](auto p, auto q) { return p - q; });
      if constexpr (kOp == BinaryOp::Mul)
        yp[i] = wrapping<T>(x, z, [](auto p, auto q) { return p * q; });
      if constexpr (kOp == BinaryOp::Div) {
        if constexpr (std::is_integral_v<T>) {
          // Integer division truncates toward zero (as ONNX Runtime); x/0 is an input error.
          if (z == 0)
            throw Error(ErrorCode::InvalidArgument, node.describe() + ": integer division by zero");
          if (std::is_signed_v<T> && x == std::numeric_limits<T>::min() && z == T(-1))
            yp[i] = x;  // wraps
          else
            yp[i] = static_cast<T>(x / z);
        } else {
          yp[i] = x / z;
        }
      }
    });
    return std::vector<Tensor>{y};
  });
}

// ---- variadic: Max, Min -------------------------------------------------------------------
// Opset 8 added broadcasting and opset 12 the integer types; both are accepted at any opset
// (a superset of the older forms).

void infer_variadic(InferContext& ctx) {
  require_dtype(ctx, 0, kNumericTypes);
  std::vector<Shape> shapes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    require_same_dtype(ctx, 0, i);
    shapes.push_back(ctx.input_shape(i));
  }
  ctx.set_output(0, ctx.input_dtype(0), broadcast_shapes(ctx.node(), shapes));
}

template <bool kMax>
std::vector<Tensor> variadic_reference(const Node& node, const std::vector<Tensor>& in) {
  std::vector<Shape> shapes;
  for (const Tensor& t : in) shapes.push_back(t.shape());
  Shape out = broadcast_shapes(node, shapes);
  std::vector<std::vector<int64_t>> st;
  for (const Tensor& t : in) st.push_back(broadcast_strides(t.shape(), out));
  return dispatch_numeric(node, in[0].dtype(), [&](auto zero) {
    using T = decltype(zero);
    Tensor y(in[0].dtype(), out);
    std::vector<const T*> ptrs;
    for (const Tensor& t : in) ptrs.push_back(t.data<T>());
    T* yp = y.data<T>();
    for_each_broadcast(out, st, [&](int64_t i, const std::vector<int64_t>& off) {
      T m = ptrs[0][off[0]];
      for (size_t k = 1; k < ptrs.size(); ++k) {
        const T v = ptrs[k][off[k]];
        // A NaN anywhere gives NaN, as numpy.maximum/minimum: once m is NaN it stays, and a
        // NaN v is taken because no comparison with it holds.
        if constexpr (std::is_floating_point_v<T>)
          if (std::isnan(m)) break;
        if (kMax ? !(v <= m) : !(v >= m)) m = v;
      }
      yp[i] = m;
    });
    return std::vector<Tensor>{y};
  });
}

// ---- variadic: Sum, Mean (float only, as in ONNX) -------------------------------------------
// DenseNet/Inception-style exports add branches with one Sum instead of a chain of Adds.

void infer_variadic_float(InferContext& ctx) {
  require_dtype(ctx, 0, {DType::f32});
  infer_variadic(ctx);
}

template <bool kMean>
std::vector<Tensor> sum_reference(const Node& node, const std::vector<Tensor>& in) {
  std::vector<Shape> shapes;
  for (const Tensor& t : in) shapes.push_back(t.shape());
  Shape out = broadcast_shapes(node, shapes);
  std::vector<std::vector<int64_t>> st;
  for (const Tensor& t : in) st.push_back(broadcast_strides(t.shape(), out));
  Tensor y(DType::f32, out);
  float* yp = y.data<float>();
  for_each_broadcast(out, st, [&](int64_t i, const std::vector<int64_t>& off) {
    double acc = 0;  // rounded once, at the end
    for (size_t k = 0; k < in.size(); ++k) acc += in[k].data<float>()[off[k]];
    yp[i] = static_cast<float>(kMean ? acc / double(in.size()) : acc);
  });
  return {y};
}

void add_variadic(OpRegistry& r, const char* name, const char* doc, ReferenceFn ref,
                  InferFn infer = infer_variadic) {
  OpSchema s;
  s.name = name;
  s.doc = doc;
  s.max_inputs = 1 << 20;
  s.infer = std::move(infer);
  s.reference = std::move(ref);
  add_builtin_op(r, std::move(s));
}

void add_unary(OpRegistry& r, const char* name, const char* doc, std::vector<DType> types,
               ReferenceFn ref) {
  OpSchema s;
  s.name = name;
  s.doc = doc;
  s.infer = [types](InferContext& ctx) {
    require_dtype(ctx, 0, types);
    infer_same_as_input(ctx);
  };
  s.reference = std::move(ref);
  add_builtin_op(r, std::move(s));
}

void add_binary(OpRegistry& r, const char* name, const char* doc, ReferenceFn ref) {
  OpSchema s;
  s.name = name;
  s.doc = doc;
  s.min_inputs = s.max_inputs = 2;
  s.infer = infer_binary;
  s.reference = std::move(ref);
  add_builtin_op(r, std::move(s));
}

}  // namespace

void register_elementwise_ops(OpRegistry& r) {
  add_unary(r, "Relu", "max(x, 0)", kNumericTypes, relu_reference);
  add_unary(r, "Sigmoid", "1 / (1 + exp(-x))", {DType::f32}, sigmoid_reference);
  add_unary(r, "Exp", "e^x", {DType::f32}, exp_reference);

  OpSchema clip;
  clip.name = "Clip";
  clip.doc = "clamp to [min, max] (bounds as inputs, or attributes before opset 11)";
  clip.max_inputs = 3;
  clip.attributes = {"min", "max"};
  clip.infer = infer_clip;
  clip.reference = clip_reference;
  add_builtin_op(r, std::move(clip));

  add_binary(r, "Add", "a + b with numpy broadcasting", binary_reference<BinaryOp::Add>);
  add_binary(r, "Sub", "a - b with numpy broadcasting", binary_reference<BinaryOp::Sub>);
  add_binary(r, "Mul", "a * b with numpy broadcasting", binary_reference<BinaryOp::Mul>);
  add_binary(r, "Div", "a / b with numpy broadcasting (integers truncate)",
             binary_reference<BinaryOp::Div>);
  add_variadic(r, "Max", "elementwise max of 1 or more inputs with numpy broadcasting",
               variadic_reference<true>);
  add_variadic(r, "Min", "elementwise min of 1 or more inputs with numpy broadcasting",
               variadic_reference<false>);
  add_variadic(r, "Sum", "elementwise sum of 1 or more inputs with numpy broadcasting",
               sum_reference<false>, infer_variadic_float);
  add_variadic(r, "Mean", "elementwise mean of 1 or more inputs with numpy broadcasting",
               sum_reference<true>, infer_variadic_float);
}

}  // namespace minfer
