// Data-movement ops that only change the shape or the order of elements: Flatten, Reshape,
// Transpose, Identity, Shape, Unsqueeze. They work on any dtype (bytes are copied as is).
#include <cstdint>
#include <cstring>
#include <optional>

#include "ops/builtin_ops.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

// A copy of `x` with a new shape (same element count).
Tensor copy_reshaped(const Tensor& x, const Shape& shape) {
  Tensor y(x.dtype(), shape);
  if (x.nbytes()) std::memcpy(y.raw(), x.raw(), x.nbytes());
  return y;
}

// `s` without symbol names: a tensor's shape is static, the names matter only in inference.
Shape concrete(const Shape& s) {
  Shape r(s.dims());
  return r;
}

// The product of dims [begin, end) of `s`, unknown (-1) if any of them is; a single symbolic
// dim among 1s keeps its name.
void merge_dims(const Shape& s, size_t begin, size_t end, Shape& out, size_t at) {
  int64_t n = 1;
  int unknown = 0;
  size_t last_unknown = 0;
  for (size_t i = begin; i < end; ++i) {
    if (s[i] < 0) {
      ++unknown;
      last_unknown = i;
    } else {
      n *= s[i];
    }
  }
  if (unknown == 0) {
    out[at] = n;
  } else {
    out[at] = Shape::kDynamic;
    if (unknown == 1 && n == 1) set_dim_symbol(out, at, dim_symbol(s, last_unknown));
  }
}

// ---- Flatten -----------------------------------------------------------------------------

Shape flatten_shape(const Node& node, const Shape& x) {
  int64_t r = int64_t(x.rank());
  int64_t axis = node.attrs.get_int("axis", 1);
  if (axis < -r || axis > r)
    op_fail(node, "axis " + std::to_string(axis) + " is out of range for rank " +
                      std::to_string(r) + " (valid: " + std::to_string(-r) + ".." +
                      std::to_string(r) + ")");
  if (axis < 0) axis += r;
  Shape out{1, 1};
  merge_dims(x, 0, size_t(axis), out, 0);
  merge_dims(x, size_t(axis), x.rank(), out, 1);
  return out;
}

void infer_flatten(InferContext& ctx) {
  ctx.set_output(0, ctx.input_dtype(0), flatten_shape(ctx.node(), ctx.input_shape(0)));
}

std::vector<Tensor> flatten_reference(const Node& node, const std::vector<Tensor>& in) {
  return {copy_reshaped(in[0], concrete(flatten_shape(node, in[0].shape())))};
}

// ---- Reshape -----------------------------------------------------------------------------

