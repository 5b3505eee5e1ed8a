// Squeeze (drop size-1 dims) and Split (cut along an axis into several outputs), any dtype.
// Their axes/split sizes are attributes before opset 13 and inputs from 13; Split's
// num_outputs attribute (18) allows a smaller last chunk. As for Unsqueeze, which form a node
// uses is visible on the node, so the schemas need no opset.
#include <cstring>
#include <optional>

#include "ops/builtin_ops.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

// Reads a 1-D int input (`what`) or, when absent, the ints attribute of the same name; null
// when neither is given. Fails when both are.
std::optional<std::vector<int64_t>> ints_input_or_attr(const Node& node, const Tensor* input,
                                                       bool has_input, const char* what) {
  if (has_input && node.attrs.has(what))
    op_fail(node, std::string("gives ") + what + " both as an attribute and as an input; use one");
  if (input) return read_int_tensor(node, *input, std::string(what) + " input");
  if (node.attrs.has(what)) return node.attrs.get_ints(what);
  return std::nullopt;
}

void check_1d_int_input(const InferContext& ctx, size_t i, const char* what) {
  require_dtype(ctx, i, {DType::i64});
  const Shape& s = ctx.input_shape(i);
  if (s.rank() != 1) ctx.fail(std::string(what) + " input has shape " + s.to_string() + "; expected 1-D");
}

// ---- Squeeze ------------------------------------------------------------------------------

// Which dims go: the given axes (each must be a size-1 dim where known), or every size-1 dim.
std::vector<bool> squeezed_dims(const Node& node, const Shape& x,
                                const std::optional<std::vector<int64_t>>& axes) {
  std::vector<bool> drop(x.rank(), false);
  if (!axes) {
    for (size_t d = 0; d < x.rank(); ++d) {
      op_require(node, x[d] >= 0,
                 "without axes every dim must be known to find the size-1 ones, but dim " +
                     std::to_string(d) + " of " + x.to_string() + " is not; give axes");
      drop[d] = x[d] == 1;
    }
    return drop;
  }
  for (int64_t a : *axes) {
    const size_t d = normalize_axis(node, a, int64_t(x.rank()), "axis");
    op_require(node, !drop[d], "axes " + ints_to_string(*axes) + " has a duplicate");
    op_require(node, x[d] == 1 || x[d] < 0,
               "cannot squeeze dim " + std::to_string(d) + " of " + x.to_string() +
                   ": its size is not 1");
    drop[d] = true;
  }
  return drop;
}

Shape squeezed_shape(const Shape& x, const std::vector<bool>& drop) {
  Shape out(std::vector<int64_t>{});
  for (size_t d = 0; d < x.rank(); ++d)
    if (!drop[d]) {
      out.dims().push_back(x[d]);
      set_dim_symbol(out, out.rank() - 1, dim_symbol(x, d));
    }
  return out;
}

void infer_squeeze(InferContext& ctx) {
  if (ctx.has_input(1)) {
    check_1d_int_input(ctx, 1, "axes");
    if (!ctx.input_constant(1)) {
      const int64_t n = ctx.input_shape(1)[0], rank = int64_t(ctx.input_shape(0).rank());
      if (n < 0) ctx.fail("axes input is not a constant and its length is unknown");
      if (n > rank)
        ctx.fail("axes input has " + std::to_string(n) + " values, the input has rank " +
                 std::to_string(rank));
      ctx.set_output(0, ctx.input_dtype(0), Shape(std::vector<int64_t>(rank - n, Shape::kDynamic)));
      return;
    }
  }
  const auto axes = ints_input_or_attr(ctx.node(), ctx.input_constant(1), ctx.has_input(1), "axes");
  const Shape& x = ctx.input_shape(0);
  ctx.set_output(0, ctx.input_dtype(0), squeezed_shape(x, squeezed_dims(ctx.node(), x, axes)));
}

std::vector<Tensor> squeeze_reference(const Node& node, const std::vector<Tensor>& in) {
  const auto axes = ints_input_or_attr(node, in[1].defined() ? &in[1] : nullptr, in[1].defined(),
                                       "axes");
  const Shape x(in[0].shape().dims());
  Tensor y(in[0].dtype(), squeezed_shape(x, squeezed_dims(node, x, axes)));
  if (y.nbytes()) std::memcpy(y.raw(), in[0].raw(), y.nbytes());
  return {y};
}

// ---- Split --------------------------------------------------------------------------------

