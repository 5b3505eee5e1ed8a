// Channels-last (CPU, float32): the pointwise and depthwise convs of small planes, where the
// NCHW kernels waste vector lanes (a 7x7 plane fills 49 of 64) or transpose each depthwise
// input and output (depthwise_channels.h), become com.minfer:NhwcConv (ops/nhwc_ops.h) on
// NHWC activations; an SE block's pooling and per-channel Mul follow them (the pool as
// NhwcGlobalAveragePool, the Mul on its gate reshaped to [N, 1, 1, C]). A Transpose is
// inserted only where a tensor crosses between NCHW and NHWC nodes, so a run of MobileNet v2
// or EfficientNet blocks converts once on the way in and once on the way out.
//
// Which convs: those nhwc_conv_kind() accepts, whose output plane is at most 28x28 (MobileNet
// v2 on a Zen 4, in one process against the pass turned off: 1.04x faster with 16x16, 1.08-1.09x
// with 28x28, 1.02-1.05x with 56x56, where the NHWC GEMM of a few channels loses), or up to
// 64x64 where they are connected to a dilated depthwise conv (kMaxDilatedPlane), in connected
// groups of at least 3 with a depthwise conv among them: a lone conv would pay two
// transposes for one kernel, and a ResNet's 1x1 convs would pay them around each of the 3x3
// convs between them. The first depthwise conv of a group reads its NCHW input itself
// (undilated ones; a dilated one gets a Transpose).
#include <functional>
#include <map>
#include <set>

#include "graph/passes/passes.h"
#include "graph/passes/rewrite.h"
#include "ops/conv_geometry.h"
#include "ops/nhwc_ops.h"

