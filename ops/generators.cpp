// Ops that make a tensor from a description rather than from input data: ConstantOfShape
// (a filled tensor of a given shape) and Range (an arithmetic sequence). Exporters emit them
// for shape arithmetic and for zero-filled initial states; once their inputs are constants the
// constant folding pass (or the planner) evaluates them, so they rarely run.
#include <cmath>
#include <cstring>

#include "ops/builtin_ops.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

// ---- ConstantOfShape ------------------------------------------------------------------

// The fill value: the one-element `value` attribute, a float 0 when absent.
Tensor fill_value(const Node& node) {
  if (!node.attrs.has("value")) return Tensor::scalar<float>(0.f);
  const Tensor* v = nullptr;
  try {
    v = node.attrs.get_tensor("value");
  } catch (const Error&) {
    op_fail(node, "attribute 'value' must be a tensor");
  }
  op_require(node, v->numel() == 1,
             "attribute 'value' must hold exactly one element, got shape " +
                 v->shape().to_string());
  return *v;
}

// The output dims from the values of the shape input; negative dims are an error.
Shape filled_shape(const Node& node, const Tensor& spec) {
  std::vector<int64_t> dims = read_int_tensor(node, spec, "shape input");
  for (int64_t d : dims)
    op_require(node, d >= 0, "shape " + ints_to_string(dims) + " has a negative dim");
  return Shape(dims);
}

void infer_constant_of_shape(InferContext& ctx) {
  require_dtype(ctx, 0, {DType::i64});
  const Shape& spec = ctx.input_shape(0);
  if (spec.rank() != 1)
    ctx.fail("shape input has shape " + spec.to_string() + "; expected a 1-D tensor");
  const DType dtype = fill_value(ctx.node()).dtype();
  if (const Tensor* t = ctx.input_constant(0)) {
    ctx.set_output(0, dtype, filled_shape(ctx.node(), *t));
  } else if (spec[0] >= 0) {
    // The values come at run time (usually from Shape): only the rank is known.
    ctx.set_output(0, dtype, Shape(std::vector<int64_t>(spec[0], Shape::kDynamic)));
  } else {
    ctx.fail("shape input is not a constant and its length is unknown");
  }
}

std::vector<Tensor> constant_of_shape_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor value = fill_value(node);
  Tensor y(value.dtype(), filled_shape(node, in[0]));
  const size_t es = dtype_size(value.dtype());
  char* p = static_cast<char*>(y.raw());
  for (int64_t i = 0; i < y.numel(); ++i) std::memcpy(p + i * es, value.raw(), es);
  return {y};
}

// ---- Range ----------------------------------------------------------------------------

const std::vector<DType> kRangeTypes{DType::f32, DType::i32, DType::i64};

// max(ceil((limit - start) / delta), 0), computed in double as ONNX Runtime does.
template <typename T>
int64_t range_count(const Node& node, T start, T limit, T delta) {
  op_require(node, delta != T(0), "delta is 0");
  const double n = std::ceil((double(limit) - double(start)) / double(delta));
  op_require(node, std::isfinite(n), "start, limit and delta must be finite");
  op_require(node, n < double(int64_t{1} << 40), "the range has too many elements");
  return n > 0 ? static_cast<int64_t>(n) : 0;
}

void infer_range(InferContext& ctx) {
  require_dtype(ctx, 0, kRangeTypes);
  for (size_t i = 0; i < 3; ++i) {
    require_same_dtype(ctx, 0, i);
    const Shape& s = ctx.input_shape(i);
    if (!(s.rank() == 0 || (s.rank() == 1 && s[0] == 1)))
      ctx.fail(std::string(i == 0 ? "start" : i == 1 ? "limit" : "delta") + " has shape " +
               s.to_string() + "; expected a scalar");
  }
  const Tensor *a = ctx.input_constant(0), *b = ctx.input_constant(1), *c = ctx.input_constant(2);
  if (!a || !b || !c) {  // the length depends on values known at run time
    ctx.set_output(0, ctx.input_dtype(0), Shape{Shape::kDynamic});
    return;
  }
  const int64_t n = dispatch_types<float, int32_t, int64_t>(ctx.node(), a->dtype(), [&](auto z) {
    using T = decltype(z);
    return range_count<T>(ctx.node(), a->data<T>()[0], b->data<T>()[0], c->data<T>()[0]);
  });
  ctx.set_output(0, ctx.input_dtype(0), Shape{n});
}

std::vector<Tensor> range_reference(const Node& node, const std::vector<Tensor>& in) {
  return dispatch_types<float, int32_t, int64_t>(node, in[0].dtype(), [&](auto z) {
    using T = decltype(z);
    const T start = in[0].data<T>()[0], delta = in[2].data<T>()[0];
    const int64_t n = range_count<T>(node, start, in[1].data<T>()[0], delta);
    Tensor y(in[0].dtype(), Shape{n});
    // start + i * delta (not a running sum, which would drift for floats).
    for (int64_t i = 0; i < n; ++i) y.data<T>()[i] = static_cast<T>(start + T(i) * delta);
    return std::vector<Tensor>{y};
  });
}

}  // namespace

void register_generator_ops(OpRegistry& r) {
  OpSchema cos;
  cos.name = "ConstantOfShape";
  cos.doc = "a tensor of the shape given as input 0, filled with the value attribute";
  cos.attributes = {"value"};
  cos.infer = infer_constant_of_shape;
  cos.reference = constant_of_shape_reference;
  add_builtin_op(r, std::move(cos));

  OpSchema range;
  range.name = "Range";
  range.doc = "start, start + delta, ... up to (not including) limit";
  range.min_inputs = range.max_inputs = 3;
  range.infer = infer_range;
  range.reference = range_reference;
  add_builtin_op(r, std::move(range));
}

}  // namespace minfer
