// com.minfer:QConv and com.minfer:QGemm: schemas and reference kernels (docs/int8.md).
#include "ops/builtin_ops.h"
#include "ops/conv_geometry.h"
#include "ops/fused_ops.h"
#include "ops/int8/int8_ops.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

const std::vector<std::string> kStageAttributes = {
    "x_scale",  "x_zero_point", "w_scale",      "y_scale",         "y_zero_point",
    "y_min",    "y_max",        "conv_scale",   "conv_zero_point", "conv_min",
    "conv_max", "z_scale",      "z_zero_point", "activation",      "activation_alpha",
    "activation_beta"};

void infer_qconv(InferContext& ctx) {
  require_dtype(ctx, 0, {DType::i8});
  require_dtype(ctx, 1, {DType::i8});
  const bool nhwc = int8::is_nhwc(ctx.node());
  const Shape& x = ctx.input_shape(0);
  ctx.require(x.rank() >= 3, "input must have rank >= 3, got " + x.to_string());
  const Shape xc = nhwc ? int8::nhwc_to_nchw_shape(x) : x;
  ConvGeometry g = conv_geometry(ctx.node(), xc, ctx.input_shape(1));
  if (ctx.has_input(2)) {
    require_dtype(ctx, 2, {DType::i32});
    const Shape& b = ctx.input_shape(2);
    ctx.require(b.rank() == 1 && dims_compatible(b[0], g.out_channels),
                "bias has shape " + b.to_string() + ", expected [" +
                    std::to_string(g.out_channels) + "] (int32, one per output channel)");
  }
  const bool residual = ctx.has_input(3);
  int8::OutputStage st = int8::parse_output_stage(ctx.node(), g.out_channels, residual);
  Shape y = window_output_shape(g, xc, g.out_channels);
  if (nhwc) y = int8::nchw_to_nhwc_shape(y);
  if (residual) {
    require_dtype(ctx, 3, {DType::i8});
    const Shape& z = ctx.input_shape(3);
    bool same = z.rank() == y.rank();
    for (size_t d = 0; same && d < y.rank(); ++d) same = dims_compatible(y[d], z[d]);
    ctx.require(same,
                "residual input has shape " + z.to_string() + ", the output has " + y.to_string());
  }
  ctx.set_output(0, st.int8_out ? DType::i8 : DType::f32, y);
}

std::vector<Tensor> qconv_reference(const Node& node, const std::vector<Tensor>& in) {
  const bool nhwc = int8::is_nhwc(node);
  const Tensor x = nhwc ? int8::nhwc_to_nchw(in[0]) : in[0];
  const Tensor& w = in[1];
  const Tensor& b = in[2];
  const bool residual = in.size() > 3 && in[3].defined();
  const Tensor z = residual ? (nhwc ? int8::nhwc_to_nchw(in[3]) : in[3]) : Tensor();
  ConvGeometry g = conv_geometry(node, x.shape(), w.shape());
  op_require(node, g.rank() <= 3, "reference QConv supports 1 to 3 spatial dims");
  const int8::OutputStage st = int8::parse_output_stage(node, g.out_channels, residual);
  const int32_t zx = int8::x_zero_point(node);
  const bool float_stage = !st.int8_out || st.quantize_float;
  Tensor y(float_stage ? DType::f32 : DType::i8, window_output_shape(g, x.shape(), g.out_channels));
  Window3 q = to_window3(g);
  const int8_t* xp = x.data<int8_t>();
  const int8_t* wp = w.data<int8_t>();
  const int32_t* bp = b.defined() ? b.data<int32_t>() : nullptr;
  const int8_t* zp = residual ? z.data<int8_t>() : nullptr;
  const int64_t N = g.batch, C = g.in_channels, M = g.out_channels;
  const int64_t cg = g.in_channels_per_group(), mg = g.out_channels_per_group();
  const int64_t in_sz = q.in[0] * q.in[1] * q.in[2];
  const int64_t k_sz = q.k[0] * q.k[1] * q.k[2];
  int64_t out_index = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      const int64_t grp = m / mg;
      for (int64_t o0 = 0; o0 < q.out[0]; ++o0)
        for (int64_t o1 = 0; o1 < q.out[1]; ++o1)
          for (int64_t o2 = 0; o2 < q.out[2]; ++o2, ++out_index) {
            int64_t acc = bp ? bp[m] : 0;  // exact; wrapped to int32 once at the end
            for (int64_t c = 0; c < cg; ++c) {
              const int8_t* xc = xp + (n * C + grp * cg + c) * in_sz;
              const int8_t* wc = wp + (m * cg + c) * k_sz;
              for (int64_t k0 = 0; k0 < q.k[0]; ++k0) {
                int64_t i0 = o0 * q.s[0] - q.pb[0] + k0 * q.d[0];
                if (i0 < 0 || i0 >= q.in[0]) continue;  // padding: x = zx adds nothing
                for (int64_t k1 = 0; k1 < q.k[1]; ++k1) {
                  int64_t i1 = o1 * q.s[1] - q.pb[1] + k1 * q.d[1];
                  if (i1 < 0 || i1 >= q.in[1]) continue;
                  for (int64_t k2 = 0; k2 < q.k[2]; ++k2) {
                    int64_t i2 = o2 * q.s[2] - q.pb[2] + k2 * q.d[2];
                    if (i2 < 0 || i2 >= q.in[2]) continue;
                    acc += (int64_t{xc[(i0 * q.in[1] + i1) * q.in[2] + i2]} - zx) *
                           int64_t{wc[(k0 * q.k[1] + k1) * q.k[2] + k2]};
                  }
                }
              }
            }
            const int32_t a = int8::wrap_int32(acc);
            if (!float_stage)
              y.data<int8_t>()[out_index] =
                  int8::stage_int8(st, a, m, residual ? zp[out_index] : 0);
            else
              y.data<float>()[out_index] = int8::stage_float(st, a, m);
          }
    }
  if (st.smooth) apply_fused_activation(node, y);
  if (st.quantize_float) y = int8::quantize_to_int8(y, st.y_scale, st.y_zero_point);
  return {nhwc ? int8::nchw_to_nhwc(y) : y};
}

