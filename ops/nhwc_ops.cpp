#include "ops/nhwc_ops.h"

#include "ops/int8/int8_ops.h"
#include "ops/op_util.h"

namespace minfer {

NhwcConvKind nhwc_conv_kind(const ConvGeometry& g) {
  if (g.rank() != 2 || !g.is_static()) return NhwcConvKind::None;
  bool unpadded = true, stride_1 = true;
  for (size_t i = 0; i < 2; ++i) {
    unpadded = unpadded && g.pads_begin[i] == 0 && g.pads_end[i] == 0;
    stride_1 = stride_1 && g.strides[i] == 1;
  }
  const int64_t k = g.kernel_h();
  if (g.group == 1 && k == 1 && g.kernel_w() == 1 && stride_1 && unpadded)
    return NhwcConvKind::Pointwise;
  // Depthwise: K / 2 * d zeros of padding before (d: the dilation, the same on both dims).
  const int64_t s = g.stride_h(), d = g.dilation_h(), p = k / 2 * d;
  if (g.is_depthwise() && (k == 3 || k == 5) && g.kernel_w() == k && (s == 1 || s == 2) &&
      g.stride_w() == s && g.dilation_w() == d && g.pad_top() == p && g.pad_left() == p &&
      g.pad_bottom() <= p && g.pad_right() <= p)
    return NhwcConvKind::Depthwise;
  return NhwcConvKind::None;
}

void register_nhwc_ops(OpRegistry& registry) {
  const OpSchema& fused_conv = registry.get_op(kMinferDomain, "FusedConv");
  const OpSchema& gap = registry.get_op("", "GlobalAveragePool");
  OpSchema s;
  s.domain = kMinferDomain;
  s.name = "NhwcConv";
  s.doc = "act(Conv(X, W, B) + Z) with X, Z and Y channels last (NHWC)";
  s.min_inputs = 2;
  s.max_inputs = 4;
  s.attributes = fused_conv.attributes;
  s.attributes.push_back("nchw_input");
  s.infer = [&fused_conv](InferContext& ctx) {
    const bool nchw_input = ctx.attrs().get_int("nchw_input", 0) != 0;
    for (size_t i : {size_t(0), size_t(3)}) {
      if (!ctx.has_input(i)) continue;
      require_dtype(ctx, i, {DType::f32});
      ctx.require(ctx.input_shape(i).rank() == 4, "input " + std::to_string(i) +
                                                      " must be NHWC of rank 4, got " +
                                                      ctx.input_shape(i).to_string());
    }
    // FusedConv's inference on the NCHW view of the data inputs.
    std::vector<TensorInfo> infos;
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      TensorInfo info = ctx.has_input(i) ? ctx.input(i) : TensorInfo{};
      if ((i == 3 || (i == 0 && !nchw_input)) && info.present) {
        info.shape = int8::nhwc_to_nchw_shape(info.shape);
        info.constant = nullptr;
      }
      infos.push_back(info);
    }
    InferContext inner(ctx.node(), infos);
    fused_conv.infer(inner);
    const TensorInfo& y = inner.outputs()[0];
    ctx.set_output(0, y.dtype, int8::nchw_to_nhwc_shape(y.shape));
  };
  s.reference = [&fused_conv](const Node& n, const std::vector<Tensor>& in) {
    std::vector<Tensor> nchw = in;
    const bool nchw_input = n.attrs.get_int("nchw_input", 0) != 0;
    for (size_t i : {size_t(0), size_t(3)})
      if (i < in.size() && in[i].defined() && !(i == 0 && nchw_input))
        nchw[i] = int8::nhwc_to_nchw(in[i]);
    std::vector<Tensor> out = fused_conv.reference(n, nchw);
    out[0] = int8::nchw_to_nhwc(out[0]);
    return out;
  };
  registry.register_op(std::move(s));

  OpSchema pool;
  pool.domain = kMinferDomain;
  pool.name = "NhwcGlobalAveragePool";
  pool.doc = "GlobalAveragePool of an NHWC X [N, H, W, C]: Y [N, C, 1, 1]";
  pool.min_inputs = pool.max_inputs = 1;
  pool.infer = [](InferContext& ctx) {
    require_dtype(ctx, 0, {DType::f32});
    const Shape& x = ctx.input_shape(0);
    ctx.require(x.rank() == 4, "input must be NHWC of rank 4, got " + x.to_string());
    ctx.set_output(0, DType::f32, Shape{x[0], x[3], 1, 1});
  };
  pool.reference = [&gap](const Node& n, const std::vector<Tensor>& in) {
    return gap.reference(n, {int8::nhwc_to_nchw(in[0])});
  };
  registry.register_op(std::move(pool));
}

}  // namespace minfer
