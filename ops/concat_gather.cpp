// Concat and Gather: schemas and reference kernels (any dtype; bytes are copied as is).
#include <cstring>

#include "ops/builtin_ops.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

// ---- Concat ------------------------------------------------------------------------------

Shape concat_shape(const Node& node, const std::vector<const Shape*>& shapes) {
  const Shape& first = *shapes[0];
  int64_t r = int64_t(first.rank());
  if (r == 0) op_fail(node, "cannot concatenate scalars (inputs must have rank >= 1)");
  if (!node.attrs.has("axis")) op_fail(node, "required attribute axis is missing");
  size_t axis = normalize_axis(node, node.attrs.get_int("axis", 0), r, "axis");
  Shape out = first;
  out.symbols.clear();
  for (size_t d = 0; d < first.rank(); ++d) set_dim_symbol(out, d, dim_symbol(first, d));
  for (size_t k = 1; k < shapes.size(); ++k) {
    const Shape& s = *shapes[k];
    if (s.rank() != first.rank())
      op_fail(node, "input " + std::to_string(k) + " has shape " + s.to_string() +
                        " but input 0 has " + first.to_string() + " (ranks differ)");
    for (size_t d = 0; d < s.rank(); ++d) {
      if (d == axis) {
        out[d] = (out[d] < 0 || s[d] < 0) ? Shape::kDynamic : out[d] + s[d];
        continue;
      }
      if (!dims_compatible(out[d], s[d]))
        op_fail(node, "input " + std::to_string(k) + " has shape " + s.to_string() +
                          ", incompatible with " + first.to_string() + " in dim " +
                          std::to_string(d) + " (only axis " + std::to_string(axis) +
                          " may differ)");
      if (out[d] < 0 && s[d] >= 0) out[d] = s[d];
    }
  }
  if (shapes.size() > 1 && axis < out.symbols.size()) out.symbols[axis].clear();  // a new size
  return out;
}

void infer_concat(InferContext& ctx) {
  std::vector<const Shape*> shapes;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) ctx.fail("input " + std::to_string(i) + " is missing");
    require_same_dtype(ctx, 0, i);
    shapes.push_back(&ctx.input_shape(i));
  }
  ctx.set_output(0, ctx.input_dtype(0), concat_shape(ctx.node(), shapes));
}

std::vector<Tensor> concat_reference(const Node& node, const std::vector<Tensor>& in) {
  std::vector<const Shape*> shapes;
  for (const Tensor& t : in) shapes.push_back(&t.shape());
  Shape s = concat_shape(node, shapes);
  size_t axis = normalize_axis(node, node.attrs.get_int("axis", 0), int64_t(s.rank()), "axis");
  Tensor y(in[0].dtype(), Shape(s.dims()));
  size_t es = dtype_size(y.dtype());
  int64_t outer = dims_product(s, 0, axis), inner = dims_product(s, axis + 1, s.rank());
  char* yp = static_cast<char*>(y.raw());
  // Each outer slice of the output is the inputs' outer slices, one after another.
  for (int64_t o = 0; o < outer; ++o)
    for (const Tensor& t : in) {
      size_t chunk = size_t(t.dim(axis) * inner) * es;
      if (chunk) std::memcpy(yp, static_cast<const char*>(t.raw()) + o * chunk, chunk);
      yp += chunk;
    }
  return {y};
}

// ---- Gather ------------------------------------------------------------------------------

Shape gather_shape(const Node& node, const Shape& data, const Shape& indices, size_t* axis_out) {
  if (data.rank() == 0) op_fail(node, "data must have rank >= 1");
  size_t axis = normalize_axis(node, node.attrs.get_int("axis", 0), int64_t(data.rank()), "axis");
  Shape out;
  auto append = [&out](const Shape& s, size_t d) {
    out.dims().push_back(s[d]);
    set_dim_symbol(out, out.rank() - 1, dim_symbol(s, d));
  };
  for (size_t d = 0; d < axis; ++d) append(data, d);
  for (size_t d = 0; d < indices.rank(); ++d) append(indices, d);
  for (size_t d = axis + 1; d < data.rank(); ++d) append(data, d);
  if (axis_out) *axis_out = axis;
  return out;
}

void infer_gather(InferContext& ctx) {
  require_dtype(ctx, 1, {DType::i32, DType::i64});
  ctx.set_output(0, ctx.input_dtype(0),
                 gather_shape(ctx.node(), ctx.input_shape(0), ctx.input_shape(1), nullptr));
}

std::vector<Tensor> gather_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor &data = in[0], &indices = in[1];
  size_t axis = 0;
  Shape s = gather_shape(node, data.shape(), indices.shape(), &axis);
  Tensor y(data.dtype(), Shape(s.dims()));
  std::vector<int64_t> idx = read_int_tensor(node, indices, "indices");
  int64_t n = data.dim(axis);
  int64_t outer = dims_product(data.shape(), 0, axis);
  size_t es = dtype_size(data.dtype());
  size_t inner_bytes = size_t(dims_product(data.shape(), axis + 1, data.rank())) * es;
  const char* dp = static_cast<const char*>(data.raw());
  char* yp = static_cast<char*>(y.raw());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t v : idx) {
      if (v < -n || v >= n)
        throw Error(ErrorCode::InvalidArgument, node.describe() + ": index " + std::to_string(v) +
                                                    " is out of range for axis " +
                                                    std::to_string(axis) + " of size " +
                                                    std::to_string(n));
      if (v < 0) v += n;
      if (inner_bytes) std::memcpy(yp, dp + (o * n + v) * inner_bytes, inner_bytes);
      yp += inner_bytes;
    }
  return {y};
}

}  // namespace

void register_concat_gather_ops(OpRegistry& r) {
  OpSchema concat;
  concat.name = "Concat";
  concat.doc = "join inputs along axis";
  concat.max_inputs = 1 << 20;  // variadic
  concat.attributes = {"axis"};
  concat.infer = infer_concat;
  concat.reference = concat_reference;
  add_builtin_op(r, std::move(concat));

  OpSchema gather;
  gather.name = "Gather";
  gather.doc = "take entries along axis at the given (possibly negative) indices";
  gather.min_inputs = gather.max_inputs = 2;
  gather.attributes = {"axis"};
  gather.infer = infer_gather;
  gather.reference = gather_reference;
  add_builtin_op(r, std::move(gather));
}

}  // namespace minfer