void infer_qgemm(InferContext& ctx) {
  require_dtype(ctx, 0, {DType::i8});
  require_dtype(ctx, 1, {DType::i8});
  require_rank(ctx, 1, 2, "W");
  const Shape& a = ctx.input_shape(0);
  const Shape& w = ctx.input_shape(1);
  ctx.require(a.rank() >= 2, "A must have rank >= 2 (rows of K), got " + a.to_string());
  const size_t k = a.rank() - 1;
  ctx.require(dims_compatible(a[k], w[1]), "A is " + a.to_string() + " and W is " + w.to_string() +
                                               ": W must be [M, K] with K = A's last dim");
  if (ctx.has_input(2)) {
    require_dtype(ctx, 2, {DType::i32});
    const Shape& b = ctx.input_shape(2);
    ctx.require(b.rank() == 1 && dims_compatible(b[0], w[0]),
                "bias has shape " + b.to_string() + ", expected [" + std::to_string(w[0]) + "]");
  }
  int8::OutputStage st = int8::parse_output_stage(ctx.node(), w[0], false);
  Shape y = a;  // A's dims (and their symbols) but the last, which is M
  y[k] = w[0];
  if (k < y.symbols.size()) y.symbols[k].clear();
  ctx.set_output(0, st.int8_out ? DType::i8 : DType::f32, y);
}

std::vector<Tensor> qgemm_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& a = in[0];
  const Tensor& w = in[1];
  const Tensor& b = in[2];
  const int64_t K = a.shape().dims().back(), M = w.dim(0);
  const int64_t N = dims_product(a.shape(), 0, a.rank() - 1);  // A's rows
  const int8::OutputStage st = int8::parse_output_stage(node, M, false);
  const int32_t za = int8::x_zero_point(node);
  const bool float_stage = !st.int8_out || st.quantize_float;
  Shape ys = a.shape();
  ys.dims().back() = M;
  Tensor y(float_stage ? DType::f32 : DType::i8, ys);
  const int8_t* ap = a.data<int8_t>();
  const int8_t* wp = w.data<int8_t>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      int64_t acc = b.defined() ? b.data<int32_t>()[m] : 0;
      for (int64_t k = 0; k < K; ++k) acc += (int64_t{ap[n * K + k]} - za) * int64_t{wp[m * K + k]};
      const int32_t v = int8::wrap_int32(acc);
      if (!float_stage)
        y.data<int8_t>()[n * M + m] = int8::stage_int8(st, v, m, 0);
      else
        y.data<float>()[n * M + m] = int8::stage_float(st, v, m);
    }
  if (st.smooth) apply_fused_activation(node, y);
  if (st.quantize_float) y = int8::quantize_to_int8(y, st.y_scale, st.y_zero_point);
  return {y};
}

}  // namespace

void register_qconv_ops(OpRegistry& r) {
  OpSchema c;
  c.domain = kMinferDomain;
  c.name = "QConv";
  c.doc = "int8 Conv with int32 bias, requantization, activation clamp and fused residual QAdd";
  c.min_inputs = 2;
  c.max_inputs = 4;
  c.attributes = {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides", "layout"};
  c.attributes.insert(c.attributes.end(), kStageAttributes.begin(), kStageAttributes.end());
  c.infer = infer_qconv;
  c.reference = qconv_reference;
  add_builtin_op(r, std::move(c));

  OpSchema g;
  g.domain = kMinferDomain;
  g.name = "QGemm";
  g.doc =
      "int8 A[..., K] x W[M,K]^T (A's rows) with int32 bias and requantization (or a float "
      "output)";
  g.min_inputs = 2;
  g.max_inputs = 3;
  g.attributes = kStageAttributes;
  g.infer = infer_qgemm;
  g.reference = qgemm_reference;
  add_builtin_op(r, std::move(g));
}

}  // namespace minfer
