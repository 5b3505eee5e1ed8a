// Slice and Pad: schemas and reference kernels. Both take their parameters as inputs since
// opset 10 (Slice) / 11 (Pad) and as attributes before; both forms are supported.
#include <cstring>
#include <limits>

#include "ops/builtin_ops.h"
#include "ops/op_util.h"
#include "ops/pad.h"
#include "ops/slice.h"

namespace minfer {

bool slice_uses_attributes(const Node& node) { return node.inputs.size() <= 1; }

// Per-dim ranges from starts/ends/axes/steps, clamped as ONNX specifies.
std::vector<DimSlice> slice_ranges(const Node& node, const Shape& x,
                                   const std::vector<int64_t>& starts,
                                   const std::vector<int64_t>& ends, std::vector<int64_t> axes,
                                   std::vector<int64_t> steps) {
  size_t n = starts.size();
  if (ends.size() != n)
    op_fail(node, "starts " + ints_to_string(starts) + " and ends " + ints_to_string(ends) +
                      " differ in length");
  if (axes.empty())
    for (size_t i = 0; i < n; ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(n, 1);
  if (axes.size() != n || steps.size() != n)
    op_fail(node, "starts, ends, axes " + ints_to_string(axes) + " and steps " +
                      ints_to_string(steps) + " must have the same length " + std::to_string(n));
  std::vector<DimSlice> r(x.rank());
  std::vector<bool> seen(x.rank(), false);
  for (size_t d = 0; d < x.rank(); ++d) r[d] = {0, 1, x[d], false};
  for (size_t i = 0; i < n; ++i) {
    size_t a = normalize_axis(node, axes[i], int64_t(x.rank()), "axis");
    if (seen[a]) op_fail(node, "axes " + ints_to_string(axes) + " has a duplicate");
    seen[a] = true;
    int64_t step = steps[i], dim = x[a];
    if (step == 0) op_fail(node, "steps " + ints_to_string(steps) + " has a 0");
    if (dim < 0) {
      r[a] = {0, step, -1, true};
      continue;
    }
    int64_t start = starts[i], end = ends[i];
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
    }
    int64_t span = end - start;
    int64_t count = step > 0 ? (span + step - 1) / step : (span + step + 1) / step;
    r[a] = {start, step, std::max<int64_t>(0, count), true};
  }
  return r;
}

std::vector<DimSlice> slice_ranges_of(const Node& node, const Shape& x,
                                      const std::vector<const Tensor*>& params) {
  if (slice_uses_attributes(node))
    return slice_ranges(node, x, node.attrs.get_ints("starts"), node.attrs.get_ints("ends"),
                        node.attrs.get_ints("axes"), {});
  auto param = [&](size_t i, const char* name) {
    return i < params.size() && params[i] ? read_int_tensor(node, *params[i], name)
                                          : std::vector<int64_t>{};
  };
  return slice_ranges(node, x, param(0, "starts"), param(1, "ends"), param(2, "axes"),
                      param(3, "steps"));
}

// Pad's parameters (ops/pad.h), read by the reference below and the CPU kernel.

PadMode pad_mode(const Node& node) {
  std::string m = node.attrs.get_string("mode", "constant");
  if (m == "constant") return PadMode::Constant;
  if (m == "reflect") return PadMode::Reflect;
  if (m == "edge") return PadMode::Edge;
  if (m == "wrap") return PadMode::Wrap;
  op_fail(node, "mode '" + m + "' is not one of constant, reflect, edge, wrap");
}

bool pad_uses_attributes(const Node& node) { return node.inputs.size() <= 1; }

std::vector<std::pair<int64_t, int64_t>> pads_per_dim(const Node& node, size_t rank,
                                                      const std::vector<int64_t>& pads,
                                                      std::vector<int64_t> axes) {
  if (axes.empty())
    for (size_t i = 0; i < rank; ++i) axes.push_back(int64_t(i));
  if (pads.size() != 2 * axes.size())
    op_fail(node, "pads " + ints_to_string(pads) + " has " + std::to_string(pads.size()) +
                      " values, expected " + std::to_string(2 * axes.size()) +
                      " (begin and end for each of " + std::to_string(axes.size()) + " axes)");
  std::vector<std::pair<int64_t, int64_t>> r(rank, {0, 0});
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    size_t a = normalize_axis(node, axes[i], int64_t(rank), "axis");
    if (seen[a]) op_fail(node, "axes " + ints_to_string(axes) + " has a duplicate");
    seen[a] = true;
    r[a] = {pads[i], pads[i + axes.size()]};
  }
  return r;
}

