// Moves the int8 region of a graph to NHWC (channels last), which the int8 CPU kernels use:
// QConv and the int8 pools switch their `layout` attribute, QAdd, int8 Slice/Pad, Concat and
// element-wise ops (float ones and per-tensor Q/DQ) whose inputs are all NHWC follow along
// (Slice axes, Pad pads and Concat's axis are remapped), and Transposes are inserted only
// where a tensor crosses between NCHW and NHWC ops.
#include <algorithm>
#include <map>
#include <set>

#include "graph/passes/quantize.h"
#include "graph/passes/rewrite.h"
#include "minfer/registry.h"
#include "ops/op_util.h"

namespace minfer::passes {

namespace {

constexpr int64_t kToNhwc[4] = {0, 3, 1, 2};  // NCHW axis -> NHWC axis

bool is_qop(const Node* n, const char* op) { return rewrite::is_op(n, op, kMinferDomain); }

bool rank4_int8(const Value* v) {
  return v && v->dtype == DType::i8 && v->shape_known && v->shape.rank() == 4;
}

bool is_spatial_qop(const Node* n) {
  return is_qop(n, "QConv") || is_qop(n, "QMaxPool") || is_qop(n, "QAveragePool") ||
         is_qop(n, "QGlobalAveragePool");
}

bool one_element(const Value* v) { return v && v->shape_known && v->shape.numel() == 1; }

// A Concat of rank-4 tensors (SqueezeNet's and Inception's branches, joined in float between
// their DequantizeLinears and the next QuantizeLinear): joined along the remapped axis, NHWC
// in, NHWC out (the Transposes around it took more than half of int8 SqueezeNet's time).
bool is_rank4_concat(const Node* n) {
  if (!rewrite::is_op(n, "Concat") || n->inputs.empty()) return false;
  for (const Value* v : n->inputs)
    if (!v || !v->shape_known || v->shape.rank() != 4) return false;
  return true;
}

// Element-wise ops compute the same values in any layout. Between int8 ops (EfficientNet's
// DequantizeLinear -> Sigmoid -> Mul -> QuantizeLinear, the SE block's channel scale) they
// follow their inputs to NHWC when every input is either rank 4 or one element.
bool is_elementwise(const Node* n) {
  static const std::set<std::string> ops{"Sigmoid", "Relu", "Clip", "HardSigmoid", "HardSwish",
                                         "Tanh", "Add", "Sub", "Mul", "Div"};
  if (!n->domain.empty()) return false;
  if (n->op_type == "QuantizeLinear" || n->op_type == "DequantizeLinear")  // per tensor only
    return one_element(n->input(1)) && (!n->input(2) || one_element(n->input(2)));
  return ops.count(n->op_type) > 0;
}

// The inputs of `n` that carry NHWC data once `n` is converted.
std::vector<size_t> data_inputs(const Node* n) {
  if (is_qop(n, "QConv")) return {0, 3};
  if (is_qop(n, "QAdd")) return {0, 1};
  if (is_rank4_concat(n)) {
    std::vector<size_t> all(n->inputs.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    return all;
  }
  if (is_elementwise(n)) {
    std::vector<size_t> rank4;
    for (size_t i = 0; i < n->inputs.size(); ++i)
      if (n->inputs[i] && n->inputs[i]->shape_known && n->inputs[i]->shape.rank() == 4)
        rank4.push_back(i);
    return rank4;
  }
  return {0};
}

const Tensor* int_constant(const Value* v) {
  const Tensor* t = rewrite::constant_of(v);
  return t && (t->dtype() == DType::i64 || t->dtype() == DType::i32) ? t : nullptr;
}

// Slice (opset >= 10, constant starts/ends/axes) and Pad (constant pads, no axes input).
bool convertible_slice_pad(const Node* n) {
  if (!rank4_int8(n->input(0)) || n->attrs.has("pads") || n->attrs.has("starts")) return false;
  if (rewrite::is_op(n, "Slice"))
    return int_constant(n->input(1)) && int_constant(n->input(2)) &&
           (!n->input(3) || int_constant(n->input(3)));
  if (rewrite::is_op(n, "Pad"))
    return int_constant(n->input(1)) && int_constant(n->input(1))->numel() == 8 && !n->input(3);
  return false;
}

Tensor i64_tensor(const std::vector<int64_t>& v) {
  return Tensor::from_vector(v, Shape{static_cast<int64_t>(v.size())});
}

void convert_node(Graph& g, Node* n) {
  if (rewrite::is_op(n, "Slice")) {
    const int64_t count = int_constant(n->input(1))->numel();
    std::vector<int64_t> axes;
    if (n->input(3)) {
      axes = read_int_tensor(*n, *int_constant(n->input(3)), "axes");
      for (int64_t& a : axes) a = kToNhwc[a < 0 ? a + 4 : a];
    } else {
      for (int64_t i = 0; i < count; ++i) axes.push_back(kToNhwc[i]);
    }
    while (n->inputs.size() < 4) n->inputs.push_back(nullptr);
    g.set_input(n, 3, quant::add_unique_constant(g, n->name + ".axes_nhwc", i64_tensor(axes)));
  } else if (rewrite::is_op(n, "Pad")) {
    std::vector<int64_t> pads = read_int_tensor(*n, *int_constant(n->input(1)), "pads");
    std::vector<int64_t> nhwc(8);
    for (int a = 0; a < 4; ++a) {
      nhwc[kToNhwc[a]] = pads[a];
      nhwc[4 + kToNhwc[a]] = pads[4 + a];
    }
    g.set_input(n, 1, quant::add_unique_constant(g, n->name + ".pads_nhwc", i64_tensor(nhwc)));
  } else if (is_rank4_concat(n)) {
    const int64_t axis = n->attrs.get_int("axis", 0);
    n->attrs.set("axis", kToNhwc[axis < 0 ? axis + 4 : axis]);
  } else if (is_spatial_qop(n)) {
    n->attrs.set("layout", std::string("NHWC"));
  }
}

Value* transposed(Graph& g, Value* v, bool to_nhwc, std::map<Value*, Value*>& cache) {
  if (auto it = cache.find(v); it != cache.end()) return it->second;
  Attributes a;
  a.set("perm", to_nhwc ? std::vector<int64_t>{0, 2, 3, 1} : std::vector<int64_t>{0, 3, 1, 2});
  Node* t = g.add_node("Transpose", v->name + (to_nhwc ? "_to_nhwc" : "_to_nchw"), {v}, 1, a);
  cache[v] = t->outputs[0];
  return t->outputs[0];
}

}  // namespace

bool int8_to_nhwc(Graph& g, PassLog& log) {
  g.infer_shapes();  // of the values that the folding made (a QMaxPool's before its DQ)
  std::set<Node*> nhwc;
  const std::vector<Node*> order = g.topo_order();
  auto produced_nhwc = [&](const Value* v) { return v && nhwc.count(v->producer); };
  for (Node* n : order) {
    if (n->attrs.get_string("layout", "NCHW") != "NCHW") continue;
    if (is_spatial_qop(n) && rank4_int8(n->inputs[0])) {
      nhwc.insert(n);
    } else if (is_qop(n, "QAdd") && rank4_int8(n->inputs[0]) && produced_nhwc(n->inputs[0]) &&
               produced_nhwc(n->inputs[1])) {
      nhwc.insert(n);
    } else if (convertible_slice_pad(n) && produced_nhwc(n->inputs[0])) {
      nhwc.insert(n);
    } else if (is_rank4_concat(n) && !n->outputs[0]->is_graph_output &&
               std::all_of(n->inputs.begin(), n->inputs.end(), produced_nhwc)) {
      nhwc.insert(n);
    } else if (is_elementwise(n) && !n->outputs[0]->is_graph_output) {
      const std::vector<size_t> data = data_inputs(n);
      bool follows = !data.empty();
      for (size_t i = 0; i < n->inputs.size(); ++i) {
        const Value* v = n->inputs[i];
        const bool is_data = std::find(data.begin(), data.end(), i) != data.end();
        follows = follows && (is_data ? produced_nhwc(v) : !v || one_element(v));
      }
      if (follows) nhwc.insert(n);
    }
  }
  if (nhwc.empty()) return false;

  std::map<Value*, Value*> to_nhwc, to_nchw;
  for (Node* n : order) {
    if (!nhwc.count(n)) continue;
    convert_node(g, n);
    for (size_t i : data_inputs(n)) {
      Value* v = n->input(i);
      if (v && !produced_nhwc(v)) g.set_input(n, i, transposed(g, v, true, to_nhwc));
    }
  }
  for (Node* n : order) {
    if (!nhwc.count(n)) continue;
    Value* out = n->outputs[0];
    const std::vector<Use> uses = out->uses;
    for (const Use& u : uses) {
      const std::vector<size_t> data = data_inputs(u.node);
      bool nhwc_user =
          nhwc.count(u.node) && std::find(data.begin(), data.end(), u.input_index) != data.end();
      if (!nhwc_user) g.set_input(u.node, u.input_index, transposed(g, out, false, to_nchw));
    }
    if (out->is_graph_output) {
      // The graph output keeps its name and NCHW layout; the NHWC tensor is renamed.
      const std::string name = out->name;
      Value* back = transposed(g, out, false, to_nchw);
      std::vector<Value*> outputs = g.outputs();
      g.clear_outputs();
      for (Value* o : outputs) g.add_output(o == out ? back : o);
      g.rename_value(out, name + "_nhwc");
      g.rename_value(back, name);
    }
    log.note("moved " + n->describe() + " to NHWC");
  }
  g.infer_shapes();
  return true;
}

}  // namespace minfer::passes