namespace minfer::passes {

namespace {

constexpr int64_t kMaxPlane = 28 * 28;
// Larger planes, up to this, where their convs are connected to a dilated depthwise conv, which
// has no NCHW plane kernel (DeepLabv3's and LRASPP's MobileNet v3 blocks on 33x33 at a 520x520
// input: the models 1.15x and 1.35x faster, 2 threads of a Zen 5; MobileNet v2's and
// EfficientNet-B0's 32x32 blocks at 256x256, with few channels, were even or up to 5 % slower
// in NHWC).
constexpr int64_t kMaxDilatedPlane = 64 * 64;
constexpr size_t kMinGroup = 3;

bool rank4_f32(const Value* v) {
  return v && v->dtype == DType::f32 && v->shape_known && v->shape.rank() == 4 &&
         v->shape.is_static();
}

bool is_depthwise(const Node* n) {
  const Tensor* w = rewrite::constant_of(n->input(1));
  return w->shape()[1] == 1 && n->attrs.get_int("group", 1) > 1;
}

bool undilated(const Node* n) {
  for (int64_t d : n->attrs.get_ints("dilations", {}))
    if (d != 1) return false;
  return true;
}

bool is_dilated_depthwise(const Node* n) { return is_depthwise(n) && !undilated(n); }

int64_t output_plane(const Node* n) { return n->outputs[0]->shape[2] * n->outputs[0]->shape[3]; }

// A conv the NHWC kernel runs, of an output plane up to kMaxDilatedPlane.
bool convertible(const Node* n) {
  if (!rewrite::is_op(n, "Conv") && !rewrite::is_op(n, "FusedConv", kMinferDomain)) return false;
  if (n->outputs.size() != 1 || !rank4_f32(n->input(0)) || !rank4_f32(n->outputs[0])) return false;
  const Tensor* w = rewrite::constant_of(n->input(1));
  if (!w || w->dtype() != DType::f32 || w->rank() != 4) return false;
  if (n->input(2) && !rewrite::constant_of(n->input(2))) return false;
  if (n->input(3) && !rank4_f32(n->input(3))) return false;
  const ConvGeometry g = conv_geometry(*n, n->input(0)->shape, w->shape());
  return nhwc_conv_kind(g) != NhwcConvKind::None && g.out_h() * g.out_w() <= kMaxDilatedPlane;
}

constexpr size_t kDataInputs[] = {0, 3};  // X and the residual Z carry activations

// Whether `s` scales each channel of the NCHW `x`: [1 or N, C, 1, 1].
bool is_channel_scale(const Value* s, const Value* x) {
  return rank4_f32(s) && s->shape[1] == x->shape[1] && s->shape[2] == 1 && s->shape[3] == 1 &&
         (s->shape[0] == 1 || s->shape[0] == x->shape[0]);
}

// Candidates grouped by the activations they pass each other: node -> its group's root.
std::map<Node*, Node*> groups_of(const std::set<Node*>& candidates) {
  std::map<Node*, Node*> parent;
  for (Node* n : candidates) parent[n] = n;
  std::function<Node*(Node*)> root = [&](Node* n) {
    return parent[n] == n ? n : parent[n] = root(parent[n]);
  };
  // The candidate whose output `v` is, directly or through an SE block's per-channel Mul.
  auto conv_behind = [&](const Value* v) -> Node* {
    Node* p = v ? v->producer : nullptr;
    if (p && rewrite::is_op(p, "Mul") && p->inputs.size() == 2)
      for (size_t i : {0, 1})
        if (p->input(i)->producer && candidates.count(p->input(i)->producer) &&
            is_channel_scale(p->input(1 - i), p->input(i)))
          return p->input(i)->producer;
    return p && candidates.count(p) ? p : nullptr;
  };
  for (Node* n : candidates)
    for (size_t i : kDataInputs)
      if (Node* p = conv_behind(n->input(i))) parent[root(n)] = root(p);
  for (Node* n : candidates) parent[n] = root(n);
  return parent;
}

}  // namespace

bool to_channels_last(Graph& g, PassLog& log) {
  const std::vector<Node*> order = g.topo_order();
  // The convertible convs of planes up to kMaxPlane, and the larger ones connected to a dilated
  // depthwise conv.
  std::set<Node*> convertibles;
  for (Node* n : order)
    if (convertible(n)) convertibles.insert(n);
  std::set<Node*> dilated_groups;
  const std::map<Node*, Node*> wide = groups_of(convertibles);
  for (const auto& [n, root] : wide)
    if (is_dilated_depthwise(n)) dilated_groups.insert(root);
  std::set<Node*> candidates;
  for (Node* n : convertibles)
    if (output_plane(n) <= kMaxPlane || dilated_groups.count(wide.at(n))) candidates.insert(n);
  const std::map<Node*, Node*> group = groups_of(candidates);
  std::map<Node*, size_t> group_size;
  std::set<Node*> has_depthwise;
  for (const auto& [n, root] : group) {
    ++group_size[root];
    if (is_depthwise(n)) has_depthwise.insert(root);
  }
  std::set<Node*> convert;
  for (Node* n : candidates) {
    Node* root = group.at(n);
    if (group_size[root] >= kMinGroup && has_depthwise.count(root)) convert.insert(n);
  }
  if (convert.empty()) return false;

  // Readers that stay in NHWC: a Mul by a per-channel scale (an SE block's gate, reshaped to
  // [N, 1, 1, C]) keeps its output NHWC; a GlobalAveragePool reads NHWC. `nhwc`: the nodes
  // whose output is NHWC; `scales`: those Muls, by their NHWC input.
  std::set<Node*> nhwc = convert;
  std::map<Node*, size_t> scales;
  std::set<Node*> pools;
  for (Node* n : order) {
    auto from_nhwc = [&](size_t i) {
      const Value* v = n->input(i);
      return v && v->producer && nhwc.count(v->producer);
    };
    if (rewrite::is_op(n, "Mul") && n->inputs.size() == 2 && rank4_f32(n->outputs[0])) {
      for (size_t i : {0, 1})
        if (from_nhwc(i) && is_channel_scale(n->input(1 - i), n->input(i)) &&
            n->outputs[0]->shape == n->input(i)->shape) {
          scales[n] = i;
          nhwc.insert(n);
          break;
        }
    } else if (rewrite::is_op(n, "GlobalAveragePool") && from_nhwc(0)) {
      pools.insert(n);
    }
  }
  auto is_nhwc_read = [&](const Use& u) {
    if (convert.count(u.node)) return u.input_index == 0 || u.input_index == 3;
    if (auto it = scales.find(u.node); it != scales.end()) return u.input_index == it->second;
    return pools.count(u.node) && u.input_index == 0;
  };

  std::map<Value*, Value*> to_nhwc, to_nchw;
  auto transposed = [&](Value* v, bool into_nhwc) {
    std::map<Value*, Value*>& cache = into_nhwc ? to_nhwc : to_nchw;
    if (auto it = cache.find(v); it != cache.end()) return it->second;
    Attributes attrs;
    attrs.set("perm", into_nhwc ? std::vector<int64_t>{0, 2, 3, 1}
                                : std::vector<int64_t>{0, 3, 1, 2});
    Node* t = g.add_node("Transpose", v->name + (into_nhwc ? "_nhwc" : "_nchw"), {v}, 1,
                         std::move(attrs));
    return cache[v] = t->outputs[0];
  };

  for (Node* n : order) {
    const std::string before = n->describe();
    if (convert.count(n)) {
      n->op_type = "NhwcConv";
      n->domain = kMinferDomain;
      for (size_t i : kDataInputs) {
        Value* v = n->input(i);
        if (!v || nhwc.count(v->producer)) continue;
        // An undilated depthwise conv reads NCHW itself (its kernel transposes its input
        // anyway).
        if (i == 0 && is_depthwise(n) && undilated(n))
          n->attrs.set("nchw_input", int64_t{1});
        else
          g.set_input(n, i, transposed(v, true));
      }
      log.note("converted " + before + " to NhwcConv (channels last)");
    } else if (auto it = scales.find(n); it != scales.end()) {
      // [N, C, 1, 1] and [N, 1, 1, C] are the same bytes: a Reshape, not a Transpose.
      Value* scale = n->input(1 - it->second);
      const Shape& s = scale->shape;
      Value* shape = g.add_constant(scale->name + "_nhwc_shape",
                                    Tensor::from_vector<int64_t>({s[0], 1, 1, s[1]}, Shape{4}));
      g.set_input(n, 1 - it->second,
                  g.add_node("Reshape", scale->name + "_nhwc", {scale, shape})->outputs[0]);
      log.note("kept " + before + " channels last (a per-channel scale)");
    } else if (pools.count(n)) {
      n->op_type = "NhwcGlobalAveragePool";
      n->domain = kMinferDomain;
      log.note("converted " + before + " to NhwcGlobalAveragePool");
    }
  }
  // Readers of NHWC outputs that do not read them as NHWC get the NCHW transpose.
  for (Node* n : order) {
    if (!nhwc.count(n)) continue;
    Value* out = n->outputs[0];
    const std::vector<Use> uses = out->uses;
    for (const Use& u : uses)
      if (!is_nhwc_read(u)) g.set_input(u.node, u.input_index, transposed(out, false));
    // The graph output keeps its name, dtype and layout; the converted tensor is renamed.
    if (out->is_graph_output)
      rewrite::substitute_graph_output(g, out, transposed(out, false), "_nhwc");
  }
  g.infer_shapes();
  return true;
}

}  // namespace minfer::passes