int64_t pad_source(int64_t i, int64_t n, PadMode mode) {
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::Constant:
      return -1;
    case PadMode::Edge:
      return i < 0 ? 0 : n - 1;
    case PadMode::Wrap:
      return ((i % n) + n) % n;
    case PadMode::Reflect: {
      if (n == 1) return 0;
      int64_t period = 2 * (n - 1);  // reflect without repeating the edge, as numpy
      int64_t m = ((i % period) + period) % period;
      return m < n ? m : period - m;
    }
  }
  return -1;
}

std::vector<char> pad_value_bytes(const Node& node, DType dtype, const Tensor* cv) {
  std::vector<char> bytes(dtype_size(dtype), 0);
  if (cv) {
    if (cv->numel() > 0) std::memcpy(bytes.data(), cv->raw(), bytes.size());
    return bytes;
  }
  float v = node.attrs.get_float("value", 0.f);  // attribute form
  if (v == 0.f) return bytes;  // zero bytes are 0 in every dtype
  dispatch_types<float, int32_t, int64_t, int8_t, uint8_t>(node, dtype, [&](auto zero) {
    const auto q = static_cast<decltype(zero)>(v);
    std::memcpy(bytes.data(), &q, sizeof q);
  });
  return bytes;
}

std::vector<std::pair<int64_t, int64_t>> pads_of(const Node& node, size_t rank,
                                                 const Tensor* pads, const Tensor* axes) {
  if (pad_uses_attributes(node)) return pads_per_dim(node, rank, node.attrs.get_ints("pads"), {});
  if (!pads) op_fail(node, "needs its pads input (input 1)");
  std::vector<int64_t> ax;
  if (axes) ax = read_int_tensor(node, *axes, "axes input");
  return pads_per_dim(node, rank, read_int_tensor(node, *pads, "pads input"), ax);
}

