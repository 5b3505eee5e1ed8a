// Resize (opset 11+ form: X, roi, scales, sizes): nearest, linear and cubic interpolation with
// the ONNX coordinate transformation modes; `axes` (18) limits scales/sizes to some dims.
// The importer maps Resize-10 and Upsample-7/9 to this form. Interpolation is separable, so
// the reference resizes one dim at a time, in double.
#include "ops/resize.h"

#include <cmath>

#include "ops/builtin_ops.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

const char* const kCoordModes[] = {"half_pixel", "pytorch_half_pixel",   "align_corners",
                                   "asymmetric", "tf_half_pixel_for_nn", "half_pixel_symmetric"};
const char* const kNearestModes[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};

template <size_t N>
bool one_of(const std::string& s, const char* const (&list)[N]) {
  for (const char* v : list)
    if (s == v) return true;
  return false;
}

}  // namespace

ResizeAttrs resize_attrs(const Node& node) {
  ResizeAttrs a;
  a.mode = node.attrs.get_string("mode", "nearest");
  a.coord = node.attrs.get_string("coordinate_transformation_mode", "half_pixel");
  a.nearest = node.attrs.get_string("nearest_mode", "round_prefer_floor");
  a.cubic_a = node.attrs.get_float("cubic_coeff_a", -0.75f);
  a.exclude_outside = node.attrs.get_int("exclude_outside", 0) != 0;
  op_require(node, a.mode == "nearest" || a.mode == "linear" || a.mode == "cubic",
             "mode '" + a.mode + "' is not one of nearest, linear, cubic");
  if (a.coord == "tf_crop_and_resize")
    throw Error(ErrorCode::Unsupported,
                node.describe() +
                    ": coordinate_transformation_mode 'tf_crop_and_resize' is not "
                    "supported");
  op_require(node, one_of(a.coord, kCoordModes),
             "coordinate_transformation_mode '" + a.coord + "' is not a known mode");
  op_require(node, one_of(a.nearest, kNearestModes),
             "nearest_mode '" + a.nearest + "' is not a known mode");
  if (node.attrs.get_int("antialias", 0) != 0)
    throw Error(ErrorCode::Unsupported, node.describe() + ": antialias=1 is not supported");
  const std::string policy = node.attrs.get_string("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch")
    throw Error(ErrorCode::Unsupported,
                node.describe() + ": keep_aspect_ratio_policy '" + policy + "' is not supported");
  return a;
}

namespace {

// The dims `axes` names (all dims without it), each once.
std::vector<size_t> resize_axes(const Node& node, size_t rank) {
  std::vector<size_t> axes;
  if (!node.attrs.has("axes")) {
    for (size_t i = 0; i < rank; ++i) axes.push_back(i);
    return axes;
  }
  for (int64_t a : node.attrs.get_ints("axes")) {
    const size_t d = size_t(normalize_axis(node, a, int64_t(rank), "axes"));
    for (size_t e : axes)
      op_require(node, e != d, "axes names dim " + std::to_string(d) + " twice");
    axes.push_back(d);
  }
  return axes;
}

bool is_empty(const Tensor* t) { return !t || t->numel() == 0; }

}  // namespace

