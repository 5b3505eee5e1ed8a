// LayerNormalization (opset 17): normalizes over the dims [axis, rank) of X, then scales and
// shifts by Scale and B (broadcast to those dims). The optional Mean and InvStdDev outputs
// have X's leading dims and 1s after. Statistics are computed in double (the oracle).
#include <cmath>

#include "ops/broadcast.h"
#include "ops/builtin_ops.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

// The normalized dims of X: [axis, rank) as a shape (symbols kept).
Shape normalized_shape(const Shape& x, size_t axis) {
  std::vector<int64_t> dims(x.dims().begin() + axis, x.dims().end());
  Shape s(dims);
  for (size_t i = axis; i < x.rank(); ++i) copy_dim(s, i - axis, x, i);
  return s;
}

// Scale/B must broadcast to the normalized dims without growing them.
void check_affine(InferContext& ctx, size_t i, const char* what, const Shape& norm) {
  require_same_dtype(ctx, 0, i);
  const Shape& s = ctx.input_shape(i);
  bool ok = s.rank() <= norm.rank();
  for (size_t k = 0; ok && k < s.rank(); ++k) {
    const int64_t d = s[s.rank() - 1 - k], n = norm[norm.rank() - 1 - k];
    ok = d == 1 || dims_compatible(d, n);
  }
  if (!ok)
    ctx.fail(std::string(what) + " has shape " + s.to_string() +
             ", which does not broadcast to the normalized dims " + norm.to_string());
}

void infer_layer_norm(InferContext& ctx) {
  require_dtype(ctx, 0, {DType::f32});
  const Shape& x = ctx.input_shape(0);
  if (x.rank() == 0) ctx.fail("input must have rank >= 1");
  const int64_t stash = ctx.attrs().get_int("stash_type", 1);
  if (stash != 1)
    ctx.fail("stash_type " + std::to_string(stash) + " is not supported (only 1, f32)");
  const size_t axis =
      normalize_axis(ctx.node(), ctx.attrs().get_int("axis", -1), int64_t(x.rank()), "axis");
  const Shape norm = normalized_shape(x, axis);
  check_affine(ctx, 1, "Scale", norm);
  if (ctx.has_input(2)) check_affine(ctx, 2, "B", norm);
  ctx.set_output(0, DType::f32, x);
  Shape stat = x;
  for (size_t i = axis; i < x.rank(); ++i) stat[i] = 1;
  if (stat.rank() > 0) stat = Shape(stat.dims());  // drop the normalized dims' symbols
  for (size_t i = 0; i < axis; ++i) copy_dim(stat, i, x, i);
  for (size_t o = 1; o < ctx.num_outputs(); ++o)
    if (ctx.node().outputs[o]) ctx.set_output(o, DType::f32, stat);
}

std::vector<Tensor> layer_norm_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  const size_t axis =
      normalize_axis(node, node.attrs.get_int("axis", -1), int64_t(x.rank()), "axis");
  const double eps = node.attrs.get_float("epsilon", 1e-5f);
  const Shape norm = normalized_shape(x.shape(), axis);
  const int64_t rows = dims_product(x.shape(), 0, axis), n = norm.numel();
  // Offsets of Scale and B for each position in a normalized row.
  std::vector<std::vector<int64_t>> st{broadcast_strides(in[1].shape(), norm)};
  const bool has_b = in.size() > 2 && in[2].defined();
  if (has_b) st.push_back(broadcast_strides(in[2].shape(), norm));
  std::vector<int64_t> s_off(n), b_off(n, 0);
  for_each_broadcast(norm, st, [&](int64_t i, const std::vector<int64_t>& off) {
    s_off[i] = off[0];
    if (has_b) b_off[i] = off[1];
  });
  Shape stat_shape = x.shape();
  for (size_t i = axis; i < x.rank(); ++i) stat_shape[i] = 1;
  Tensor y(DType::f32, x.shape()), mean(DType::f32, stat_shape), inv(DType::f32, stat_shape);
  const float* xp = x.data<float>();
  const float* sp = in[1].data<float>();
  const float* bp = has_b ? in[2].data<float>() : nullptr;
  float* yp = y.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = xp + r * n;
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < n; ++i) sum += row[i];
    const double mu = n ? sum / double(n) : 0.0;
    for (int64_t i = 0; i < n; ++i) sq += (row[i] - mu) * (row[i] - mu);
    const double inv_std = 1.0 / std::sqrt((n ? sq / double(n) : 0.0) + eps);
    for (int64_t i = 0; i < n; ++i) {
      const double v = (row[i] - mu) * inv_std * sp[s_off[i]] + (bp ? bp[b_off[i]] : 0.0);
      yp[r * n + i] = static_cast<float>(v);
    }
    mean.data<float>()[r] = static_cast<float>(mu);
    inv.data<float>()[r] = static_cast<float>(inv_std);
  }
  std::vector<Tensor> out{y};
  for (size_t o = 1; o < node.outputs.size(); ++o)
    out.push_back(node.outputs[o] ? (o == 1 ? mean : inv) : Tensor());
  return out;
}

}  // namespace

void register_layer_norm_op(OpRegistry& r) {
  // com.minfer:LayerNormalization is what the layernorm-fusion pass makes in graphs whose
  // opset predates 17 (the same op).
  for (const char* domain : {"", kMinferDomain}) {
    OpSchema s;
    s.domain = domain;
    s.name = "LayerNormalization";
    s.doc = "normalize over the dims from `axis` on, then * Scale + B";
    s.min_inputs = 2;
    s.max_inputs = 3;
    s.max_outputs = 3;
    s.attributes = {"axis", "epsilon", "stash_type"};
    s.infer = infer_layer_norm;
    s.reference = layer_norm_reference;
    add_builtin_op(r, std::move(s));
  }
}

}  // namespace minfer