namespace {

// Walks all multi-indices of `dims` in row-major order: f(linear, index).
template <typename F>
void for_each_index(const std::vector<int64_t>& dims, F&& f) {
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t i = 0; i < total; ++i) {
    f(i, idx);
    for (size_t d = dims.size(); d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
}

// ---- Slice -------------------------------------------------------------------------------

Shape sliced_shape(const Shape& x, const std::vector<DimSlice>& r) {
  Shape out = x;
  for (size_t d = 0; d < x.rank(); ++d) {
    if (!r[d].sliced) continue;
    out[d] = r[d].count;
    if (d < out.symbols.size()) out.symbols[d].clear();
  }
  return out;
}

void infer_slice(InferContext& ctx) {
  const Node& node = ctx.node();
  const Shape& x = ctx.input_shape(0);
  if (slice_uses_attributes(node)) {
    if (!node.attrs.has("starts") || !node.attrs.has("ends"))
      ctx.fail("needs starts and ends (inputs 1 and 2, or attributes before opset 10)");
    ctx.set_output(0, ctx.input_dtype(0),
                   sliced_shape(x, slice_ranges(node, x, node.attrs.get_ints("starts"),
                                                node.attrs.get_ints("ends"),
                                                node.attrs.get_ints("axes"), {})));
    return;
  }
  if (!ctx.has_input(1) || !ctx.has_input(2)) ctx.fail("needs starts (input 1) and ends (input 2)");
  static const char* names[] = {"", "starts", "ends", "axes", "steps"};
  std::vector<int64_t> params[5];
  bool all_constant = true;
  for (size_t i = 1; i < 5; ++i) {
    if (!ctx.has_input(i)) continue;
    require_dtype(ctx, i, {DType::i32, DType::i64});
    if (ctx.input_shape(i).rank() != 1)
      ctx.fail(std::string(names[i]) + " input has shape " + ctx.input_shape(i).to_string() +
               "; expected 1-D");
    if (const Tensor* t = ctx.input_constant(i))
      params[i] = read_int_tensor(node, *t, std::string(names[i]) + " input");
    else
      all_constant = false;
  }
  if (!all_constant) {
    // Known at run time only: the rank is kept, the sliced dims become unknown (all dims
    // when the axes are unknown too).
    Shape out = x;
    bool axes_known = !ctx.has_input(3) || ctx.input_constant(3);
    std::vector<int64_t> axes = params[3];
    if (axes_known && axes.empty()) {
      int64_t n = ctx.input_shape(1)[0];
      if (n < 0) axes_known = false;
      for (int64_t i = 0; i < n; ++i) axes.push_back(i);
    }
    for (size_t d = 0; d < x.rank(); ++d) {
      bool sliced = !axes_known;
      for (int64_t a : axes) sliced |= a == int64_t(d) || a + int64_t(x.rank()) == int64_t(d);
      if (!sliced) continue;
      set_unknown_dim(out, d);
    }
    ctx.set_output(0, ctx.input_dtype(0), out);
    return;
  }
  ctx.set_output(
      0, ctx.input_dtype(0),
      sliced_shape(x, slice_ranges(node, x, params[1], params[2], params[3], params[4])));
}

std::vector<Tensor> slice_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  std::vector<const Tensor*> params;
  for (size_t i = 1; i < in.size(); ++i) params.push_back(in[i].defined() ? &in[i] : nullptr);
  std::vector<DimSlice> r = slice_ranges_of(node, x.shape(), params);
  Shape out = sliced_shape(Shape(x.shape().dims()), r);
  Tensor y(x.dtype(), out);
  std::vector<int64_t> xst = row_major_strides(x.shape());
  size_t es = dtype_size(x.dtype());
  const char* xp = static_cast<const char*>(x.raw());
  char* yp = static_cast<char*>(y.raw());
  for_each_index(out.dims(), [&](int64_t i, const std::vector<int64_t>& idx) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) off += (r[d].start + idx[d] * r[d].step) * xst[d];
    std::memcpy(yp + i * es, xp + off * es, es);
  });
  return {y};
}

// ---- Pad ---------------------------------------------------------------------------------

Shape padded_shape(const Node& node, const Shape& x,
                   const std::vector<std::pair<int64_t, int64_t>>& pads, PadMode mode) {
  Shape out = x;
  for (size_t d = 0; d < x.rank(); ++d) {
    auto [b, e] = pads[d];
    if (x[d] < 0) {
      if (b != 0 || e != 0) set_unknown_dim(out, d);
      continue;
    }
    int64_t n = 0;
    if (__builtin_add_overflow(x[d], b, &n) || __builtin_add_overflow(n, e, &n))
      op_fail(node, "pads " + std::to_string(b) + ", " + std::to_string(e) + " of dim " +
                        std::to_string(d) + " are absurdly large");
    if (n < 0)
      op_fail(node, "pads crop dim " + std::to_string(d) + " of " + x.to_string() + " below zero");
    if (mode != PadMode::Constant && x[d] == 0 && (b > 0 || e > 0))
      op_fail(node, "cannot pad the empty dim " + std::to_string(d) + " of " + x.to_string() +
                        " in a non-constant mode");
    out[d] = n;
  }
  return out;
}