// The output of reshaping `x` to `spec`: 0 copies the input dim at the same position (unless
// allowzero), one -1 is inferred from the element count. Symbolic dims pass through where
// copied, and a -1 that stands for exactly one symbolic input dim takes it over.
Shape reshape_shape(const Node& node, const Shape& x, const std::vector<int64_t>& spec) {
  bool allowzero = node.attrs.get_int("allowzero", 0) != 0;
  Shape out(std::vector<int64_t>(spec.size(), 1));
  std::vector<bool> copied(x.rank(), false);
  int infer_at = -1;
  int64_t known_out = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == -1) {
      if (infer_at >= 0) op_fail(node, "shape " + ints_to_string(spec) + " has more than one -1");
      infer_at = int(i);
    } else if (d < -1) {
      op_fail(node, "shape " + ints_to_string(spec) + " has an invalid dim " + std::to_string(d));
    } else if (d == 0 && !allowzero) {
      if (i >= x.rank())
        op_fail(node, "shape " + ints_to_string(spec) + " copies dim " + std::to_string(i) +
                          " (0) but the input " + x.to_string() + " has rank " +
                          std::to_string(x.rank()));
      copy_dim(out, i, x, i);
      copied[i] = true;
    } else {
      if (d != 0 && known_out > INT64_MAX / d)  // no tensor is that large
        op_fail(node, "shape " + ints_to_string(spec) + " has too many elements");
      out[i] = d;
      known_out *= d;
    }
  }
  if (allowzero && infer_at >= 0)
    for (int64_t d : spec)
      if (d == 0)
        op_fail(node, "shape " + ints_to_string(spec) + " has both 0 and -1 with allowzero=1");
  // What the non-copied input dims hold: a known product and the unknown dims.
  int64_t known_in = 1;
  std::vector<size_t> unknown_in;
  for (size_t i = 0; i < x.rank(); ++i) {
    if (copied[i]) continue;
    if (x[i] < 0)
      unknown_in.push_back(i);
    else
      known_in *= x[i];
  }
  auto fail_count = [&]() {
    op_fail(node, "cannot reshape input " + x.to_string() + " to " + ints_to_string(spec) +
                      ": the element counts differ");
  };
  if (infer_at >= 0) {
    if (unknown_in.empty()) {
      if (known_out == 0 || known_in % known_out != 0) fail_count();
      out[infer_at] = known_in / known_out;
    } else if (unknown_in.size() == 1 && known_in == known_out) {
      copy_dim(out, infer_at, x, unknown_in[0]);
    } else {
      out[infer_at] = Shape::kDynamic;
    }
  } else if (unknown_in.empty()) {
    // Every output dim is known here (copied dims are equal on both sides).
    if (known_in != known_out) fail_count();
  }
  return out;
}

// When Reshape's shape input is the output of a plain Shape node (as in Reshape(x, Shape(y)),
// which the ONNX importer emits for opset < 13 Softmax), the values are y's dims even when
// some are symbolic; returns them then. Not when a dim is 0 (0 would mean "copy" unless
// allowzero).
std::optional<Shape> shape_of_shape_op(const Node& node) {
  const Value* spec = node.input(1);
  const Node* producer = spec ? spec->producer : nullptr;
  if (!producer || producer->op_type != "Shape" || !producer->domain.empty()) return std::nullopt;
  if (producer->attrs.has("start") || producer->attrs.has("end")) return std::nullopt;
  const Value* y = producer->input(0);
  if (!y || !y->shape_known) return std::nullopt;
  for (int64_t d : y->shape.dims())
    if (d == 0 && node.attrs.get_int("allowzero", 0) == 0) return std::nullopt;
  return y->shape;
}

void infer_reshape(InferContext& ctx) {
  require_dtype(ctx, 1, {DType::i64, DType::i32});
  const Shape& spec_shape = ctx.input_shape(1);
  if (spec_shape.rank() != 1)
    ctx.fail("shape input has shape " + spec_shape.to_string() + "; expected a 1-D tensor");
  if (const Tensor* spec = ctx.input_constant(1)) {
    ctx.set_output(0, ctx.input_dtype(0),
                   reshape_shape(ctx.node(), ctx.input_shape(0),
                                 read_int_tensor(ctx.node(), *spec, "shape input")));
  } else if (std::optional<Shape> same = shape_of_shape_op(ctx.node())) {
    // Reshape(x, Shape(y)): the output has y's shape, symbolic dims included.
    const Shape& x = ctx.input_shape(0);
    if (x.is_static() && same->is_static() && x.numel() != same->numel())
      ctx.fail("cannot reshape input " + x.to_string() + " to " + same->to_string() +
               ": the element counts differ");
    ctx.set_output(0, ctx.input_dtype(0), *same);
  } else if (spec_shape[0] >= 0) {
    // The values come at run time: only the rank is known.
    ctx.set_output(0, ctx.input_dtype(0),
                   Shape(std::vector<int64_t>(spec_shape[0], Shape::kDynamic)));
  } else {
    ctx.fail("shape input is not a constant and its length is unknown");
  }
}

std::vector<Tensor> reshape_reference(const Node& node, const std::vector<Tensor>& in) {
  Shape s = reshape_shape(node, in[0].shape(), read_int_tensor(node, in[1], "shape input"));
  return {copy_reshaped(in[0], concrete(s))};
}

