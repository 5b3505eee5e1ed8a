// com.minfer fp16 ops (ops/fp16/half_ops.h): schemas and reference kernels. Shapes and
// references reuse the float32 NCHW ops (FusedConv, MaxPool, GlobalAveragePool) through a
// layout and precision conversion at the op's edges.
#include "ops/fp16/half_ops.h"

#include "ops/int8/int8_ops.h"
#include "ops/op_util.h"
#include "runtime/half.h"

namespace minfer {

namespace fp16 {

Tensor to_half_nhwc(const Tensor& x) {
  Tensor h(DType::f16, x.shape());
  const float* src = x.data<float>();
  uint16_t* dst = static_cast<uint16_t*>(h.raw());
  for (int64_t i = 0; i < x.numel(); ++i) dst[i] = float_to_half(src[i]);
  return int8::nchw_to_nhwc(h);
}

Tensor from_half_nhwc(const Tensor& x) {
  const Tensor h = int8::nhwc_to_nchw(x);
  Tensor y(DType::f32, h.shape());
  const uint16_t* src = static_cast<const uint16_t*>(h.raw());
  float* dst = y.data<float>();
  for (int64_t i = 0; i < h.numel(); ++i) dst[i] = half_to_float(src[i]);
  return y;
}

}  // namespace fp16

namespace {

void require_nhwc_half(InferContext& ctx, size_t i) {
  ctx.require(ctx.input_dtype(i) == DType::f16,
              "input " + std::to_string(i) + " must be float16, got " +
                  dtype_name(ctx.input_dtype(i)));
  const size_t rank = ctx.input_shape(i).rank();
  ctx.require(rank >= 3 && rank <= 5, "input " + std::to_string(i) +
                                          " must be an NHWC tensor of rank 3 to 5, got " +
                                          ctx.input_shape(i).to_string());
}

// Runs `base`'s inference with the data inputs in `nhwc_inputs` seen as float32 NCHW.
TensorInfo infer_as_nchw(InferContext& ctx, const OpSchema& base,
                         std::initializer_list<size_t> nhwc_inputs) {
  std::vector<TensorInfo> infos;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    TensorInfo info = ctx.has_input(i) ? ctx.input(i) : TensorInfo{};
    for (size_t d : nhwc_inputs)
      if (d == i && info.present) {
        info.dtype = DType::f32;
        info.shape = int8::nhwc_to_nchw_shape(info.shape);
        info.constant = nullptr;
      }
    infos.push_back(info);
  }
  InferContext inner(ctx.node(), infos);
  base.infer(inner);
  return inner.outputs()[0];
}

// The reference of an fp16 op: `base`'s float32 reference on the inputs in `nhwc_inputs`
// widened to float32 NCHW, its output rounded back to fp16 NHWC.
std::vector<Tensor> reference_as_nchw(const OpSchema& base, const Node& n,
                                      const std::vector<Tensor>& in,
                                      std::initializer_list<size_t> nhwc_inputs, bool half_out) {
  std::vector<Tensor> widened = in;
  for (size_t d : nhwc_inputs)
    if (d < in.size() && in[d].defined()) {
      op_require(n, in[d].dtype() == DType::f16, "input " + std::to_string(d) + " is " +
                                                     dtype_name(in[d].dtype()) +
                                                     ", expected float16");
      widened[d] = fp16::from_half_nhwc(in[d]);
    }
  std::vector<Tensor> out = base.reference(n, widened);
  if (half_out) out[0] = fp16::to_half_nhwc(out[0]);
  return out;
}

OpSchema fp16_schema(const char* name, const char* doc, int min_inputs, int max_inputs,
                     std::vector<std::string> attributes) {
  OpSchema s;
  s.domain = kMinferDomain;
  s.name = name;
  s.doc = doc;
  s.min_inputs = min_inputs;
  s.max_inputs = max_inputs;
  s.attributes = std::move(attributes);
  return s;
}

}  // namespace

