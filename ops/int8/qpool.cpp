// com.minfer:QMaxPool, QAveragePool and QGlobalAveragePool: schemas and reference kernels
// (docs/int8.md, "Pooling"). The window geometry is ONNX MaxPool/AveragePool's.
#include <limits>

#include "ops/builtin_ops.h"
#include "ops/conv_geometry.h"
#include "ops/int8/int8_ops.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

void infer_window(InferContext& ctx, bool average) {
  require_dtype(ctx, 0, {DType::i8});
  const bool nhwc = int8::is_nhwc(ctx.node());
  const Shape& x = ctx.input_shape(0);
  ctx.require(x.rank() >= 3, "input must have rank >= 3, got " + x.to_string());
  const Shape xc = nhwc ? int8::nhwc_to_nchw_shape(x) : x;
  PoolGeometry g = pool_geometry(ctx.node(), xc);
  ctx.require(g.rank() <= 3, "pooling over more than 3 spatial dims is not supported");
  if (average) int8::parse_pool_stage(ctx.node());
  Shape y = window_output_shape(g, xc, xc[1]);
  ctx.set_output(0, DType::i8, nhwc ? int8::nchw_to_nhwc_shape(y) : y);
}

// Visits every output position of an NCHW int8 tensor with its window's taps:
// f(output index, plane pointer, list of in-bounds offsets, count with padding).
template <typename F>
void for_each_window(const Tensor& x, const PoolGeometry& g, F&& f) {
  Window3 q = to_window3(g);
  const int8_t* xp = x.data<int8_t>();
  int64_t planes = x.dim(0) * x.dim(1), in_sz = q.in[0] * q.in[1] * q.in[2];
  auto inside = [&](int d, int64_t i) { return i >= 0 && i < q.in[d]; };
  auto in_padded = [&](int d, int64_t i) { return i >= -q.pb[d] && i < q.in[d] + q.pe[d]; };
  int64_t out = 0;
  std::vector<int64_t> taps;
  for (int64_t nc = 0; nc < planes; ++nc)
    for (int64_t o0 = 0; o0 < q.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < q.out[1]; ++o1)
        for (int64_t o2 = 0; o2 < q.out[2]; ++o2, ++out) {
          taps.clear();
          int64_t padded = 0;
          for (int64_t k0 = 0; k0 < q.k[0]; ++k0) {
            int64_t i0 = o0 * q.s[0] - q.pb[0] + k0 * q.d[0];
            for (int64_t k1 = 0; k1 < q.k[1]; ++k1) {
              int64_t i1 = o1 * q.s[1] - q.pb[1] + k1 * q.d[1];
              for (int64_t k2 = 0; k2 < q.k[2]; ++k2) {
                int64_t i2 = o2 * q.s[2] - q.pb[2] + k2 * q.d[2];
                if (inside(0, i0) && inside(1, i1) && inside(2, i2))
                  taps.push_back((i0 * q.in[1] + i1) * q.in[2] + i2);
                else if (in_padded(0, i0) && in_padded(1, i1) && in_padded(2, i2))
                  ++padded;
              }
            }
          }
          f(out, xp + nc * in_sz, taps, padded);
        }
}

std::vector<Tensor> qmaxpool_reference(const Node& node, const std::vector<Tensor>& in) {
  const bool nhwc = int8::is_nhwc(node);
  const Tensor x = nhwc ? int8::nhwc_to_nchw(in[0]) : in[0];
  PoolGeometry g = pool_geometry(node, x.shape());
  Tensor y(DType::i8, window_output_shape(g, x.shape(), x.dim(1)));
  int8_t* yp = y.data<int8_t>();
  for_each_window(
      x, g, [&](int64_t o, const int8_t* plane, const std::vector<int64_t>& taps, int64_t) {
        int32_t best = std::numeric_limits<int8_t>::min();  // an all-padding window gives -128
        for (int64_t t : taps) best = std::max<int32_t>(best, plane[t]);
        yp[o] = static_cast<int8_t>(best);
      });
  return {nhwc ? int8::nchw_to_nhwc(y) : y};
}

