// fp16 lowering (SessionOptions::precision fp16): moves the convolutions and the pools that
// follow them to float16 NHWC (ops/fp16/half_ops.h). Conv/FusedConv of one group with constant
// float32 weights become HConv; MaxPool and GlobalAveragePool reading an fp16 tensor become
// HMaxPool and HGlobalAveragePool. ToHalfNhwc / FromHalfNhwc are inserted only where a tensor
// crosses between fp32 NCHW and fp16 NHWC ops, so a ResNet converts its input once and its
// pooled features once (HGlobalAveragePool writes float32). Everything else stays float32.
#include <map>
#include <set>

#include "graph/passes/passes.h"
#include "graph/passes/rewrite.h"
#include "minfer/registry.h"

namespace minfer::passes {

namespace {

bool rank4_f32(const Value* v) {
  return v && v->dtype == DType::f32 && v->shape_known && v->shape.rank() == 4;
}

bool convertible_conv(const Node* n) {
  if (!rewrite::is_op(n, "Conv") && !rewrite::is_op(n, "FusedConv", kMinferDomain)) return false;
  if (n->outputs.size() != 1 || !rank4_f32(n->input(0)) || n->attrs.get_int("group", 1) != 1)
    return false;
  const Tensor* w = rewrite::constant_of(n->input(1));
  if (!w || w->dtype() != DType::f32 || w->rank() != 4) return false;
  if (n->input(2) && !rewrite::constant_of(n->input(2))) return false;
  return !n->input(3) || rank4_f32(n->input(3));
}

bool is_pool(const Node* n) {
  return (rewrite::is_op(n, "MaxPool") && n->outputs.size() == 1) ||
         rewrite::is_op(n, "GlobalAveragePool");
}

// The inputs of a converted node that carry fp16 NHWC data.
std::vector<size_t> data_inputs(const Node* n) {
  if (n->op_type == "HConv") return {0, 3};
  return {0};
}

}  // namespace

bool lower_to_fp16(Graph& g, PassLog& log) {
  // Which nodes go to fp16, in topological order; `half_out`: those whose output is fp16.
  std::set<Node*> convert, half_out;
  const std::vector<Node*> order = g.topo_order();
  for (Node* n : order) {
    if (convertible_conv(n)) {
      convert.insert(n);
      half_out.insert(n);
    } else if (is_pool(n) && rank4_f32(n->input(0)) && half_out.count(n->input(0)->producer)) {
      convert.insert(n);
      if (n->op_type == "MaxPool") half_out.insert(n);
    }
  }
  if (convert.empty()) return false;

  std::map<Value*, Value*> to_half, to_float;
  auto converted = [&](Value* v, bool to_fp16, std::map<Value*, Value*>& cache) {
    if (auto it = cache.find(v); it != cache.end()) return it->second;
    Node* c = g.add_node(to_fp16 ? "ToHalfNhwc" : "FromHalfNhwc",
                         v->name + (to_fp16 ? "_fp16_nhwc" : "_fp32"), {v}, 1, {}, kMinferDomain);
    cache[v] = c->outputs[0];
    return c->outputs[0];
  };

  for (Node* n : order) {
    if (!convert.count(n)) continue;
    const std::string before = n->describe();
    n->domain = kMinferDomain;
    if (n->op_type == "Conv" || n->op_type == "FusedConv") n->op_type = "HConv";
    else n->op_type = "H" + n->op_type;
    for (size_t i : data_inputs(n)) {
      Value* v = n->input(i);
      if (v && !half_out.count(v->producer)) g.set_input(n, i, converted(v, true, to_half));
    }
    log.note("lowered " + before + " to " + n->op_type + " (fp16 NHWC)");
  }
  // Readers of fp16 outputs that are not fp16 data inputs get a float32 NCHW copy.
  for (Node* n : order) {
    if (!half_out.count(n)) continue;
    Value* out = n->outputs[0];
    const std::vector<Use> uses = out->uses;
    for (const Use& u : uses) {
      const std::vector<size_t> data = data_inputs(u.node);
      const bool half_reader = convert.count(u.node) &&
                               std::find(data.begin(), data.end(), u.input_index) != data.end();
      if (!half_reader) g.set_input(u.node, u.input_index, converted(out, false, to_float));
    }
    // The graph output keeps its name, dtype and layout; the converted tensor is renamed.
    if (out->is_graph_output)
      rewrite::substitute_graph_output(g, out, converted(out, false, to_float), "_fp16");
  }
  g.infer_shapes();
  return true;
}

}  // namespace minfer::passes
