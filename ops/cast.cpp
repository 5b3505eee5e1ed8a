// Cast (opsets 6 to 25) and CastLike (opset 15+) between the element types minfer has:
// FLOAT, FLOAT16, INT8, UINT8, INT32, INT64, BOOL. Float -> int truncates toward zero; float
// -> half rounds to nearest even. Targets minfer has no tensors for (DOUBLE, float8, ...) are
// declined as Unsupported; `saturate` and `round_mode` only change float8 casts, so they are
// accepted and have nothing to do here.
#include <limits>
#include <type_traits>

#include "ops/builtin_ops.h"
#include "ops/op_util.h"
#include "runtime/half.h"
#include "runtime/tensor_pb.h"

namespace minfer {

namespace {

// ---- element types ------------------------------------------------------------------------

bool is_float8(int64_t t) { return (t >= 17 && t <= 20) || t == 24; }

// The DType of Cast's `to` attribute, or an error naming the node and the type.
DType cast_target(const Node& node) {
  if (!node.attrs.has("to")) op_fail(node, "required attribute 'to' is missing");
  const int64_t to = node.attrs.get_int("to", 0);
  switch (to) {
    case 1:
      return DType::f32;
    case 2:
      return DType::u8;
    case 3:
      return DType::i8;
    case 6:
      return DType::i32;
    case 7:
      return DType::i64;
    case 9:
      return DType::boolean;
    case 10:
      return DType::f16;
    default:
      break;
  }
  // onnx_type_name() says "type N" for a value that names no ONNX element type.
  const std::string onnx_name = detail::onnx_type_name(static_cast<int32_t>(to));
  if (to <= 0 || to > std::numeric_limits<int32_t>::max() ||
      onnx_name == "type " + std::to_string(to))
    op_fail(node, "attribute 'to' = " + std::to_string(to) + " is not an ONNX element type");
  const std::string name = onnx_name + " (to = " + std::to_string(to) + ")";
  if (is_float8(to))
    throw Error(ErrorCode::Unsupported,
                node.describe() + ": casting to " + name +
                    " is not supported: minfer has no float8 tensors (the 'saturate' and "
                    "'round_mode' attributes only apply to float8 targets)");
  throw Error(ErrorCode::Unsupported,
              node.describe() + ": casting to " + name +
                  " is not supported (minfer has FLOAT, FLOAT16, INT8, UINT8, INT32, INT64, BOOL)");
}

// ---- element conversions ------------------------------------------------------------------

// Float to integer truncates toward zero. Values the target cannot hold are undefined in
// ONNX; we give what ONNX Runtime and numpy give on x86: NaN and values outside int32 (int64
// for INT64) become the most negative int32 (int64), and narrower targets keep the low bits.
template <typename I>
I float_to_int(double v) {
  if constexpr (sizeof(I) == 8) {
    constexpr double lim = 9223372036854775808.0;  // 2^63
    return v >= -lim && v < lim ? static_cast<I>(v) : std::numeric_limits<I>::min();
  } else {
    const int32_t t = v > -2147483649.0 && v < 2147483648.0 ? static_cast<int32_t>(v)
                                                            : std::numeric_limits<int32_t>::min();
    return static_cast<I>(t);  // modular for int8/uint8
  }
}

template <typename D>
D from_float(float v) {
  if constexpr (std::is_same_v<D, Half>)
    return Half{float_to_half(v)};
  else if constexpr (std::is_same_v<D, bool>)
    return v != 0.f;  // NaN is true
  else if constexpr (std::is_floating_point_v<D>)
    return v;
  else
    return float_to_int<D>(v);
}

template <typename D>
D from_int(int64_t v) {
  if constexpr (std::is_same_v<D, Half>)
    return Half{float_to_half(static_cast<float>(v))};  // exact below 2^24; beyond, infinity
  else if constexpr (std::is_same_v<D, bool>)
    return v != 0;
  else
    return static_cast<D>(v);  // integers wrap (modular), floats round to nearest
}

// Calls f(T{}) with the storage type of `t` (Half for f16).
template <typename F>
auto dispatch_all(const Node& node, DType t, F&& f) {
  return dispatch_types<float, Half, int8_t, uint8_t, int32_t, int64_t, bool>(node, t,
                                                                              std::forward<F>(f));
}

Tensor cast_tensor(const Node& node, const Tensor& x, DType to) {
  if (x.dtype() == to) return x.clone();
  Tensor y(to, x.shape());
  dispatch_all(node, x.dtype(), [&](auto s) {
    using S = decltype(s);
    dispatch_all(node, to, [&](auto d) {
      using D = decltype(d);
      const S* src = static_cast<const S*>(x.raw());
      D* dst = static_cast<D*>(y.raw());
      for (int64_t i = 0; i < x.numel(); ++i) {
        if constexpr (std::is_same_v<S, Half>)
          dst[i] = from_float<D>(half_to_float(src[i].bits));
        else if constexpr (std::is_same_v<S, bool>)  // any nonzero byte is true
          dst[i] = from_int<D>(reinterpret_cast<const uint8_t*>(src)[i] != 0);
        else if constexpr (std::is_floating_point_v<S>)
          dst[i] = from_float<D>(src[i]);
        else
          dst[i] = from_int<D>(static_cast<int64_t>(src[i]));
      }
    });
  });
  return y;
}

static_assert(sizeof(bool) == 1, "BOOL tensors hold 1-byte elements");

// ---- schemas ------------------------------------------------------------------------------

void infer_cast(InferContext& ctx) {
  ctx.set_output(0, cast_target(ctx.node()), ctx.input_shape(0));
}

void infer_cast_like(InferContext& ctx) {
  ctx.set_output(0, ctx.input_dtype(1), ctx.input_shape(0));
}

}  // namespace

void register_cast_ops(OpRegistry& r) {
  OpSchema cast;
  cast.name = "Cast";
  cast.doc = "converts elements to the type 'to' (float->int truncates, ->float16 rounds even)";
  cast.attributes = {"to", "saturate", "round_mode"};
  cast.infer = infer_cast;
  cast.reference = [](const Node& node, const std::vector<Tensor>& in) {
    return std::vector<Tensor>{cast_tensor(node, in[0], cast_target(node))};
  };
  add_builtin_op(r, std::move(cast));

  OpSchema like;
  like.name = "CastLike";
  like.doc = "Cast to the element type of the second input";
  like.min_inputs = like.max_inputs = 2;
  like.attributes = {"saturate", "round_mode"};
  like.infer = infer_cast_like;
  like.reference = [](const Node& node, const std::vector<Tensor>& in) {
    return std::vector<Tensor>{cast_tensor(node, in[0], in[1].dtype())};
  };
  add_builtin_op(r, std::move(like));
}

}  // namespace minfer
