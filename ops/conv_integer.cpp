// ConvInteger (opset 10): Conv on 8-bit x and w with zero points, int32 output:
// y = conv(x - x_zero_point, w - w_zero_point). The attributes and geometry are Conv's
// (ops/conv_geometry.h); padding contributes zero, i.e. pads hold x_zero_point.
#include "ops/builtin_ops.h"
#include "ops/conv_geometry.h"
#include "ops/integer_ops.h"

namespace minfer {

namespace {

bool is_scalar_like(const Shape& s) { return s.rank() == 0 || (s.rank() == 1 && s[0] == 1); }

void infer_conv_integer(InferContext& ctx) {
  require_dtype(ctx, 0, int8_types());
  require_dtype(ctx, 1, int8_types());
  const Shape& x = ctx.input_shape(0);
  const Shape& w = ctx.input_shape(1);
  ConvGeometry g = conv_geometry(ctx.node(), x, w);
  if (ctx.has_input(2)) {
    require_same_dtype(ctx, 0, 2);
    ctx.require(is_scalar_like(ctx.input_shape(2)),
                "x_zero_point has shape " + ctx.input_shape(2).to_string() +
                    "; expected a scalar (per-tensor quantization)");
  }
  if (ctx.has_input(3)) {
    require_same_dtype(ctx, 1, 3);
    const Shape& z = ctx.input_shape(3);
    ctx.require(is_scalar_like(z) || (z.rank() == 1 && dims_compatible(z[0], g.out_channels)),
                "w_zero_point has shape " + z.to_string() + "; expected a scalar or [" +
                    std::to_string(g.out_channels) + "] (one per output channel)");
  }
  ctx.set_output(0, DType::i32, window_output_shape(g, x, g.out_channels));
}

// Output positions o in [0, out) whose input position o * stride + offset is in [0, in).
TapRange valid_outputs(int64_t offset, int64_t out, int64_t stride, int64_t in) {
  return taps_in(offset, out, stride, 0, in);
}

std::vector<Tensor> conv_integer_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor &x = in[0], &w = in[1];
  ConvGeometry g = conv_geometry(node, x.shape(), w.shape());
  op_require(node, g.rank() <= 3, "reference ConvInteger supports 1 to 3 spatial dims");
  Tensor y(DType::i32, window_output_shape(g, x.shape(), g.out_channels));
  const Window3 q = to_window3(g);
  const int64_t N = g.batch, C = g.in_channels, M = g.out_channels;
  const int64_t cg = g.in_channels_per_group(), mg = g.out_channels_per_group();
  const int64_t in_sz = q.in[0] * q.in[1] * q.in[2];
  const int64_t out_sz = q.out[0] * q.out[1] * q.out[2];
  const int64_t k_sz = q.k[0] * q.k[1] * q.k[2];

  // Subtract the zero points once; then every product is a plain int32 multiply.
  const std::vector<int32_t> xs = widen_minus(node, x, read_zero_points(node, in[2], 1), x.numel());
  const std::vector<int32_t> ws = widen_minus(node, w, read_zero_points(node, in[3], 1), cg * k_sz);
  // Accumulate in uint32: ONNX's int32 accumulation, wrapping instead of undefined overflow.
  std::vector<uint32_t> acc(static_cast<size_t>(out_sz));
  int32_t* yp = y.data<int32_t>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      std::fill(acc.begin(), acc.end(), 0u);
      const int64_t grp = m / mg;
      for (int64_t c = 0; c < cg; ++c) {
        const int32_t* xc = xs.data() + (n * C + grp * cg + c) * in_sz;
        const int32_t* wc = ws.data() + (m * cg + c) * k_sz;
        // One kernel tap at a time: it adds wv * (a shifted input row) to each output row, so
        // the inner loop streams contiguous memory (and vectorizes for stride 1).
        for (int64_t k0 = 0; k0 < q.k[0]; ++k0) {
          const int64_t off0 = k0 * q.d[0] - q.pb[0];
          const TapRange r0 = valid_outputs(off0, q.out[0], q.s[0], q.in[0]);
          for (int64_t k1 = 0; k1 < q.k[1]; ++k1) {
            const int64_t off1 = k1 * q.d[1] - q.pb[1];
            const TapRange r1 = valid_outputs(off1, q.out[1], q.s[1], q.in[1]);
            for (int64_t k2 = 0; k2 < q.k[2]; ++k2) {
              const uint32_t wv = static_cast<uint32_t>(wc[(k0 * q.k[1] + k1) * q.k[2] + k2]);
              if (wv == 0) continue;
              const int64_t off2 = k2 * q.d[2] - q.pb[2];
              const TapRange r2 = valid_outputs(off2, q.out[2], q.s[2], q.in[2]);
              const int64_t s2 = q.s[2];
              for (int64_t o0 = r0.lo; o0 < r0.hi; ++o0)
                for (int64_t o1 = r1.lo; o1 < r1.hi; ++o1) {
                  const int64_t i0 = o0 * q.s[0] + off0, i1 = o1 * q.s[1] + off1;
                  const int32_t* xrow = xc + (i0 * q.in[1] + i1) * q.in[2];
                  uint32_t* arow = acc.data() + (o0 * q.out[1] + o1) * q.out[2];
                  for (int64_t o2 = r2.lo; o2 < r2.hi; ++o2)
                    arow[o2] += wv * static_cast<uint32_t>(xrow[o2 * s2 + off2]);
                }
            }
          }
        }
      }
      for (int64_t i = 0; i < out_sz; ++i) *yp++ = static_cast<int32_t>(acc[i]);
    }
  return {y};
}

}  // namespace

void register_conv_integer_ops(OpRegistry& r) {
  OpSchema s;
  s.name = "ConvInteger";
  s.doc = "int32 y = conv(x - x_zero_point, w - w_zero_point), 8-bit x and w (Conv attributes)";
  s.min_inputs = 2;
  s.max_inputs = 4;
  s.attributes = conv_attributes();
  s.infer = infer_conv_integer;
  s.reference = conv_integer_reference;
  add_builtin_op(r, std::move(s));
}

}  // namespace minfer
