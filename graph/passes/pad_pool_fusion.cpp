// Pad (zeros, on the spatial dims) + AveragePool -> the pool with those pads, counting them:
// AveragePool with count_include_pad = 1 averages over its padding as zeros, which is what the
// pool of the zero-padded tensor computes. torch exports avg_pool2d(padding=1) so (Inception
// v3's 9 pools): the Pad's copy of the tensor goes, and the pool reads the smaller input.
#include <algorithm>

#include "graph/passes/passes.h"
#include "graph/passes/rewrite.h"
#include "ops/pad.h"

namespace minfer::passes {

namespace {

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  return std::all_of(v.begin(), v.end(), [x](int64_t e) { return e == x; });
}

// The spatial pads of a Pad that adds zeros around dims 2.. only ([begins..., ends...] over the
// spatial dims), or empty when it does anything else.
std::vector<int64_t> zero_spatial_pads(const Node& pad) {
  const Value* x = pad.input(0);
  if (!x || !x->shape_known || x->shape.rank() < 3 || x->dtype != DType::f32) return {};
  if (pad.attrs.get_string("mode", "constant") != "constant") return {};
  const bool attribute_form = pad_uses_attributes(pad);
  if (!attribute_form && (!rewrite::constant_of(pad.input(1)) ||
                          (pad.input(3) && !rewrite::constant_of(pad.input(3)))))
    return {};
  const Tensor* cv = attribute_form ? nullptr : rewrite::constant_of(pad.input(2));
  if (!attribute_form && pad.input(2) && !cv) return {};  // a run-time value
  const std::vector<char> value = pad_value_bytes(pad, x->dtype, cv);
  if (!std::all_of(value.begin(), value.end(), [](char c) { return c == 0; })) return {};
  const size_t rank = x->shape.rank();
  const auto pads =
      pads_of(pad, rank, rewrite::constant_of(pad.input(1)), rewrite::constant_of(pad.input(3)));
  std::vector<int64_t> begins, ends;
  for (size_t d = 0; d < rank; ++d) {
    const auto [b, e] = pads[d];
    if (b < 0 || e < 0 || (d < 2 && (b != 0 || e != 0))) return {};
    if (d >= 2) begins.push_back(b), ends.push_back(e);
  }
  begins.insert(begins.end(), ends.begin(), ends.end());
  return begins;
}

// An AveragePool without pads of its own, floor mode, no auto_pad or dilations.
bool plain_average_pool(const Node& pool, size_t spatial) {
  if (!rewrite::is_op(&pool, "AveragePool")) return false;
  if (pool.attrs.get_int("ceil_mode", 0) != 0) return false;
  const std::string auto_pad = pool.attrs.get_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID") return false;
  const std::vector<int64_t> pads = pool.attrs.get_ints("pads");
  const std::vector<int64_t> dilations = pool.attrs.get_ints("dilations");
  return pool.attrs.get_ints("kernel_shape").size() == spatial && all_equal(pads, 0) &&
         all_equal(dilations, 1);
}

}  // namespace

bool fuse_pad_into_pool(Graph& g, PassLog& log) {
  bool changed = false;
  for (Node* pad : g.topo_order()) {
    if (!rewrite::is_op(pad, "Pad")) continue;
    Node* pool = rewrite::sole_user(pad->outputs[0]);
    if (!pool) continue;
    const std::vector<int64_t> pads = zero_spatial_pads(*pad);
    if (pads.empty() || !plain_average_pool(*pool, pads.size() / 2)) continue;
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
