// Expand (broadcast to a shape given as input 1) and Tile (repeat along each dim), any dtype:
// both copy elements of the input to more places, by index arithmetic on bytes.
#include <cstring>

#include "ops/broadcast.h"
#include "ops/builtin_ops.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

void check_1d_i64(const InferContext& ctx, size_t i, const char* what) {
  require_dtype(ctx, i, {DType::i64});
  const Shape& s = ctx.input_shape(i);
  if (s.rank() != 1)
    ctx.fail(std::string(what) + " input has shape " + s.to_string() + "; expected 1-D");
}

// Copies element src_offset(i) of x to element i of y, for every i of y (any dtype).
template <typename F>
void gather_bytes(const Tensor& x, Tensor& y, F&& src_offset) {
  const size_t es = dtype_size(x.dtype());
  const char* xp = static_cast<const char*>(x.raw());
  char* yp = static_cast<char*>(y.raw());
  for (int64_t i = 0; i < y.numel(); ++i) std::memcpy(yp + i * es, xp + src_offset(i) * es, es);
}

// ---- Expand -------------------------------------------------------------------------------
// The output is the numpy broadcast of the input's shape and the given one: a 1 in the shape
// keeps the input's dim (unlike Reshape, it never shrinks).

void infer_expand(InferContext& ctx) {
  check_1d_i64(ctx, 1, "shape");
  const Shape& x = ctx.input_shape(0);
  if (const Tensor* t = ctx.input_constant(1)) {
    const std::vector<int64_t> dims = read_int_tensor(ctx.node(), *t, "shape input");
    for (int64_t d : dims)
      if (d < 0) ctx.fail("shape " + ints_to_string(dims) + " has a negative dim");
    ctx.set_output(0, ctx.input_dtype(0), broadcast_shapes(ctx.node(), {x, Shape(dims)}));
    return;
  }
  const int64_t n = ctx.input_shape(1)[0];
  if (n < 0) ctx.fail("shape input is not a constant and its length is unknown");
  ctx.set_output(0, ctx.input_dtype(0),
                 Shape(std::vector<int64_t>(std::max<int64_t>(n, x.rank()), Shape::kDynamic)));
}

std::vector<Tensor> expand_reference(const Node& node, const std::vector<Tensor>& in) {
  const std::vector<int64_t> dims = read_int_tensor(node, in[1], "shape input");
  for (int64_t d : dims)
    op_require(node, d >= 0, "shape " + ints_to_string(dims) + " has a negative dim");
  const Shape out = broadcast_shapes(node, {in[0].shape(), Shape(dims)});
  Tensor y(in[0].dtype(), out);
  std::vector<int64_t> offsets(y.numel());
  for_each_broadcast(out, {broadcast_strides(in[0].shape(), out)},
                     [&](int64_t i, const std::vector<int64_t>& off) { offsets[i] = off[0]; });
  gather_bytes(in[0], y, [&](int64_t i) { return offsets[i]; });
  return {y};
}

// ---- Tile ---------------------------------------------------------------------------------

std::vector<int64_t> tile_repeats(const Node& node, const Tensor& t, size_t rank) {
  std::vector<int64_t> r = read_int_tensor(node, t, "repeats input");
  op_require(node, r.size() == rank,
             "repeats " + ints_to_string(r) + " has " + std::to_string(r.size()) +
                 " values for an input of rank " + std::to_string(rank));
  for (int64_t v : r)
    op_require(node, v >= 0, "repeats " + ints_to_string(r) + " has a negative value");
  return r;
}

Shape tiled_shape(const Shape& x, const std::vector<int64_t>& repeats) {
  Shape out = x;
  for (size_t d = 0; d < x.rank(); ++d) {
    if (repeats[d] == 1) continue;  // keeps the dim, symbol included
    if (x[d] >= 0)
      out[d] = x[d] * repeats[d];
    else
      set_unknown_dim(out, d);
  }
  return out;
}

void infer_tile(InferContext& ctx) {
  check_1d_i64(ctx, 1, "repeats");
  const Shape& x = ctx.input_shape(0);
  if (const Tensor* t = ctx.input_constant(1)) {
    ctx.set_output(0, ctx.input_dtype(0), tiled_shape(x, tile_repeats(ctx.node(), *t, x.rank())));
    return;
  }
  const int64_t n = ctx.input_shape(1)[0];
  if (n >= 0 && n != int64_t(x.rank()))
    ctx.fail("repeats input has " + std::to_string(n) + " values for an input of rank " +
             std::to_string(x.rank()));
  ctx.set_output(0, ctx.input_dtype(0), Shape(std::vector<int64_t>(x.rank(), Shape::kDynamic)));
}

std::vector<Tensor> tile_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const Shape xs(x.shape().dims());
  const Shape out = tiled_shape(xs, tile_repeats(node, in[1], x.rank()));
  Tensor y(x.dtype(), out);
  const std::vector<int64_t> xst = row_major_strides(xs);
  gather_bytes(x, y, [&](int64_t i) {
    // Output index -> input index: each coordinate modulo the input's dim.
    int64_t src = 0;
    for (size_t d = out.rank(); d-- > 0;) {
      const int64_t c = i % out[d];
      i /= out[d];
      src += (c % xs[d]) * xst[d];
    }
    return src;
  });
  return {y};
}

}  // namespace

void register_expand_tile_ops(OpRegistry& r) {
  OpSchema expand;
  expand.name = "Expand";
  expand.doc = "broadcast to the shape given as input 1 (numpy rules)";
  expand.min_inputs = expand.max_inputs = 2;
  expand.infer = infer_expand;
  expand.reference = expand_reference;
  add_builtin_op(r, std::move(expand));

  OpSchema tile;
  tile.name = "Tile";
  tile.doc = "repeat the input repeats[d] times along each dim d";
  tile.min_inputs = tile.max_inputs = 2;
  tile.infer = infer_tile;
  tile.reference = tile_reference;
  add_builtin_op(r, std::move(tile));
}

}  // namespace minfer
