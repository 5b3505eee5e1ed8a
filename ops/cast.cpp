// Cast (opsets 6 to 25) and CastLike (opset 15+) between the element types minfer has:
// FLOAT, FLOAT16, INT8, UINT8, INT32, INT64, BOOL. Float -> int truncates toward zero; float
// -> half rounds to nearest even. Targets minfer has no tensors for (DOUBLE, float8, ...) are
// declined as Unsupported; `saturate` and `round_mode` only change float8 casts, so they are
// accepted and have nothing to do here.
#include <bit>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ops/builtin_ops.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

// ---- element types ------------------------------------------------------------------------

// TensorProto.DataType names, indexed by value, for messages.
constexpr const char* kOnnxTypeNames[] = {
    "UNDEFINED",      "FLOAT",    "UINT8",        "INT8",           "UINT16",
    "INT16",          "INT32",    "INT64",        "STRING",         "BOOL",
    "FLOAT16",        "DOUBLE",   "UINT32",       "UINT64",         "COMPLEX64",
    "COMPLEX128",     "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
    "FLOAT8E5M2FNUZ", "UINT4",    "INT4",         "FLOAT4E2M1",     "FLOAT8E8M0",
    "UINT2",          "INT2"};
constexpr int64_t kNumOnnxTypes = sizeof(kOnnxTypeNames) / sizeof(kOnnxTypeNames[0]);

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
  if (to <= 0 || to >= kNumOnnxTypes)
    op_fail(node, "attribute 'to' = " + std::to_string(to) + " is not an ONNX element type");
  const std::string name = std::string(kOnnxTypeNames[to]) + " (to = " + std::to_string(to) + ")";
  if (is_float8(to))
    throw Error(ErrorCode::Unsupported,
                node.describe() + ": casting to " + name +
                    " is not supported: minfer has no float8 tensors (the 'saturate' and "
                    "'round_mode' attributes only apply to float8 targets)");
  throw Error(ErrorCode::Unsupported,
              node.describe() + ": casting to " + name +
                  " is not supported (minfer has FLOAT, FLOAT16, INT8, UINT8, INT32, INT64, BOOL)");
}

// ---- IEEE half <-> float ------------------------------------------------------------------

// The bits of a float16 (FLOAT16 tensors hold the 16-bit pattern of each element).
struct Half {
  uint16_t bits;
};

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf, NaN
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

// Rounds to nearest, ties to even; overflow gives infinity, NaN stays NaN (quiet).
uint16_t float_to_half(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u)  // inf or NaN (keeps the top payload bits, forces quiet)
    return sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 | ((abs >> 13) & 0x3ff) : 0);
  if (abs >= 0x477ff000u) return sign | 0x7c00;   // >= 65520 rounds to infinity
  auto round_shift = [](uint32_t v, int shift) {  // v >> shift, rounded half to even
    uint32_t q = v >> shift, rem = v & ((1u << shift) - 1), half = 1u << (shift - 1);
    return q + (rem > half || (rem == half && (q & 1)));
  };
  if (abs >= 0x38800000u)  // a normal half: rebias the exponent (127 - 15), round 13 bits
    return sign | static_cast<uint16_t>(round_shift(abs - 0x38000000u, 13));
  const int exp = static_cast<int>(abs >> 23);
  if (exp < 102) return sign;  // below 2^-25: rounds to zero
  // A subnormal half counts units of 2^-24: value = m * 2^(exp - 150), so shift by 126 - exp.
  const uint32_t m = (abs & 0x7fffffu) | 0x800000u;
  return sign | static_cast<uint16_t>(round_shift(m, 126 - exp));
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
auto dispatch_all(DType t, F&& f) {
  switch (t) {
    case DType::f32:
      return f(float{});
    case DType::f16:
      return f(Half{});
    case DType::i8:
      return f(int8_t{});
    case DType::u8:
      return f(uint8_t{});
    case DType::i32:
      return f(int32_t{});
    case DType::i64:
      return f(int64_t{});
    case DType::boolean:
      return f(bool{});
  }
  throw Error(ErrorCode::Internal, "Cast: unknown dtype");
}

Tensor cast_tensor(const Tensor& x, DType to) {
  if (x.dtype() == to) return x.clone();
  Tensor y(to, x.shape());
  dispatch_all(x.dtype(), [&](auto s) {
    using S = decltype(s);
    dispatch_all(to, [&](auto d) {
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

static_assert(sizeof(Half) == 2 && sizeof(bool) == 1, "tensor storage layout");

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
    return std::vector<Tensor>{cast_tensor(in[0], cast_target(node))};
  };
  add_builtin_op(r, std::move(cast));

  OpSchema like;
  like.name = "CastLike";
  like.doc = "Cast to the element type of the second input";
  like.min_inputs = like.max_inputs = 2;
  like.attributes = {"saturate", "round_mode"};
  like.infer = infer_cast_like;
  like.reference = [](const Node&, const std::vector<Tensor>& in) {
    return std::vector<Tensor>{cast_tensor(in[0], in[1].dtype())};
  };
  add_builtin_op(r, std::move(like));
}

}  // namespace minfer
