// ONNX QuantizeLinear and DequantizeLinear (opsets 10 to 21): per tensor and per axis,
// int8/uint8 (and int32 for DequantizeLinear). Blocked quantization and the float8/int4/int16
// types are declined as Unsupported.
#include <limits>

#include "ops/builtin_ops.h"
#include "ops/int8/int8_ops.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

constexpr int64_t kOnnxUint8 = 2, kOnnxInt8 = 3;  // TensorProto.DataType

[[noreturn]] void unsupported(const InferContext& ctx, const std::string& what) {
  throw Error(ErrorCode::Unsupported, ctx.node().describe() + ": " + what);
}

// Checks scale (input 1) and zero point (input 2) against x (input 0); returns the axis
// (normalized) for a per-axis scale, -1 for per tensor.
int64_t check_params(InferContext& ctx) {
  if (ctx.attrs().get_int("block_size", 0) != 0)
    unsupported(ctx, "blocked quantization (block_size) is not supported");
  if (ctx.input_dtype(1) != DType::f32)
    unsupported(ctx, std::string("scale of type ") + dtype_name(ctx.input_dtype(1)) +
                         " is not supported (float32 only)");
  const Shape& x = ctx.input_shape(0);
  const Shape& s = ctx.input_shape(1);
  if (s.rank() > 1) unsupported(ctx, "blocked quantization (a scale of rank > 1) is not supported");
  if (ctx.has_input(2)) {
    const Shape& z = ctx.input_shape(2);
    ctx.require(z.rank() == s.rank() && (s.rank() == 0 || z[0] == s[0] || z[0] < 0 || s[0] < 0),
                "zero point has shape " + z.to_string() + ", the scale has " + s.to_string());
  }
  if (s.rank() == 0 || s[0] == 1) {
    if (s.rank() == 0 || x.rank() == 0) return -1;
    int64_t axis = normalize_axis(ctx.node(), ctx.attrs().get_int("axis", 1),
                                  static_cast<int64_t>(x.rank()), "axis");
    return x[axis] == 1 ? axis : -1;  // one scale for a size-1 axis: per tensor either way
  }
  int64_t axis = normalize_axis(ctx.node(), ctx.attrs().get_int("axis", 1),
                                static_cast<int64_t>(x.rank()), "axis");
  ctx.require(dims_compatible(x[axis], s[0]), "scale has " + std::to_string(s[0]) +
                                                  " values, axis " + std::to_string(axis) +
                                                  " of the input has " + std::to_string(x[axis]));
  return axis;
}

void infer_quantize(InferContext& ctx) {
  require_dtype(ctx, 0, {DType::f32});
  check_params(ctx);
  DType out = DType::u8;
  if (ctx.has_input(2)) {
    out = ctx.input_dtype(2);
    if (out != DType::i8 && out != DType::u8)
      unsupported(ctx, std::string("quantizing to ") + dtype_name(out) +
                           " is not supported (int8 and uint8 only)");
  } else if (ctx.attrs().has("output_dtype")) {
    int64_t t = ctx.attrs().get_int("output_dtype", 0);
    if (t == kOnnxInt8)
      out = DType::i8;
    else if (t != kOnnxUint8 && t != 0)
      unsupported(ctx, "output_dtype " + std::to_string(t) + " is not supported (int8, uint8)");
  }
  ctx.set_output(0, out, ctx.input_shape(0));
}

void infer_dequantize(InferContext& ctx) {
  DType t = ctx.input_dtype(0);
  if (t != DType::i8 && t != DType::u8 && t != DType::i32)
    unsupported(ctx, std::string("dequantizing ") + dtype_name(t) +
                         " is not supported (int8, uint8 and int32 only)");
  if (ctx.has_input(2)) require_same_dtype(ctx, 0, 2);
  check_params(ctx);
  ctx.set_output(0, DType::f32, ctx.input_shape(0));
}

// Per-element parameter index: 0 per tensor, else the coordinate on `axis`.
struct ParamIndex {
  int64_t inner = 1, count = 1;  // elements after the axis, scale count
  int64_t operator()(int64_t i) const { return count == 1 ? 0 : (i / inner) % count; }
};

