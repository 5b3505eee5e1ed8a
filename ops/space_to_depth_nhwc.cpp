// com.minfer:SpaceToDepthNhwc: schema and reference kernel (ops/space_to_depth_nhwc.h).
#include "ops/space_to_depth_nhwc.h"

#include <cstring>

#include "ops/int8/int8_math.h"
#include "ops/op_util.h"
#include "runtime/half.h"

namespace minfer {

namespace {

void infer_space_to_depth(InferContext& ctx) {
  const bool half = ctx.attrs().get_int("half", 0) != 0;
  const bool quantize = ctx.has_input(2);
  require_dtype(ctx, 0, half || quantize
                            ? std::vector<DType>{DType::f32}
                            : std::vector<DType>{DType::f32, DType::f16, DType::i8, DType::u8});
  ctx.require(!(half && quantize), "half and quantization exclude each other");
  if (quantize) {
    ctx.require(ctx.has_input(3), "a scale needs its zero point (input 3)");
    require_dtype(ctx, 2, {DType::f32});
    require_dtype(ctx, 3, {DType::i8});
    ctx.require(ctx.input_shape(2).numel() == 1 && ctx.input_shape(3).numel() == 1,
                "scale and zero point must be scalars");
  }
  const DType out = half ? DType::f16 : quantize ? DType::i8 : ctx.input_dtype(0);
  if (ctx.has_input(1)) {
    require_dtype(ctx, 1, {out});
    ctx.require(ctx.input_shape(1).numel() == 1, "pad must be a scalar");
  }
  const Shape& x = ctx.input_shape(0);
  ctx.require(x.rank() == 4, "input must be NCHW (rank 4), got " + x.to_string());
  const int64_t b = ctx.attrs().get_int("blocksize", 2);
  const int64_t channels = ctx.attrs().require_int("channels");
  ctx.require(b >= 1, "blocksize must be >= 1");
  Shape y({x[0], -1, -1, channels});
  copy_dim(y, 0, x, 0);
  if (x[1] >= 0 && x[2] >= 0 && x[3] >= 0) {
    ctx.require(x[2] % b == 0 && x[3] % b == 0,
                "H and W must be multiples of the block " + std::to_string(b) + ", got " +
                    x.to_string());
    ctx.require(channels >= b * b * x[1], "channels " + std::to_string(channels) +
                                              " is fewer than block^2 * C = " +
                                              std::to_string(b * b * x[1]));
    y = Shape({x[0], x[2] / b, x[3] / b, channels});
    copy_dim(y, 0, x, 0);  // a symbolic batch stays symbolic
  }
  ctx.set_output(0, out, y);
}

std::vector<Tensor> space_to_depth_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const bool half = node.attrs.get_int("half", 0) != 0;
  const bool quantize = in.size() > 2 && in[2].defined();
  const float scale = quantize ? in[2].data<float>()[0] : 1.f;
  const int32_t zero_point = quantize ? in[3].data<int8_t>()[0] : 0;
  const int64_t b = node.attrs.get_int("blocksize", 2);
  const int64_t channels = node.attrs.require_int("channels");
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  const DType out = half ? DType::f16 : quantize ? DType::i8 : x.dtype();
  const size_t es = dtype_size(out);
  Tensor y(out, Shape{n, h / b, w / b, channels});
  char* yp = static_cast<char*>(y.raw());
  // Every element starts as the pad value, then the block's pixels are written over it.
  std::vector<char> pad(es, 0);
  if (in.size() > 1 && in[1].defined()) std::memcpy(pad.data(), in[1].raw(), es);
  for (int64_t i = 0; i < y.numel(); ++i) std::memcpy(yp + i * es, pad.data(), es);
  const char* xp = static_cast<const char*>(x.raw());
  for (int64_t img = 0; img < n; ++img)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t r = 0; r < h; ++r)
        for (int64_t col = 0; col < w; ++col) {
          const int64_t src = ((img * c + ch) * h + r) * w + col;
          const int64_t dst =
              ((img * (h / b) + r / b) * (w / b) + col / b) * channels + ((r % b) * b + col % b) * c + ch;
          if (half) {
            const uint16_t v = float_to_half(x.data<float>()[src]);
            std::memcpy(yp + dst * es, &v, es);
          } else if (quantize) {
            yp[dst] = static_cast<char>(
                int8::quantize_value(x.data<float>()[src], scale, zero_point, -128, 127));
          } else {
            std::memcpy(yp + dst * es, xp + src * es, es);
          }
        }
  return {y};
}

}  // namespace

void register_space_to_depth_nhwc(OpRegistry& registry) {
  OpSchema s;
  s.domain = kMinferDomain;
  s.name = "SpaceToDepthNhwc";
  s.doc = "NCHW -> NHWC space-to-depth with padded channels (stride-2 stems on CUDA)";
  s.min_inputs = 1;
  s.max_inputs = 4;
  s.attributes = {"blocksize", "channels", "half"};
  s.infer = infer_space_to_depth;
  s.reference = space_to_depth_reference;
  registry.register_op(std::move(s));
}

}  // namespace minfer