ResizePlan resize_plan(const Node& node, const std::vector<int64_t>& in_dims, const Tensor* scales,
                       const Tensor* sizes) {
  const size_t rank = in_dims.size();
  const std::vector<size_t> axes = resize_axes(node, rank);
  ResizePlan p{std::vector<double>(rank, 1.0), in_dims};
  op_require(node, is_empty(scales) != is_empty(sizes),
             "exactly one of scales and sizes must be given (non-empty)");
  if (!is_empty(scales)) {
    op_require(node, scales->dtype() == DType::f32, "scales must be f32");
    op_require(node, size_t(scales->numel()) == axes.size(),
               "scales has " + std::to_string(scales->numel()) + " values for " +
                   std::to_string(axes.size()) + " resized dims");
    for (size_t k = 0; k < axes.size(); ++k) {
      const double s = scales->data<float>()[k];
      op_require(node, s > 0, "scales must be positive, got " + std::to_string(s));
      p.scale[axes[k]] = s;
      // floor, but a product like 3 * 1.3333334f lands just under 4: allow for float rounding.
      p.out[axes[k]] = int64_t(std::floor(double(in_dims[axes[k]]) * s + 1e-5));
    }
  } else {
    std::vector<int64_t> v = read_int_tensor(node, *sizes, "sizes");
    op_require(node, v.size() == axes.size(),
               "sizes has " + std::to_string(v.size()) + " values for " +
                   std::to_string(axes.size()) + " resized dims");
    for (size_t k = 0; k < axes.size(); ++k) {
      op_require(node, v[k] > 0, "sizes " + ints_to_string(v) + " has a non-positive value");
      p.out[axes[k]] = v[k];
      p.scale[axes[k]] = double(v[k]) / double(in_dims[axes[k]]);
    }
  }
  return p;
}