// The sizes of the parts along the axis (dim size `dim`, -1 if unknown): the split input or
// attribute; else equal parts, the last one smaller when num_outputs (opset 18) says so.
// Entries are -1 where unknown.
std::vector<int64_t> split_sizes(const Node& node, int64_t dim,
                                 const std::optional<std::vector<int64_t>>& split) {
  const int64_t n = static_cast<int64_t>(node.outputs.size());
  if (split) {
    op_require(node, int64_t(split->size()) == n,
               "split " + ints_to_string(*split) + " has " + std::to_string(split->size()) +
                   " sizes for " + std::to_string(n) + " outputs");
    int64_t sum = 0;
    for (int64_t s : *split) {
      op_require(node, s >= 0, "split " + ints_to_string(*split) + " has a negative size");
      sum += s;
    }
    op_require(node, dim < 0 || sum == dim,
               "split " + ints_to_string(*split) + " adds up to " + std::to_string(sum) +
                   ", the axis has " + std::to_string(dim));
    return *split;
  }
  const bool uneven = node.attrs.has("num_outputs");
  if (uneven)
    op_require(node, node.attrs.get_int("num_outputs", 0) == n,
               "num_outputs " + std::to_string(node.attrs.get_int("num_outputs", 0)) +
                   " differs from the node's " + std::to_string(n) + " outputs");
  if (dim < 0) return std::vector<int64_t>(n, -1);
  if (!uneven)
    op_require(node, dim % n == 0,
               "the axis has " + std::to_string(dim) + " elements, which do not split into " +
                   std::to_string(n) + " equal parts (give split sizes)");
  const int64_t chunk = (dim + n - 1) / n;
  op_require(node, uneven ? chunk * (n - 1) < dim || dim == 0 : true,
             "num_outputs " + std::to_string(n) + " is more than the axis' " +
                 std::to_string(dim) + " elements allow");
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < n; ++i) sizes.push_back(std::min(chunk, dim - std::min(dim, i * chunk)));
  return sizes;
}

void infer_split(InferContext& ctx) {
  const Node& node = ctx.node();
  const Shape& x = ctx.input_shape(0);
  const int64_t axis = normalize_axis(node, node.attrs.get_int("axis", 0), int64_t(x.rank()), "axis");
  if (ctx.has_input(1)) {
    check_1d_int_input(ctx, 1, "split");
    if (!ctx.input_constant(1)) {  // sizes at run time: only the rank is known
      for (size_t i = 0; i < ctx.num_outputs(); ++i) {
        Shape s = x;
        set_unknown_dim(s, axis);
        ctx.set_output(i, ctx.input_dtype(0), s);
      }
      return;
    }
  }
  const auto split = ints_input_or_attr(node, ctx.input_constant(1), ctx.has_input(1), "split");
  const std::vector<int64_t> sizes = split_sizes(node, x[axis], split);
  for (size_t i = 0; i < ctx.num_outputs(); ++i) {
    Shape s = x;
    if (sizes[i] >= 0) {
      s[axis] = sizes[i];
      if (size_t(axis) < s.symbols.size()) s.symbols[axis].clear();
    }
    ctx.set_output(i, ctx.input_dtype(0), s);
  }
}

std::vector<Tensor> split_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const int64_t axis = normalize_axis(node, node.attrs.get_int("axis", 0), int64_t(x.rank()), "axis");
  const auto split = ints_input_or_attr(node, in[1].defined() ? &in[1] : nullptr, in[1].defined(),
                                        "split");
  const std::vector<int64_t> sizes = split_sizes(node, x.dim(axis), split);
  // Each output takes, from every outer row, a contiguous run of sizes[i] * inner elements.
  const int64_t outer = dims_product(x.shape(), 0, axis);
  const int64_t inner = dims_product(x.shape(), axis + 1, x.rank());
  const size_t es = dtype_size(x.dtype());
  const char* xp = static_cast<const char*>(x.raw());
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t size : sizes) {
    std::vector<int64_t> dims = x.shape().dims();
    dims[axis] = size;
    Tensor y(x.dtype(), Shape(dims));
    const size_t run = size_t(size * inner) * es;
    for (int64_t o = 0; o < outer && run; ++o)
      std::memcpy(static_cast<char*>(y.raw()) + o * run,
                  xp + (size_t(o * x.dim(axis) + start) * inner) * es, run);
    out.push_back(y);
    start += size;
  }
  return out;
}

}  // namespace

void register_squeeze_split_ops(OpRegistry& r) {
  OpSchema squeeze;
  squeeze.name = "Squeeze";
  squeeze.doc = "drop size-1 dims (axes as input or attribute; all size-1 dims without)";
  squeeze.max_inputs = 2;
  squeeze.attributes = {"axes"};
  squeeze.infer = infer_squeeze;
  squeeze.reference = squeeze_reference;
  add_builtin_op(r, std::move(squeeze));

  OpSchema split;
  split.name = "Split";
  split.doc = "cut along axis into the outputs (split sizes as input or attribute, or equal)";
  split.max_inputs = 2;
  split.max_outputs = 1 << 16;
  split.attributes = {"axis", "split", "num_outputs"};
  split.infer = infer_split;
  split.reference = split_reference;
  add_builtin_op(r, std::move(split));
}

}  // namespace minfer
