#include "tools/graph_stats.h"

#include <set>

#include "tools/model_loader.h"

namespace minfer::cli {

namespace {

// Shape dims with symbolic ones (the batch) taken as 1; a pinned batch counts as it is.
int64_t numel_at_batch1(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s.dims()) n *= d < 0 ? 1 : d;
  return n;
}

bool is_weight(const Value* v) {
  return v && v->is_constant() && v->dtype != DType::i64 && v->dtype != DType::boolean;
}

bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// MACs of one node. Conv-like ops (Conv, QConv, fused convs): output elements times the
// weight's fan-in; Gemm/MatMul-like: output elements times the reduced dimension.
int64_t node_macs(const Node& n) {
  if (n.outputs.empty() || !n.outputs[0]->shape_known) return 0;
  const int64_t out = numel_at_batch1(n.outputs[0]->shape);
  const Value* a = n.input(0);
  const Value* b = n.input(1);
  if (contains(n.op_type, "Conv") && b && b->shape_known && b->shape.rank() >= 3) {
    int64_t fan_in = 1;
    for (size_t i = 1; i < b->shape.rank(); ++i) fan_in *= b->shape[i];
    return out * fan_in;
  }
  if (contains(n.op_type, "Gemm") && a && a->shape_known && a->shape.rank() == 2) {
    const int64_t k = n.attrs.get_int("transA", 0) ? a->shape[0] : a->shape[1];
    return out * (k < 0 ? 1 : k);
  }
  if (contains(n.op_type, "MatMul") && a && a->shape_known && a->shape.rank() >= 1) {
    const int64_t k = a->shape[a->shape.rank() - 1];
    return out * (k < 0 ? 1 : k);
  }
  return 0;
}

std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// The inputs' common leading dim, symbolic taken as 1 (as numel_at_batch1 does); 0 if none.
int64_t common_batch(const Graph& g) {
  int64_t batch = 0;
  for (const Value* v : g.inputs()) {
    if (v->is_constant()) continue;
    if (v->shape.rank() == 0) return 0;
    const int64_t b = v->shape[0] < 0 ? 1 : v->shape[0];
    if (batch != 0 && b != batch) return 0;
    batch = b;
  }
  return batch;
}

}  // namespace

std::string batch_label(int64_t batch) {
  return batch > 0 ? "at batch " + std::to_string(batch) : "at the input shapes";
}

GraphStats graph_stats(const Graph& g) {
  GraphStats st;
  st.batch = common_batch(g);
  std::set<const Value*> counted;
  for (const Node* n : g.topo_order()) {
    NodeStats ns;
    ns.node = n;
    for (const Value* v : n->inputs) {
      if (!is_weight(v)) continue;
      ns.params += v->constant->numel();
      if (counted.insert(v).second) {
        st.params += v->constant->numel();
        st.param_bytes += static_cast<int64_t>(v->constant->nbytes());
      }
    }
    ns.macs = node_macs(*n);
    st.macs += ns.macs;
    st.op_histogram[n->domain.empty() ? n->op_type : n->domain + ":" + n->op_type]++;
    st.nodes.push_back(ns);
  }
  return st;
}

std::string to_dot(const Graph& g) {
  std::string out = "digraph \"" + dot_escape(g.name) + "\" {\n";
  out += "  rankdir=TB;\n";
  out +=
      "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#e8eef8\", "
      "fontname=\"Helvetica\", fontsize=10];\n";
  out += "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#555555\"];\n";
  std::map<const Node*, std::string> ids;
  const std::vector<Node*> order = g.topo_order();
  for (size_t i = 0; i < order.size(); ++i)
    ids[order[i]] = std::string("n").append(std::to_string(i));
  for (const Value* v : g.inputs()) {
    if (v->is_constant()) continue;
    out += "  \"in:" + dot_escape(v->name) + "\" [shape=ellipse, fillcolor=\"#d8f0d8\", label=\"" +
           dot_escape(v->name) + "\\n" + shape_string(v->shape) + "\"];\n";
  }
  for (const Node* n : order) {
    std::string label = dot_escape(n->name) + "\\n" + dot_escape(n->op_type);
    if (!n->outputs.empty() && n->outputs[0]->shape_known)
      label += "\\n" + shape_string(n->outputs[0]->shape);
    out += "  " + ids.at(n) + " [label=\"" + label + "\"];\n";
  }
  for (const Node* n : order) {
    const std::string& id = ids.at(n);
    for (const Value* v : n->inputs) {
      if (!v || v->is_constant()) continue;
      const std::string from =
          v->producer ? ids.at(v->producer) : "\"in:" + dot_escape(v->name) + "\"";
      out += "  " + from + " -> " + id + ";\n";
    }
  }
  for (const Value* v : g.outputs()) {
    out += "  \"out:" + dot_escape(v->name) + "\" [shape=ellipse, fillcolor=\"#f8e0d0\", label=\"" +
           dot_escape(v->name) + "\\n" + shape_string(v->shape) + "\"];\n";
    const std::string from =
        v->producer ? ids.at(v->producer) : "\"in:" + dot_escape(v->name) + "\"";
    out += "  " + from + " -> \"out:" + dot_escape(v->name) + "\";\n";
  }
  return out + "}\n";
}

}  // namespace minfer::cli