std::vector<Tensor> qavgpool_reference(const Node& node, const std::vector<Tensor>& in) {
  const bool nhwc = int8::is_nhwc(node);
  const Tensor x = nhwc ? int8::nhwc_to_nchw(in[0]) : in[0];
  PoolGeometry g = pool_geometry(node, x.shape());
  const int8::PoolStage st = int8::parse_pool_stage(node);
  Tensor y(DType::i8, window_output_shape(g, x.shape(), x.dim(1)));
  int8_t* yp = y.data<int8_t>();
  for_each_window(
      x, g, [&](int64_t o, const int8_t* plane, const std::vector<int64_t>& taps, int64_t padded) {
        int64_t count = static_cast<int64_t>(taps.size()) + (g.count_include_pad ? padded : 0);
        if (count == 0) {
          yp[o] = static_cast<int8_t>(st.y_zero_point);
          return;
        }
        int32_t sum = 0;
        for (int64_t t : taps) sum += plane[t] - st.x_zero_point;
        yp[o] = int8::requantize_clamp(sum, int8::pool_multiplier(st, count), st.y_zero_point,
                                       int8::kQMin, int8::kQMax);
      });
  return {nhwc ? int8::nchw_to_nhwc(y) : y};
}

void infer_qgap(InferContext& ctx) {
  require_dtype(ctx, 0, {DType::i8, DType::f32});
  const bool nhwc = int8::is_nhwc(ctx.node());
  const Shape& x = ctx.input_shape(0);
  ctx.require(x.rank() >= 3, "input must have rank >= 3, got " + x.to_string());
  int8::parse_pool_stage(ctx.node());
  Shape y(std::vector<int64_t>(x.rank(), 1));
  copy_dim(y, 0, x, 0);
  const size_t c = nhwc ? x.rank() - 1 : 1;
  copy_dim(y, c, x, c);
  ctx.set_output(0, DType::i8, y);
}

std::vector<Tensor> qgap_reference(const Node& node, const std::vector<Tensor>& in) {
  const bool nhwc = int8::is_nhwc(node);
  const int8::PoolStage st = int8::parse_pool_stage(node);
  // A float input quantized with the pool's x_scale and x_zero_point, as QuantizeLinear would.
  const Tensor q = in[0].dtype() == DType::f32
                       ? int8::quantize_to_int8(in[0], st.x_scale, st.x_zero_point)
                       : in[0];
  const Tensor x = nhwc ? int8::nhwc_to_nchw(q) : q;
  std::vector<int64_t> dims(x.rank(), 1);
  dims[0] = x.dim(0);
  dims[1] = x.dim(1);
  Tensor y(DType::i8, Shape(dims));
  const int64_t planes = x.dim(0) * x.dim(1), sz = dims_product(x.shape(), 2, x.rank());
  const int8::Multiplier mult = int8::pool_multiplier(st, std::max<int64_t>(sz, 1));
  const int8_t* xp = x.data<int8_t>();
  int8_t* yp = y.data<int8_t>();
  for (int64_t p = 0; p < planes; ++p) {
    int32_t sum = 0;
    for (int64_t i = 0; i < sz; ++i) sum += xp[p * sz + i] - st.x_zero_point;
    yp[p] = int8::requantize_clamp(sum, mult, st.y_zero_point, int8::kQMin, int8::kQMax);
  }
  return {nhwc ? int8::nchw_to_nhwc(y) : y};
}

const std::vector<std::string> kPoolStage = {"x_scale", "x_zero_point", "y_scale", "y_zero_point",
                                             "layout"};

}  // namespace

void register_qpool_ops(OpRegistry& r) {
  OpSchema maxp;
  maxp.domain = kMinferDomain;
  maxp.name = "QMaxPool";
  maxp.doc = "MaxPool on int8 values (the output keeps the input's scale and zero point)";
  maxp.attributes = {"auto_pad", "ceil_mode", "dilations", "kernel_shape",
                     "pads",     "strides",   "layout"};
  maxp.infer = [](InferContext& ctx) { infer_window(ctx, false); };
  maxp.reference = qmaxpool_reference;
  add_builtin_op(r, std::move(maxp));

  OpSchema avgp;
  avgp.domain = kMinferDomain;
  avgp.name = "QAveragePool";
  avgp.doc = "int8 AveragePool: integer window sums requantized by s_x / (s_y * count)";
  avgp.attributes = {"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape",
                     "pads",     "strides"};
  avgp.attributes.insert(avgp.attributes.end(), kPoolStage.begin(), kPoolStage.end());
  avgp.infer = [](InferContext& ctx) { infer_window(ctx, true); };
  avgp.reference = qavgpool_reference;
  add_builtin_op(r, std::move(avgp));

  OpSchema gap;
  gap.domain = kMinferDomain;
  gap.name = "QGlobalAveragePool";
  gap.doc =
      "int8 GlobalAveragePool: integer sums requantized by s_x / (s_y * H * W); a float "
      "input is quantized first with x_scale and x_zero_point (QuantizeLinear to int8)";
  gap.attributes = kPoolStage;
  gap.infer = infer_qgap;
  gap.reference = qgap_reference;
  add_builtin_op(r, std::move(gap));
}

}  // namespace minfer