ParamIndex param_index(const Tensor& x, const Tensor& scale, const Node& node) {
  ParamIndex p;
  p.count = scale.numel();
  if (p.count > 1) {
    int64_t axis =
        normalize_axis(node, node.attrs.get_int("axis", 1), static_cast<int64_t>(x.rank()), "axis");
    p.inner = dims_product(x.shape(), axis + 1, x.rank());
  }
  return p;
}

template <typename Q>
std::vector<int32_t> zero_points(const Tensor& z, int64_t count) {
  std::vector<int32_t> r(count, 0);
  if (z.defined())
    for (int64_t i = 0; i < count; ++i) r[i] = static_cast<int32_t>(z.data<Q>()[i]);
  return r;
}

std::vector<int32_t> read_zero_points(const Tensor& z, DType t, int64_t count) {
  if (!z.defined()) return std::vector<int32_t>(count, 0);
  switch (t) {
    case DType::i8:
      return zero_points<int8_t>(z, count);
    case DType::u8:
      return zero_points<uint8_t>(z, count);
    default:
      return zero_points<int32_t>(z, count);
  }
}

template <typename Q>
void quantize_typed(const Tensor& x, const Tensor& scale, const std::vector<int32_t>& zp,
                    const ParamIndex& pi, Tensor& y) {
  const float* xp = x.data<float>();
  const float* sp = scale.data<float>();
  Q* yp = y.data<Q>();
  constexpr int32_t lo = std::numeric_limits<Q>::min(), hi = std::numeric_limits<Q>::max();
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t c = pi(i);
    yp[i] = static_cast<Q>(int8::quantize_value(xp[i], sp[c], zp[c], lo, hi));
  }
}

template <typename Q>
void dequantize_typed(const Tensor& x, const Tensor& scale, const std::vector<int32_t>& zp,
                      const ParamIndex& pi, Tensor& y) {
  const Q* xp = x.data<Q>();
  const float* sp = scale.data<float>();
  float* yp = y.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t c = pi(i);
    yp[i] = int8::dequantize_value(static_cast<int64_t>(xp[i]) - zp[c], sp[c]);
  }
}

std::vector<Tensor> quantize_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const Tensor& scale = in[1];
  DType out = DType::u8;
  if (in[2].defined())
    out = in[2].dtype();
  else if (node.attrs.get_int("output_dtype", 0) == kOnnxInt8)
    out = DType::i8;
  ParamIndex pi = param_index(x, scale, node);
  std::vector<int32_t> zp = read_zero_points(in[2], out, pi.count);
  Tensor y(out, x.shape());
  if (out == DType::i8)
    quantize_typed<int8_t>(x, scale, zp, pi, y);
  else
    quantize_typed<uint8_t>(x, scale, zp, pi, y);
  return {y};
}

std::vector<Tensor> dequantize_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const Tensor& scale = in[1];
  ParamIndex pi = param_index(x, scale, node);
  std::vector<int32_t> zp = read_zero_points(in[2], x.dtype(), pi.count);
  Tensor y(DType::f32, x.shape());
  switch (x.dtype()) {
    case DType::i8:
      dequantize_typed<int8_t>(x, scale, zp, pi, y);
      break;
    case DType::u8:
      dequantize_typed<uint8_t>(x, scale, zp, pi, y);
      break;
    default:
      dequantize_typed<int32_t>(x, scale, zp, pi, y);
      break;
  }
  return {y};
}

}  // namespace

void register_quantize_linear_ops(OpRegistry& r) {
  OpSchema q;
  q.name = "QuantizeLinear";
  q.doc = "y = saturate(round_half_even(x / scale) + zero_point), per tensor or per axis";
  q.min_inputs = 2;
  q.max_inputs = 3;
  q.attributes = {"axis", "saturate", "block_size", "output_dtype"};
  q.infer = infer_quantize;
  q.reference = quantize_reference;
  add_builtin_op(r, std::move(q));

  OpSchema d;
  d.name = "DequantizeLinear";
  d.doc = "y = (x - zero_point) * scale, per tensor or per axis";
  d.min_inputs = 2;
  d.max_inputs = 3;
  d.attributes = {"axis", "block_size", "output_dtype"};
  d.infer = infer_dequantize;
  d.reference = dequantize_reference;
  add_builtin_op(r, std::move(d));
}

}  // namespace minfer
