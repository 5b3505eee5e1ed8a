// Helpers shared by quantization: graph copies, the preparation both the Calibrator and
// quantize_graph start from, and reading Q/DQ parameters.
#include <map>

#include "graph/passes/passes.h"
#include "graph/passes/quantize.h"
#include "graph/passes/rewrite.h"
#include "minfer/registry.h"
#include "ops/op_util.h"

namespace minfer {

bool is_quantized(const Graph& g) {
  for (const Node* n : g.nodes())
    if (n->op_type == "QuantizeLinear" || n->op_type == "DequantizeLinear" ||
        (n->domain == kMinferDomain && n->op_type.size() > 1 && n->op_type[0] == 'Q'))
      return true;
  return false;
}

Graph clone_graph(const Graph& src) {
  Graph g;
  g.name = src.name;
  g.opset_imports = src.opset_imports;
  std::map<const Value*, Value*> map;
  for (Value* v : src.inputs()) {
    Value* c = g.add_input(v->name, v->dtype, v->shape);
    c->shape_known = v->shape_known;
    map[v] = c;
  }
  for (Value* v : src.values())
    if (v->is_constant() && !map.count(v)) map[v] = g.add_constant(v->name, *v->constant);
  for (const Node* n : src.topo_order()) {
    std::vector<Value*> inputs;
    for (const Value* v : n->inputs) inputs.push_back(v ? map.at(v) : nullptr);
    std::vector<std::string> names;
    for (const Value* v : n->outputs) names.push_back(v->name);
    Node* c = g.add_node_named(n->op_type, n->name, inputs, names, n->attrs, n->domain);
    for (size_t i = 0; i < n->outputs.size(); ++i) {
      const Value* o = n->outputs[i];
      Value* co = c->outputs[i];
      co->dtype = o->dtype;
      co->shape = o->shape;
      co->shape_known = o->shape_known;
      map[o] = co;
    }
  }
  for (Value* v : src.outputs()) g.add_output(map.at(v));
  return g;
}

void prepare_for_quantization(Graph& g) {
  PassLog log;
  g.infer_shapes();
  passes::fold_constants(g, log);
  passes::eliminate_identities(g, log);
  passes::eliminate_dead_code(g, log);
  g.infer_shapes();
  passes::fold_batchnorm(g, log);
  passes::fuse_conv_bias(g, log);
  passes::eliminate_dead_code(g, log);
  g.infer_shapes();
}

}  // namespace minfer

namespace minfer::quant {

namespace {
template <typename T>
void append_ints(const Tensor& t, std::vector<int32_t>& out) {
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(static_cast<int32_t>(t.data<T>()[i]));
}
}  // namespace

std::optional<QdqParams> qdq_params(const Node& n) {
  const bool is_q = rewrite::is_op(&n, "QuantizeLinear");
  if (!is_q && !rewrite::is_op(&n, "DequantizeLinear")) return std::nullopt;
  if (n.attrs.get_int("block_size", 0) != 0) return std::nullopt;
  const Tensor* s = rewrite::constant_of(n.input(1));
  if (!s || s->dtype() != DType::f32 || s->rank() > 1 || s->numel() < 1) return std::nullopt;
  const Tensor* z = n.input(2) ? rewrite::constant_of(n.input(2)) : nullptr;
  if (n.input(2) && !z) return std::nullopt;
  if (z && z->numel() != s->numel()) return std::nullopt;
  QdqParams p;
  p.scale = s->to_vector<float>();
  if (is_q) {
    p.dtype = z ? z->dtype() : DType::u8;
    if (!z && n.attrs.get_int("output_dtype", 0) == 3) p.dtype = DType::i8;
  } else {
    if (!n.inputs[0]) return std::nullopt;
    p.dtype = n.inputs[0]->dtype;
  }
  if (z) {
    switch (z->dtype()) {
      case DType::i8:
        append_ints<int8_t>(*z, p.zero_point);
        break;
      case DType::u8:
        append_ints<uint8_t>(*z, p.zero_point);
        break;
      case DType::i32:
        append_ints<int32_t>(*z, p.zero_point);
        break;
      default:
        return std::nullopt;
    }
  } else {
    p.zero_point.assign(p.scale.size(), 0);
  }
  if (p.scale.size() > 1) {
    const Value* x = n.inputs[0];
    if (!x || !x->shape_known) return std::nullopt;
    int64_t rank = static_cast<int64_t>(x->shape.rank());
    int64_t axis = n.attrs.get_int("axis", 1);
    if (axis < -rank || axis >= rank) return std::nullopt;
    p.axis = axis < 0 ? axis + rank : axis;
  }
  return p;
}

Node* dq_producer(const Value* v) {
  if (!v || !v->producer || !rewrite::is_op(v->producer, "DequantizeLinear")) return nullptr;
  return qdq_params(*v->producer) ? v->producer : nullptr;
}

Value* add_unique_constant(Graph& g, const std::string& base, Tensor t) {
  std::string name = base;
  for (int k = 1; g.find_value(name); ++k) name = base + "_" + std::to_string(k);
  return g.add_constant(name, std::move(t));
}

}  // namespace minfer::quant