void register_fp16_ops(OpRegistry& registry) {
  const OpSchema& fused_conv = registry.get_op(kMinferDomain, "FusedConv");
  const OpSchema& max_pool = registry.get_op("", "MaxPool");
  const OpSchema& gap = registry.get_op("", "GlobalAveragePool");

  OpSchema to = fp16_schema("ToHalfNhwc", "float32 NCHW -> float16 NHWC (round to nearest even)",
                            1, 1, {});
  to.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, {DType::f32});
    const Shape& x = ctx.input_shape(0);
    ctx.require(x.rank() >= 3 && x.rank() <= 5, "input must have rank 3 to 5, got " + x.to_string());
    ctx.set_output(0, DType::f16, int8::nchw_to_nhwc_shape(x));
  };
  to.reference = [](const Node&, const std::vector<Tensor>& in) {
    return std::vector<Tensor>{fp16::to_half_nhwc(in[0])};
  };
  registry.register_op(std::move(to));

  OpSchema from = fp16_schema("FromHalfNhwc", "float16 NHWC -> float32 NCHW", 1, 1, {});
  from.infer = [](InferContext& ctx) {
    require_nhwc_half(ctx, 0);
    ctx.set_output(0, DType::f32, int8::nhwc_to_nchw_shape(ctx.input_shape(0)));
  };
  from.reference = [](const Node&, const std::vector<Tensor>& in) {
    return std::vector<Tensor>{fp16::from_half_nhwc(in[0])};
  };
  registry.register_op(std::move(from));

  OpSchema conv = fp16_schema(
      "HConv", "fp16 NHWC act(Conv(X, W, B) + Z), float32 weights converted at plan time", 2, 4,
      fused_conv.attributes);
  conv.infer = [&fused_conv](InferContext& ctx) {
    require_nhwc_half(ctx, 0);
    require_dtype(ctx, 1, {DType::f32});
    if (ctx.has_input(2)) require_dtype(ctx, 2, {DType::f32});
    if (ctx.has_input(3)) require_nhwc_half(ctx, 3);
    ctx.require(ctx.attrs().get_int("group", 1) == 1, "HConv takes one group");
    const TensorInfo y = infer_as_nchw(ctx, fused_conv, {0, 3});
    ctx.set_output(0, DType::f16, int8::nchw_to_nhwc_shape(y.shape));
  };
  conv.reference = [&fused_conv](const Node& n, const std::vector<Tensor>& in) {
    return reference_as_nchw(fused_conv, n, in, {0, 3}, true);
  };
  registry.register_op(std::move(conv));

  OpSchema pool = fp16_schema("HMaxPool", "fp16 NHWC MaxPool", 1, 1, max_pool.attributes);
  pool.infer = [&max_pool](InferContext& ctx) {
    require_nhwc_half(ctx, 0);
    ctx.require(ctx.num_outputs() == 1, "HMaxPool has no Indices output");
    const TensorInfo y = infer_as_nchw(ctx, max_pool, {0});
    ctx.set_output(0, DType::f16, int8::nchw_to_nhwc_shape(y.shape));
  };
  pool.reference = [&max_pool](const Node& n, const std::vector<Tensor>& in) {
    return reference_as_nchw(max_pool, n, in, {0}, true);
  };
  registry.register_op(std::move(pool));

  OpSchema avg = fp16_schema("HGlobalAveragePool",
                             "fp16 NHWC GlobalAveragePool, float32 output [N, C, 1, ...]", 1, 1, {});
  avg.infer = [&gap](InferContext& ctx) {
    require_nhwc_half(ctx, 0);
    const TensorInfo y = infer_as_nchw(ctx, gap, {0});
    ctx.set_output(0, DType::f32, y.shape);
  };
  avg.reference = [&gap](const Node& n, const std::vector<Tensor>& in) {
    return reference_as_nchw(gap, n, in, {0}, false);
  };
  registry.register_op(std::move(avg));
}

}  // namespace minfer