// ---- Transpose ---------------------------------------------------------------------------

std::vector<int64_t> transpose_perm(const Node& node, size_t rank) {
  std::vector<int64_t> perm;
  for (size_t i = rank; i-- > 0;) perm.push_back(int64_t(i));  // default: reverse
  perm = node.attrs.get_ints("perm", perm);
  std::vector<bool> seen(rank, false);
  bool ok = perm.size() == rank;
  for (int64_t p : perm) {
    ok = ok && p >= 0 && p < int64_t(rank) && !seen[p];
    if (ok) seen[p] = true;
  }
  if (!ok)
    op_fail(node, "perm " + ints_to_string(perm) + " is not a permutation of 0.." +
                      std::to_string(int64_t(rank) - 1) + " (input rank " + std::to_string(rank) +
                      ")");
  return perm;
}

void infer_transpose(InferContext& ctx) {
  const Shape& x = ctx.input_shape(0);
  std::vector<int64_t> perm = transpose_perm(ctx.node(), x.rank());
  Shape y(std::vector<int64_t>(x.rank(), 0));
  for (size_t i = 0; i < perm.size(); ++i) copy_dim(y, i, x, perm[i]);
  ctx.set_output(0, ctx.input_dtype(0), y);
}

std::vector<Tensor> transpose_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  std::vector<int64_t> perm = transpose_perm(node, x.rank());
  std::vector<int64_t> dims(x.rank());
  for (size_t i = 0; i < perm.size(); ++i) dims[i] = x.dim(perm[i]);
  Tensor y(x.dtype(), Shape(dims));
  // Output dim i walks input dim perm[i]: gather strides of the input in output order.
  std::vector<int64_t> xst = row_major_strides(x.shape()), st(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) st[i] = xst[perm[i]];
  size_t es = dtype_size(x.dtype());
  const char* xp = static_cast<const char*>(x.raw());
  char* yp = static_cast<char*>(y.raw());
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t i = 0; i < y.numel(); ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < dims.size(); ++d) off += idx[d] * st[d];
    std::memcpy(yp + i * es, xp + off * es, es);
    for (size_t d = dims.size(); d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
  return {y};
}

// ---- Identity, Shape ---------------------------------------------------------------------

std::vector<Tensor> identity_reference(const Node&, const std::vector<Tensor>& in) {
  return {in[0].clone()};
}

// Shape's [start, end) range over the input dims (opset 15 attributes), clamped.
std::pair<int64_t, int64_t> shape_range(const Node& node, int64_t rank) {
  auto clamp = [rank](int64_t v) {
    if (v < 0) v += rank;
    return std::min(std::max<int64_t>(v, 0), rank);
  };
  int64_t start = clamp(node.attrs.get_int("start", 0));
  int64_t end = clamp(node.attrs.get_int("end", rank));
  return {start, std::max(start, end)};
}

void infer_shape(InferContext& ctx) {
  auto [start, end] = shape_range(ctx.node(), int64_t(ctx.input_shape(0).rank()));
  ctx.set_output(0, DType::i64, Shape{end - start});
}

std::vector<Tensor> shape_reference(const Node& node, const std::vector<Tensor>& in) {
  auto [start, end] = shape_range(node, int64_t(in[0].rank()));
  std::vector<int64_t> dims(in[0].shape().dims().begin() + start,
                            in[0].shape().dims().begin() + end);
  return {Tensor::from_vector<int64_t>(dims, Shape{end - start})};
}

// ---- Unsqueeze ---------------------------------------------------------------------------

