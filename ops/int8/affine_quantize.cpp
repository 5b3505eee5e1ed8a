// com.minfer:AffineQuantize: Y = saturate(round(act(X * A + B)) + y_zero_point) to int8,
// channels last, from an NCHW float X with one scale A[c] and shift B[c] per channel, act "" or
// "Relu", rounding half to even. A and B are in units of Y's quantum: the affine-quantize-fusion
// pass takes a BatchNormalization + Relu before an int8 conv (DenseNet puts them between its
// float Concats and its convs) made a 1x1 depthwise conv, the QuantizeLinear and the Transpose
// into the NHWC int8 region, and divides the conv's scale and shift by the QuantizeLinear's
// y_scale (no division per value; a value that lands on a rounding tie may differ from
// QuantizeLinear's division by 1). The product and the shift are one fused multiply-add.
#include <cmath>
#include <string>

#include "ops/builtin_ops.h"
#include "ops/int8/int8_ops.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

bool relu_of(const Node& node) {
  const std::string act = node.attrs.get_string("activation", "");
  op_require(node, act.empty() || act == "Relu",
             "activation must be \"\" or \"Relu\", got \"" + act + "\"");
  return act == "Relu";
}

void infer_affine_quantize(InferContext& ctx) {
  for (size_t i = 0; i < 3; ++i) require_dtype(ctx, i, {DType::f32});
  const Shape& x = ctx.input_shape(0);
  ctx.require(x.rank() == 4, "input must have rank 4 (NCHW), got " + x.to_string());
  for (size_t i = 1; i < 3; ++i) {
    const Shape& p = ctx.input_shape(i);
    ctx.require(p.rank() == 1 && dims_compatible(p[0], x[1]),
                std::string(i == 1 ? "scale" : "shift") + " has shape " + p.to_string() +
                    ", not one value per channel of the input " + x.to_string());
  }
  relu_of(ctx.node());
  int8::require_zero_point(ctx.node(), "y_zero_point");
  ctx.set_output(0, DType::i8, Shape{x[0], x[2], x[3], x[1]});
}

std::vector<Tensor> affine_quantize_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const int64_t n = x.dim(0), c = x.dim(1), hw = x.dim(2) * x.dim(3);
  op_require(node, in[1].numel() == c && in[2].numel() == c,
             "scale and shift need one value per channel (" + std::to_string(c) + ")");
  const bool relu = relu_of(node);
  const int32_t zero_point = int8::require_zero_point(node, "y_zero_point");
  Tensor y(DType::i8, Shape{x.dim(0), x.dim(2), x.dim(3), c});
  const float* xp = x.data<float>();
  const float* a = in[1].data<float>();
  const float* b = in[2].data<float>();
  int8_t* yp = y.data<int8_t>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) {
        float v = std::fma(xp[(i * c + ch) * hw + p], a[ch], b[ch]);
        if (relu) v = v > 0.f ? v : 0.f;  // NaN -> 0, which quantizes as NaN does
        yp[(i * hw + p) * c + ch] =
            static_cast<int8_t>(int8::quantize_value(v, 1.f, zero_point, -128, 127));
      }
  return {y};
}

}  // namespace

void register_affine_quantize_ops(OpRegistry& r) {
  OpSchema s;
  s.domain = kMinferDomain;
  s.name = "AffineQuantize";
  s.doc =
      "Y = saturate(round(act(X * A + B)) + y_zero_point): int8 NHWC from NCHW X, A and B "
      "per channel in Y's quanta";
  s.min_inputs = 3;
  s.max_inputs = 3;
  s.attributes = {"y_zero_point", "activation"};
  s.infer = infer_affine_quantize;
  s.reference = affine_quantize_reference;
  add_builtin_op(r, std::move(s));
}

}  // namespace minfer
