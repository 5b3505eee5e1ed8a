// minfer::Graph -> ONNX ModelProto, so any graph (imported, built in code, or optimized) can be
// viewed in Netron and checked or run by ONNX tools.
#include <climits>
#include <map>
#include <variant>

#include "minfer/onnx.h"
#include "minfer/op_schema.h"
#include "minfer/registry.h"
#include "runtime/file_util.h"
#include "runtime/tensor_pb.h"

namespace minfer {

namespace {

constexpr int64_t kIrVersion = 8;            // ONNX 1.10+; every current tool reads it
constexpr int64_t kDefaultOpset = 17;        // when a graph declares none for ai.onnx
constexpr int64_t kCustomDomainVersion = 1;  // com.minfer and other custom domains

// What is known about each value: the graph's own dtype/shape where it has inferred them, else
// the op schemas' inference run on the side (a freshly imported graph has not been inferred,
// but ONNX requires the types and shapes of graph outputs). `g` is not modified.
class ValueTypes {
 public:
  explicit ValueTypes(const Graph& g) {
    const OpRegistry& registry = OpRegistry::global();
    for (const Node* n : g.topo_order()) {
      const OpSchema* schema = registry.find_op(n->domain, n->op_type);
      bool known = schema != nullptr;
      std::vector<TensorInfo> inputs;
      for (const Value* v : n->inputs) {
        const TensorInfo* t = v ? find(v) : nullptr;
        known &= !v || t;
        inputs.push_back(t ? *t : TensorInfo{});
      }
      if (!known) continue;
      try {
        InferContext ctx(*n, std::move(inputs));
        schema->infer(ctx);
        for (size_t i = 0; i < n->outputs.size(); ++i)
          if (!n->outputs[i]->shape_known && ctx.outputs()[i].present)
            inferred_[n->outputs[i]] = ctx.outputs()[i];
      } catch (const Error&) {
        // Not inferable before running (e.g. shapes computed at run time): left unknown.
      }
    }
  }

  // Null when neither the graph nor the side inference knows the value's shape.
  const TensorInfo* find(const Value* v) {
    if (v->shape_known) {
      auto& t = own_[v];
      t = TensorInfo{true, v->dtype, v->shape, v->is_constant() ? &*v->constant : nullptr};
      return &t;
    }
    auto it = inferred_.find(v);
    return it == inferred_.end() ? nullptr : &it->second;
  }

 private:
  std::map<const Value*, TensorInfo> own_, inferred_;
};

void write_value_info(const Value& v, ValueTypes& types, onnx::ValueInfoProto* info) {
  info->set_name(v.name);
  auto* tt = info->mutable_type()->mutable_tensor_type();
  const TensorInfo* t = types.find(&v);
  tt->set_elem_type(detail::dtype_to_onnx(t ? t->dtype : v.dtype));
  if (!t) return;  // even the rank is unknown: leave the shape out
  auto* shape = tt->mutable_shape();
  for (size_t i = 0; i < t->shape.rank(); ++i) {
    auto* dim = shape->add_dim();
    if (t->shape[i] >= 0)
      dim->set_dim_value(t->shape[i]);
    else if (i < t->shape.symbols.size() && !t->shape.symbols[i].empty())
      dim->set_dim_param(t->shape.symbols[i]);
  }
}

void write_attribute(const std::string& name, const Attribute& value, onnx::AttributeProto* a) {
  a->set_name(name);
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          a->set_type(onnx::AttributeProto::INT);
          a->set_i(x);
        } else if constexpr (std::is_same_v<T, float>) {
          a->set_type(onnx::AttributeProto::FLOAT);
          a->set_f(x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          a->set_type(onnx::AttributeProto::STRING);
          a->set_s(x);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          a->set_type(onnx::AttributeProto::INTS);
          for (int64_t i : x) a->add_ints(i);
        } else if constexpr (std::is_same_v<T, std::vector<float>>) {
          a->set_type(onnx::AttributeProto::FLOATS);
          for (float f : x) a->add_floats(f);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          a->set_type(onnx::AttributeProto::STRINGS);
          for (const auto& s : x) a->add_strings(s);
        } else {
          static_assert(std::is_same_v<T, Tensor>);
          a->set_type(onnx::AttributeProto::TENSOR);
          detail::tensor_to_proto(x, "", a->mutable_t());
        }
      },
      value);
}

void write_node(const Node& n, onnx::NodeProto* p) {
  p->set_name(n.name);
  p->set_op_type(n.op_type);
  if (!n.domain.empty()) p->set_domain(n.domain);
  for (const Value* v : n.inputs) p->add_input(v ? v->name : "");
  for (const Value* v : n.outputs) p->add_output(v->name);
  for (const auto& [name, value] : n.attrs.all()) write_attribute(name, value, p->add_attribute());
}

void write_opsets(const Graph& g, onnx::ModelProto* m) {
  std::map<std::string, int64_t> opsets = g.opset_imports;
  opsets.try_emplace("", kDefaultOpset);
  for (const Node* n : g.nodes())
    if (!n->domain.empty() && n->domain != "ai.onnx")
      opsets.try_emplace(n->domain, kCustomDomainVersion);
  for (const auto& [domain, version] : opsets) {
    auto* op = m->add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
  }
}

}  // namespace

std::string serialize_onnx(const Graph& g) {
  onnx::ModelProto m;
  m.set_ir_version(kIrVersion);
  m.set_producer_name("minfer");
  write_opsets(g, &m);
  onnx::GraphProto* gp = m.mutable_graph();
  gp->set_name(g.name);

  ValueTypes types(g);
  for (const Value* v : g.inputs()) write_value_info(*v, types, gp->add_input());
  for (const Value* v : g.values()) {
    if (!v->is_constant() || (v->uses.empty() && !v->is_graph_output)) continue;
    detail::tensor_to_proto(*v->constant, v->name, gp->add_initializer());
  }
  // ONNX wants nodes in topological order.
  for (const Node* n : g.topo_order()) {
    write_node(*n, gp->add_node());
    for (const Value* v : n->outputs)
      if (!v->is_graph_output && types.find(v)) write_value_info(*v, types, gp->add_value_info());
  }
  for (const Value* v : g.outputs()) write_value_info(*v, types, gp->add_output());

  check(m.ByteSizeLong() <= static_cast<size_t>(INT_MAX), ErrorCode::Unsupported,
        "graph '" + g.name + "' is over 2 GiB: ONNX export with external data is not supported");
  std::string bytes;
  check(m.SerializeToString(&bytes), ErrorCode::Internal,
        "graph '" + g.name + "': cannot serialize the ONNX model");
  return bytes;
}

void save_onnx(const Graph& g, const std::string& path) {
  detail::write_file(path, serialize_onnx(g), "ONNX model");
}

}  // namespace minfer