// Inserts size-1 dims at `axes` (positions in the output, negative counting from its end).
Shape unsqueeze_shape(const Node& node, const Shape& x, const std::vector<int64_t>& axes) {
  int64_t out_rank = int64_t(x.rank() + axes.size());
  std::vector<bool> is_new(out_rank, false);
  for (int64_t a : axes) {
    int64_t n = normalize_axis(node, a, out_rank, "axis");
    if (is_new[n]) op_fail(node, "axes " + ints_to_string(axes) + " has a duplicate");
    is_new[n] = true;
  }
  Shape out(std::vector<int64_t>(out_rank, 1));
  size_t j = 0;
  for (int64_t i = 0; i < out_rank; ++i)
    if (!is_new[i]) copy_dim(out, i, x, j++);
  return out;
}

// Axes come from input 1 (opset >= 13) or the attribute (before).
std::vector<int64_t> unsqueeze_axes(const Node& node, const Tensor* axes_input) {
  if (axes_input) return read_int_tensor(node, *axes_input, "axes input");
  if (!node.attrs.has("axes")) op_fail(node, "needs axes (attribute or input 1)");
  return node.attrs.get_ints("axes");
}

void infer_unsqueeze(InferContext& ctx) {
  const Shape& x = ctx.input_shape(0);
  if (ctx.has_input(1)) {
    require_dtype(ctx, 1, {DType::i64, DType::i32});
    const Shape& as = ctx.input_shape(1);
    if (as.rank() != 1) ctx.fail("axes input has shape " + as.to_string() + "; expected 1-D");
    if (!ctx.input_constant(1)) {
      if (as[0] < 0) ctx.fail("axes input is not a constant and its length is unknown");
      // The rank is known, but not where the new dims go.
      ctx.set_output(0, ctx.input_dtype(0),
                     Shape(std::vector<int64_t>(x.rank() + as[0], Shape::kDynamic)));
      return;
    }
  }
  std::vector<int64_t> axes = unsqueeze_axes(ctx.node(), ctx.input_constant(1));
  ctx.set_output(0, ctx.input_dtype(0), unsqueeze_shape(ctx.node(), x, axes));
}

std::vector<Tensor> unsqueeze_reference(const Node& node, const std::vector<Tensor>& in) {
  std::vector<int64_t> axes = unsqueeze_axes(node, in[1].defined() ? &in[1] : nullptr);
  return {copy_reshaped(in[0], concrete(unsqueeze_shape(node, in[0].shape(), axes)))};
}

OpSchema schema(const char* name, const char* doc, InferFn infer, ReferenceFn ref) {
  OpSchema s;
  s.name = name;
  s.doc = doc;
  s.infer = std::move(infer);
  s.reference = std::move(ref);
  return s;
}

}  // namespace

void register_shape_ops(OpRegistry& r) {
  OpSchema flatten = schema("Flatten", "reshape to 2-D at axis", infer_flatten, flatten_reference);
  flatten.attributes = {"axis"};
  add_builtin_op(r, std::move(flatten));

  OpSchema reshape = schema("Reshape", "reshape to a shape given as input 1 (0 copies, -1 infers)",
                            infer_reshape, reshape_reference);
  reshape.min_inputs = reshape.max_inputs = 2;
  reshape.attributes = {"allowzero"};
  add_builtin_op(r, std::move(reshape));

  OpSchema transpose =
      schema("Transpose", "permute dims (default: reverse)", infer_transpose, transpose_reference);
  transpose.attributes = {"perm"};
  add_builtin_op(r, std::move(transpose));

  add_builtin_op(
      r, schema(
             "Identity", "copy of the input",
             [](InferContext& ctx) { ctx.set_output(0, ctx.input_dtype(0), ctx.input_shape(0)); },
             identity_reference));

  OpSchema shape =
      schema("Shape", "the input's dims as an i64 tensor", infer_shape, shape_reference);
  shape.attributes = {"start", "end"};
  add_builtin_op(r, std::move(shape));

  OpSchema unsqueeze = schema("Unsqueeze", "insert size-1 dims at axes (input or attribute)",
                              infer_unsqueeze, unsqueeze_reference);
  unsqueeze.max_inputs = 2;
  unsqueeze.attributes = {"axes"};
  add_builtin_op(r, std::move(unsqueeze));
}

}  // namespace minfer
