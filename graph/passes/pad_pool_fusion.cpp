// Pad (zeros, on the spatial dims) + AveragePool -> the pool with those pads, counting them:
// AveragePool with count_include_pad = 1 averages over its padding as zeros, which is what the
// pool of the zero-padded tensor computes. torch exports avg_pool2d(padding=1) so (Inception
// v3's 9 pools): the Pad's copy of the tensor goes, and the pool reads the smaller input.
// The same for an int8 Pad before com.minfer:QAveragePool, whose padding is the value that
// stands for zero, the pool's x_zero_point (the pool sums q - x_zero_point, 0 for it), in
// either layout (the int8 region is NHWC by the time this pass runs).
#include <algorithm>
#include <optional>

#include "graph/passes/passes.h"
#include "graph/passes/rewrite.h"
#include "minfer/registry.h"
#include "ops/pad.h"

namespace minfer::passes {

namespace {

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  return std::all_of(v.begin(), v.end(), [x](int64_t e) { return e == x; });
}

// The pool that a Pad can fold into: its input's dtype, layout and padding value.
struct PoolTarget {
  DType dtype = DType::f32;
  bool nhwc = false;
  std::vector<char> fill;  // the padding value's bytes that the pool counts as zero
};

// An AveragePool, or a QAveragePool, without pads of its own, floor mode, no auto_pad or
// dilations.
std::optional<PoolTarget> plain_average_pool(const Node& pool) {
  PoolTarget t;
  if (rewrite::is_op(&pool, "QAveragePool", kMinferDomain)) {
    const std::string layout = pool.attrs.get_string("layout", "NCHW");
    const int64_t zero_point = pool.attrs.get_int("x_zero_point", 0);
    if ((layout != "NCHW" && layout != "NHWC") || zero_point < -128 || zero_point > 127)
      return std::nullopt;
    t.dtype = DType::i8;
    t.nhwc = layout == "NHWC";
    t.fill = {static_cast<char>(zero_point)};
  } else if (rewrite::is_op(&pool, "AveragePool")) {
    t.fill.assign(sizeof(float), 0);
  } else {
    return std::nullopt;
  }
  if (pool.attrs.get_int("ceil_mode", 0) != 0) return std::nullopt;
  const std::string auto_pad = pool.attrs.get_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID") return std::nullopt;
  if (!all_equal(pool.attrs.get_ints("pads"), 0) || !all_equal(pool.attrs.get_ints("dilations"), 1))
    return std::nullopt;
  return t;
}

// The spatial pads ([begins..., ends...] in NCHW order) of a Pad that adds `target.fill` around
// the spatial dims only, or empty when it does anything else.
std::vector<int64_t> spatial_pads(const Node& pad, const PoolTarget& target) {
  const Value* x = pad.input(0);
  if (!x || !x->shape_known || x->shape.rank() < 3 || x->dtype != target.dtype) return {};
  if (pad.attrs.get_string("mode", "constant") != "constant") return {};
  const bool attribute_form = pad_uses_attributes(pad);
  if (!attribute_form && (!rewrite::constant_of(pad.input(1)) ||
                          (pad.input(3) && !rewrite::constant_of(pad.input(3)))))
    return {};
  const Tensor* cv = attribute_form ? nullptr : rewrite::constant_of(pad.input(2));
  if (!attribute_form && pad.input(2) && !cv) return {};  // a run-time value
  if (pad_value_bytes(pad, x->dtype, cv) != target.fill) return {};
  const size_t rank = x->shape.rank();
  const auto pads =
      pads_of(pad, rank, rewrite::constant_of(pad.input(1)), rewrite::constant_of(pad.input(3)));
  // The dims in NCHW order: NHWC's channels are its last.
  std::vector<size_t> order(rank);
  for (size_t d = 0; d < rank; ++d) order[d] = d;
  if (target.nhwc) std::rotate(order.begin() + 1, order.end() - 1, order.end());
  std::vector<int64_t> begins, ends;
  for (size_t i = 0; i < rank; ++i) {
    const auto [b, e] = pads[order[i]];
    if (b < 0 || e < 0 || (i < 2 && (b != 0 || e != 0))) return {};
    if (i >= 2) begins.push_back(b), ends.push_back(e);
  }
  begins.insert(begins.end(), ends.begin(), ends.end());
  return begins;
}

}  // namespace

bool fuse_pad_into_pool(Graph& g, PassLog& log) {
  bool changed = false;
  for (Node* pad : g.topo_order()) {
    if (!rewrite::is_op(pad, "Pad")) continue;
    Node* pool = rewrite::sole_user(pad->outputs[0]);
    if (!pool || pool->inputs[0] != pad->outputs[0]) continue;
    const std::optional<PoolTarget> target = plain_average_pool(*pool);
    if (!target) continue;
    const std::vector<int64_t> pads = spatial_pads(*pad, *target);
    if (pads.empty() || pool->attrs.get_ints("kernel_shape").size() != pads.size() / 2) continue;
    pool->attrs.set("pads", pads);
    pool->attrs.set("count_include_pad", int64_t{1});
    pool->attrs.set("auto_pad", std::string("NOTSET"));
    log.note("folded " + pad->describe() + " into " + pool->describe());
    g.set_input(pool, 0, pad->inputs[0]);
    g.remove_node(pad);
    changed = true;
  }
  return changed;
}

}  // namespace minfer::passes
