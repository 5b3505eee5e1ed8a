// Conv: schema and reference kernel (direct convolution, 1-D to 3-D, groups, dilations).
#include "ops/builtin_ops.h"
#include "ops/conv_geometry.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

void infer_conv(InferContext& ctx) {
  require_dtype(ctx, 0, {DType::f32});
  require_same_dtype(ctx, 0, 1);
  const Shape& x = ctx.input_shape(0);
  const Shape& w = ctx.input_shape(1);
  ConvGeometry g = conv_geometry(ctx.node(), x, w);
  if (ctx.has_input(2)) {
    require_same_dtype(ctx, 0, 2);
    const Shape& b = ctx.input_shape(2);
    if (b.rank() != 1 || !dims_compatible(b[0], g.out_channels))
      ctx.fail("bias has shape " + b.to_string() + ", expected [" + std::to_string(g.out_channels) +
               "] (one per output channel)");
  }
  ctx.set_output(0, ctx.input_dtype(0), window_output_shape(g, x, g.out_channels));
}

std::vector<Tensor> conv_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const Tensor& w = in[1];
  const Tensor& b = in[2];
  ConvGeometry g = conv_geometry(node, x.shape(), w.shape());
  op_require(node, g.rank() <= 3, "reference Conv supports 1 to 3 spatial dims");
  Tensor y(DType::f32, window_output_shape(g, x.shape(), g.out_channels));
  Window3 q = to_window3(g);
  const float* xp = x.data<float>();
  const float* wp = w.data<float>();
  const float* bp = b.defined() ? b.data<float>() : nullptr;
  float* yp = y.data<float>();
  const int64_t N = g.batch, C = g.in_channels, M = g.out_channels;
  const int64_t cg = g.in_channels_per_group(), mg = g.out_channels_per_group();
  const int64_t in_sz = q.in[0] * q.in[1] * q.in[2];
  const int64_t k_sz = q.k[0] * q.k[1] * q.k[2];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      const int64_t grp = m / mg;
      for (int64_t o0 = 0; o0 < q.out[0]; ++o0)
        for (int64_t o1 = 0; o1 < q.out[1]; ++o1)
          for (int64_t o2 = 0; o2 < q.out[2]; ++o2) {
            double acc = bp ? bp[m] : 0.0;
            for (int64_t c = 0; c < cg; ++c) {
              const float* xc = xp + (n * C + grp * cg + c) * in_sz;
              const float* wc = wp + (m * cg + c) * k_sz;
              for (int64_t k0 = 0; k0 < q.k[0]; ++k0) {
                int64_t i0 = o0 * q.s[0] - q.pb[0] + k0 * q.d[0];
                if (i0 < 0 || i0 >= q.in[0]) continue;
                for (int64_t k1 = 0; k1 < q.k[1]; ++k1) {
                  int64_t i1 = o1 * q.s[1] - q.pb[1] + k1 * q.d[1];
                  if (i1 < 0 || i1 >= q.in[1]) continue;
                  for (int64_t k2 = 0; k2 < q.k[2]; ++k2) {
                    int64_t i2 = o2 * q.s[2] - q.pb[2] + k2 * q.d[2];
                    if (i2 < 0 || i2 >= q.in[2]) continue;
                    acc += double(xc[(i0 * q.in[1] + i1) * q.in[2] + i2]) *
                           double(wc[(k0 * q.k[1] + k1) * q.k[2] + k2]);
                  }
                }
              }
            }
            *yp++ = static_cast<float>(acc);
          }
    }
  return {y};
}

}  // namespace

void register_conv_ops(OpRegistry& r) {
  OpSchema s;
  s.name = "Conv";
  s.doc = "N-d convolution with groups, strides, pads/auto_pad, dilations and optional bias";
  s.min_inputs = 2;
  s.max_inputs = 3;
  s.attributes = conv_attributes();
  s.infer = infer_conv;
  s.reference = conv_reference;
  add_builtin_op(r, std::move(s));
}

}  // namespace minfer