namespace {

void infer_resize(InferContext& ctx) {
  resize_attrs(ctx.node());
  require_dtype(ctx, 0, {DType::f32});
  const Shape& x = ctx.input_shape(0);
  if (ctx.has_input(2)) require_dtype(ctx, 2, {DType::f32});
  if (ctx.has_input(3)) require_dtype(ctx, 3, {DType::i64});
  const Tensor* scales = ctx.input_constant(2);
  const Tensor* sizes = ctx.input_constant(3);
  const bool scales_known = !ctx.has_input(2) || scales || ctx.input_shape(2).numel() == 0;
  const bool sizes_known = !ctx.has_input(3) || sizes;
  if (!x.is_static() || !scales_known || !sizes_known) {
    // Output dims known at plan time only (the usual sizes-from-Shape pattern).
    ctx.set_output(0, DType::f32, Shape(std::vector<int64_t>(x.rank(), Shape::kDynamic)));
    return;
  }
  const ResizePlan p = resize_plan(ctx.node(), x.dims(), scales, sizes);
  Shape out(p.out);
  for (size_t d = 0; d < x.rank(); ++d)
    if (p.out[d] == x[d] && p.scale[d] == 1.0) copy_dim(out, d, x, d);
  ctx.set_output(0, DType::f32, out);
}

// Where output coordinate `o` of a dim (in -> out, scale) falls in the input.
double source_coord(const std::string& mode, double o, int64_t in, int64_t out, double scale) {
  if (mode == "half_pixel") return (o + 0.5) / scale - 0.5;
  if (mode == "pytorch_half_pixel") return out > 1 ? (o + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners") return out == 1 ? 0.0 : o * double(in - 1) / double(out - 1);
  if (mode == "asymmetric") return o / scale;
  if (mode == "tf_half_pixel_for_nn") return (o + 0.5) / scale;
  // half_pixel_symmetric (19)
  const double adjustment = double(out) / (scale * double(in));
  const double center = double(in) / 2.0;
  return center * (1.0 - adjustment) + (o + 0.5) / scale - 0.5;
}

int64_t nearest_index(const std::string& mode, double x) {
  const double f = std::floor(x);
  if (mode == "floor") return int64_t(f);
  if (mode == "ceil") return int64_t(std::ceil(x));
  if (x - f == 0.5) return int64_t(mode == "round_prefer_floor" ? f : f + 1);
  return int64_t(std::round(x));
}

double cubic_weight(double t, double a) {  // Keys' kernel at distance t >= 0
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

}  // namespace

ResizeTaps resize_taps(const ResizeAttrs& a, int64_t o, int64_t in, int64_t out, double scale) {
  const double x = source_coord(a.coord, double(o), in, out, scale);
  auto clamp = [in](int64_t i) { return std::min(std::max<int64_t>(i, 0), in - 1); };
  ResizeTaps t;
  if (a.mode == "nearest") {
    t.emplace_back(clamp(nearest_index(a.nearest, x)), 1.0);
  } else if (a.mode == "linear") {
    const double xc = std::min(std::max(x, 0.0), double(in - 1));
    const int64_t i0 = int64_t(std::floor(xc));
    const double w = xc - double(i0);
    t.emplace_back(i0, 1.0 - w);
    if (w != 0) t.emplace_back(clamp(i0 + 1), w);
  } else {
    const int64_t i0 = int64_t(std::floor(x));
    const double f = x - double(i0);
    double total = 0;
    for (int64_t k = -1; k <= 2; ++k) {
      const int64_t i = i0 + k;
      double w = cubic_weight(std::fabs(f - double(k)), a.cubic_a);
      if (a.exclude_outside && (i < 0 || i >= in)) w = 0;
      total += w;
      if (w != 0) t.emplace_back(clamp(i), w);
    }
    if (a.exclude_outside && total != 0)
      for (auto& p : t) p.second /= total;
  }
  return t;
}

namespace {

// Resizes dim d of x (row-major, f64) to `out` elements.
std::vector<double> resize_dim(const std::vector<double>& x, std::vector<int64_t>& dims, size_t d,
                               const ResizeAttrs& a, int64_t out, double scale) {
  const int64_t in = dims[d];
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < d; ++i) outer *= dims[i];
  for (size_t i = d + 1; i < dims.size(); ++i) inner *= dims[i];
  std::vector<ResizeTaps> taps(out);
  for (int64_t o = 0; o < out; ++o) taps[o] = resize_taps(a, o, in, out, scale);
  std::vector<double> y(size_t(outer * out * inner), 0.0);
  for (int64_t r = 0; r < outer; ++r)
    for (int64_t o = 0; o < out; ++o)
      for (const auto& [i, w] : taps[o]) {
        const double* src = x.data() + (r * in + i) * inner;
        double* dst = y.data() + (r * out + o) * inner;
        for (int64_t k = 0; k < inner; ++k) dst[k] += w * src[k];
      }
  dims[d] = out;
  return y;
}

std::vector<Tensor> resize_reference(const Node& node, const std::vector<Tensor>& in) {
  const ResizeAttrs a = resize_attrs(node);
  const Tensor& x = in[0];
  const Tensor* scales = in.size() > 2 && in[2].defined() ? &in[2] : nullptr;
  const Tensor* sizes = in.size() > 3 && in[3].defined() ? &in[3] : nullptr;
  const ResizePlan p = resize_plan(node, x.shape().dims(), scales, sizes);
  std::vector<int64_t> dims = x.shape().dims();
  std::vector<double> v(x.data<float>(), x.data<float>() + x.numel());
  for (size_t d = 0; d < dims.size(); ++d) {
    if (!p.keeps(d, dims, a)) v = resize_dim(v, dims, d, a, p.out[d], p.scale[d]);
  }
  Tensor y(DType::f32, Shape(p.out));
  float* yp = y.data<float>();
  for (int64_t i = 0; i < y.numel(); ++i) yp[i] = static_cast<float>(v[i]);
  return {y};
}

}  // namespace

void register_resize_op(OpRegistry& r) {
  OpSchema s;
  s.name = "Resize";
  s.doc = "nearest/linear/cubic resize to scales or sizes (opset 11+ form)";
  s.min_inputs = 1;
  s.max_inputs = 4;
  s.attributes = {"mode",
                  "coordinate_transformation_mode",
                  "nearest_mode",
                  "cubic_coeff_a",
                  "exclude_outside",
                  "extrapolation_value",
                  "antialias",
                  "axes",
                  "keep_aspect_ratio_policy"};
  s.infer = infer_resize;
  s.reference = resize_reference;
  add_builtin_op(r, std::move(s));
}

}  // namespace minfer