void infer_pad(InferContext& ctx) {
  const Node& node = ctx.node();
  const Shape& x = ctx.input_shape(0);
  PadMode mode = pad_mode(node);
  if (pad_uses_attributes(node)) {
    if (!node.attrs.has("pads")) ctx.fail("needs pads (input 1, or attribute before opset 11)");
    ctx.set_output(
        0, ctx.input_dtype(0),
        padded_shape(node, x, pads_per_dim(node, x.rank(), node.attrs.get_ints("pads"), {}), mode));
    return;
  }
  require_dtype(ctx, 1, {DType::i64, DType::i32});
  if (ctx.has_input(2)) {
    require_same_dtype(ctx, 0, 2);
    const Shape& cs = ctx.input_shape(2);
    if (!(cs.rank() == 0 || (cs.rank() == 1 && cs[0] <= 1)))
      ctx.fail("constant_value has shape " + cs.to_string() + "; expected a scalar");
  }
  if (ctx.has_input(3)) require_dtype(ctx, 3, {DType::i64, DType::i32});
  const Tensor* pads = ctx.input_constant(1);
  bool axes_ok = !ctx.has_input(3) || ctx.input_constant(3);
  if (!pads || !axes_ok) {
    // Known at run time only: the rank is kept, the dims are unknown.
    ctx.set_output(0, ctx.input_dtype(0), Shape(std::vector<int64_t>(x.rank(), Shape::kDynamic)));
    return;
  }
  std::vector<int64_t> axes;
  if (ctx.has_input(3)) axes = read_int_tensor(node, *ctx.input_constant(3), "axes input");
  ctx.set_output(
      0, ctx.input_dtype(0),
      padded_shape(node, x,
                   pads_per_dim(node, x.rank(), read_int_tensor(node, *pads, "pads input"), axes),
                   mode));
}

std::vector<Tensor> pad_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  PadMode mode = pad_mode(node);
  auto input = [&](size_t i) { return i < in.size() && in[i].defined() ? &in[i] : nullptr; };
  const std::vector<std::pair<int64_t, int64_t>> pads =
      pads_of(node, x.rank(), input(1), input(3));
  const Tensor* cv = pad_uses_attributes(node) ? nullptr : input(2);
  Shape out = padded_shape(node, Shape(x.shape().dims()), pads, mode);
  Tensor y(x.dtype(), out);
  std::vector<char> value = pad_value_bytes(node, x.dtype(), cv);
  std::vector<int64_t> xst = row_major_strides(x.shape());
  size_t es = dtype_size(x.dtype());
  const char* xp = static_cast<const char*>(x.raw());
  char* yp = static_cast<char*>(y.raw());
  for_each_index(out.dims(), [&](int64_t i, const std::vector<int64_t>& idx) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      int64_t src = pad_source(idx[d] - pads[d].first, x.dim(d), mode);
      if (src < 0) {
        off = -1;
        break;
      }
      off += src * xst[d];
    }
    std::memcpy(yp + i * es, off < 0 ? value.data() : xp + off * es, es);
  });
  return {y};
}

}  // namespace

void register_slice_pad_ops(OpRegistry& r) {
  OpSchema slice;
  slice.name = "Slice";
  slice.doc = "strided slice (starts/ends/axes/steps as inputs, or attributes before opset 10)";
  slice.max_inputs = 5;
  slice.attributes = {"starts", "ends", "axes"};
  slice.infer = infer_slice;
  slice.reference = slice_reference;
  add_builtin_op(r, std::move(slice));

  OpSchema pad;
  pad.name = "Pad";
  pad.doc = "pad with a constant, reflection, edge or wrap (pads as input, or attribute)";
  pad.max_inputs = 4;
  pad.attributes = {"mode", "pads", "value"};
  pad.infer = infer_pad;
  pad.reference = pad_reference;
  add_builtin_op(r, std::move(pad));
}

}  // namespace minfer
