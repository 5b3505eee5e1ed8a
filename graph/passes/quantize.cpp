// quantize_graph: an fp32 graph plus a calibration table -> a QDQ graph of standard ONNX ops
// (docs/int8.md, "From QDQ to int8 ops").
#include "graph/passes/quantize.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "graph/passes/rewrite.h"
#include "ops/int8/int8_math.h"

namespace minfer {

namespace {

enum class Kind { None, Conv, Gemm, MatMul, Add, Pool, PassThrough };

bool is_float_activation(const Value* v) {
  return v && v->dtype == DType::f32 && !v->is_constant() && v->shape_known;
}

const Tensor* float_constant(const Value* v) {
  const Tensor* t = rewrite::constant_of(v);
  return t && t->dtype() == DType::f32 ? t : nullptr;
}

bool pad_is_pass_through(const Node& n) {
  if (n.attrs.get_string("mode", "constant") != "constant") return true;
  if (n.attrs.has("value") && n.attrs.get_float("value", 0.f) != 0.f) return false;
  if (!n.input(2)) return true;
  const Tensor* c = float_constant(n.input(2));
  return c && c->numel() == 1 && c->data<float>()[0] == 0.f;
}

Kind classify(const Node& n) {
  if (!n.domain.empty() || n.inputs.empty() || !is_float_activation(n.inputs[0])) return Kind::None;
  const std::string& op = n.op_type;
  const Value* x = n.inputs[0];
  if (op == "Conv") {
    const Tensor* w = float_constant(n.input(1));
    bool bias_ok = !n.input(2) || float_constant(n.input(2));
    return w && w->rank() == x->shape.rank() && bias_ok ? Kind::Conv : Kind::None;
  }
  if (op == "Gemm") {
    const Tensor* w = float_constant(n.input(1));
    if (!w || w->rank() != 2 || x->shape.rank() != 2) return Kind::None;
    if (n.attrs.get_float("alpha", 1.f) != 1.f || n.attrs.get_int("transA", 0) != 0)
      return Kind::None;
    const int64_t m = n.attrs.get_int("transB", 0) ? w->dim(0) : w->dim(1);
    if (n.input(2)) {
      const Tensor* c = float_constant(n.input(2));
      if (!c || c->numel() != m || n.attrs.get_float("beta", 1.f) != 1.f) return Kind::None;
    }
    return Kind::Gemm;
  }
  if (op == "MatMul") {
    // Of a constant [K, M]: x [..., K] of any rank from 2 (a ViT's or ConvNeXt's Linear
    // layers), whose rows are one 2-D product (QGemm's A).
    const Tensor* w = float_constant(n.input(1));
    return w && w->rank() == 2 && x->shape.rank() >= 2 ? Kind::MatMul : Kind::None;
  }
  if (op == "Add") {
    const Value* y = n.input(1);
    return n.inputs.size() == 2 && is_float_activation(y) && x->shape == y->shape &&
                   x->shape.is_static() == y->shape.is_static()
               ? Kind::Add
               : Kind::None;
  }
  if (op == "GlobalAveragePool" || op == "AveragePool")
    return x->shape.rank() >= 3 ? Kind::Pool : Kind::None;
  if (op == "MaxPool") return n.outputs.size() == 1 ? Kind::PassThrough : Kind::None;
  if (op == "Pad") return pad_is_pass_through(n) ? Kind::PassThrough : Kind::None;
  if (op == "Slice" || op == "Flatten" || op == "Reshape" || op == "Transpose" || op == "Squeeze" ||
      op == "Unsqueeze" || op == "Identity")
    return Kind::PassThrough;
  return Kind::None;
}

bool has_weight(Kind k) { return k == Kind::Conv || k == Kind::Gemm || k == Kind::MatMul; }

class Quantizer {
 public:
  Quantizer(Graph& g, const CalibrationTable& table, const QuantizeOptions& options)
      : g_(g), table_(table), options_(options) {}

  void run() {
    const std::vector<Node*> order = g_.topo_order();
    choose_nodes(order);
    for (Node* n : order) {
      auto it = kinds_.find(n);
      if (it == kinds_.end()) continue;
      const Kind kind = it->second;
      const size_t n_act = kind == Kind::Add ? 2 : 1;
      for (size_t i = 0; i < n_act; ++i) g_.set_input(n, i, dequantized(n->inputs[i], *n));
      if (has_weight(kind)) quantize_weights(*n, kind, params_of_input(*n));
    }
    g_.remove_unused_values();
    auto& opset = g_.opset_imports[""];
    opset = std::max<int64_t>(opset, 13);  // per-axis QuantizeLinear/DequantizeLinear
    g_.infer_shapes();
  }

 private:
  bool excluded(const Node& n) const {
    const auto& names = options_.exclude_nodes;
    const auto& types = options_.exclude_op_types;
    return std::find(names.begin(), names.end(), n.name) != names.end() ||
           std::find(types.begin(), types.end(), n.op_type) != types.end();
  }

  // Weighted ops are quantized whenever they can be (a float output is fine); Add, pools and
  // pass-through ops only when their result feeds a quantized op (through a Relu/Clip).
  void choose_nodes(const std::vector<Node*>& order) {
    std::vector<Node*> weighted;
    for (Node* n : order)
      if (has_weight(classify(*n))) weighted.push_back(n);
    std::set<const Node*> skip;
    if (options_.keep_first_last_fp32 && !weighted.empty()) {
      skip.insert(weighted.front());
      skip.insert(weighted.back());
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      Node* n = *it;
      const Kind kind = classify(*n);
      if (kind == Kind::None || excluded(*n) || skip.count(n)) continue;
      if (!has_weight(kind) && !feeds_quantized(n->outputs[0]) && !max_pool_of_quantized(*n, skip))
        continue;
      kinds_[n] = kind;
    }
  }

  // A MaxPool whose input is quantized for a weighted reader (Inception's reduction blocks:
  // the pool beside the convs, into a float Concat) reads the same int8 values: the folding
  // pass then runs it on int8 (QMaxPool) in the int8 region's layout, where a float pool took
  // the block back to NCHW and cost Transposes of every branch.
  bool max_pool_of_quantized(const Node& n, const std::set<const Node*>& skip) const {
    if (n.op_type != "MaxPool" || classify(n) != Kind::PassThrough) return false;
    for (const Use& u : n.inputs[0]->uses)
      if (u.node != &n && u.input_index == 0 && has_weight(classify(*u.node)) &&
          !excluded(*u.node) && !skip.count(u.node))
        return true;
    return false;
  }

  bool feeds_quantized(const Value* v) const {
    for (const Use& u : v->uses) {
      if (kinds_.count(u.node)) return true;
      const bool act = rewrite::is_op(u.node, "Relu") || rewrite::is_op(u.node, "Clip");
      if (act && u.input_index == 0 && feeds_quantized(u.node->outputs[0])) return true;
    }
    return false;
  }

  // The parameters of an activation: a quantized pass-through op's output has its input's.
  int8::QParam params_of(const Value* v) {
    if (auto it = params_.find(v); it != params_.end()) return it->second;
    int8::QParam p;
    const Node* prod = v->producer;
    auto kind = prod ? kinds_.find(prod) : kinds_.end();
    if (kind != kinds_.end() && kind->second == Kind::PassThrough) {
      p = params_of(original_input_.count(prod) ? original_input_.at(prod) : prod->inputs[0]);
    } else {
      auto r = table_.ranges.find(v->name);
      check(r != table_.ranges.end(), ErrorCode::InvalidArgument,
            "quantize: the calibration table has no range for tensor '" + v->name +
                "' (was it made for another model?)");
      p = int8::choose_activation_params(r->second.lo, r->second.hi);
    }
    params_[v] = p;
    return p;
  }

  int8::QParam params_of_input(const Node& n) { return params_of(original_input_.at(&n)); }

  // A DequantizeLinear(QuantizeLinear(v)) for `consumer`: one Q per tensor, one DQ per user.
  Value* dequantized(Value* v, const Node& consumer) {
    if (!original_input_.count(&consumer)) original_input_[&consumer] = v;
    const int8::QParam p = params_of(v);
    auto [it, fresh] = quantized_.try_emplace(v, nullptr);
    if (fresh) {
      scale_[v] =
          quant::add_unique_constant(g_, v->name + "_scale", Tensor::scalar<float>(p.scale));
      zero_[v] = quant::add_unique_constant(
          g_, v->name + "_zero_point", Tensor::scalar<int8_t>(static_cast<int8_t>(p.zero_point)));
      Node* q = g_.add_node("QuantizeLinear", node_name(v->name + "_QuantizeLinear"),
                            {v, scale_[v], zero_[v]});
      it->second = q->outputs[0];
    }
    Node* dq = g_.add_node("DequantizeLinear", node_name(v->name + "_DequantizeLinear"),
                           {it->second, scale_[v], zero_[v]});
    return dq->outputs[0];
  }

  // int8 weights per output channel (on `axis` of w) and an int32 bias behind
  // DequantizeLinear nodes.
  void quantize_weights(Node& n, Kind kind, const int8::QParam& x) {
    const Tensor& w = *rewrite::constant_of(n.inputs[1]);
    const bool trans_b = kind == Kind::Gemm && n.attrs.get_int("transB", 0) != 0;
    const int axis = (kind == Kind::Conv || trans_b) ? 0 : 1;
    const int64_t channels = w.dim(axis);
    const int64_t inner = axis == 0 ? w.numel() / channels : 1;
    const int64_t outer_stride = axis == 0 ? 0 : channels;  // axis 1 of a 2-D [K, M]
    auto channel_of = [&](int64_t i) { return axis == 0 ? i / inner : i % outer_stride; };
    const float* wp = w.data<float>();
    std::vector<float> max_abs(channels, 0.f);
    for (int64_t i = 0; i < w.numel(); ++i)
      max_abs[channel_of(i)] = std::max(max_abs[channel_of(i)], std::fabs(wp[i]));
    std::vector<float> scales(channels);
    for (int64_t c = 0; c < channels; ++c) scales[c] = int8::choose_weight_scale(max_abs[c]);
    Tensor wq(DType::i8, w.shape());
    for (int64_t i = 0; i < w.numel(); ++i)
      wq.data<int8_t>()[i] = static_cast<int8_t>(int8::quantize_value(
          wp[i], scales[channel_of(i)], 0, -int8::kWeightMax, int8::kWeightMax));
    const std::string wname = n.inputs[1]->name;
    Value* wq_v = quant::add_unique_constant(g_, wname + "_quantized", wq);
    Value* ws_v = quant::add_unique_constant(g_, wname + "_scale",
                                             Tensor::from_vector(scales, Shape{channels}));
    Value* wz_v = quant::add_unique_constant(
        g_, wname + "_zero_point",
        Tensor::from_vector(std::vector<int8_t>(channels, 0), Shape{channels}));
    Attributes a;
    a.set("axis", int64_t{axis});
    Node* dq = g_.add_node("DequantizeLinear", node_name(wname + "_DequantizeLinear"),
                           {wq_v, ws_v, wz_v}, 1, a);
    g_.set_input(&n, 1, dq->outputs[0]);

    // A MatMul's bias is the Add after it (a Linear layer's export): its constant [M].
    Node* bias_add = kind == Kind::MatMul ? matmul_bias_add(n, channels) : nullptr;
    const size_t bias_input = bias_add ? (bias_add->inputs[0] == n.outputs[0] ? 1 : 0) : 2;
    Node& bias_node = bias_add ? *bias_add : n;
    if (!bias_node.input(bias_input)) return;
    const Tensor& b = *rewrite::constant_of(bias_node.inputs[bias_input]);
    std::vector<float> bias_scale(channels);
    std::vector<int32_t> bq(channels);
    for (int64_t c = 0; c < channels; ++c) {
      bias_scale[c] = x.scale * scales[c];  // the float32 product, as ONNX Runtime writes it
      double v = std::nearbyint(double(b.data<float>()[c]) / double(bias_scale[c]));
      bq[c] = static_cast<int32_t>(std::clamp(v, -2147483648.0, 2147483647.0));
    }
    const std::string bname = bias_node.inputs[bias_input]->name;
    Value* bq_v = quant::add_unique_constant(g_, bname + "_quantized",
                                             Tensor::from_vector(bq, Shape{channels}));
    Value* bs_v = quant::add_unique_constant(g_, bname + "_scale",
                                             Tensor::from_vector(bias_scale, Shape{channels}));
    Value* bz_v = quant::add_unique_constant(
        g_, bname + "_zero_point",
        Tensor::from_vector(std::vector<int32_t>(channels, 0), Shape{channels}));
    Attributes ab;
    ab.set("axis", int64_t{0});
    Node* dqb = g_.add_node("DequantizeLinear", node_name(bname + "_DequantizeLinear"),
                            {bq_v, bs_v, bz_v}, 1, ab);
    g_.set_input(&bias_node, bias_input, dqb->outputs[0]);
  }

  // The Add of a float constant [channels] that alone reads a MatMul's output, or null.
  static Node* matmul_bias_add(const Node& n, int64_t channels) {
    Node* add = rewrite::sole_user(n.outputs[0]);
    if (!rewrite::is_op(add, "Add") || add->inputs.size() != 2) return nullptr;
    const Value* other = add->inputs[add->inputs[0] == n.outputs[0] ? 1 : 0];
    const Tensor* b = float_constant(other);
    return b && b->rank() == 1 && b->numel() == channels && other->uses.size() == 1 ? add : nullptr;
  }

  // Node names must be unique in an ONNX file.
  std::string node_name(const std::string& base) const {
    std::string name = base;
    for (int k = 1; g_.find_node(name) || g_.find_value(name); ++k)
      name = base + "_" + std::to_string(k);
    return name;
  }

  Graph& g_;
  const CalibrationTable& table_;
  const QuantizeOptions& options_;
  std::map<const Node*, Kind> kinds_;
  std::map<const Node*, Value*> original_input_;  // a quantized node's float input 0
  std::map<const Value*, int8::QParam> params_;
  std::map<const Value*, Value*> quantized_, scale_, zero_;
};

}  // namespace

void quantize_graph(Graph& g, const CalibrationTable& table, const QuantizeOptions& options) {
  prepare_for_quantization(g);
  for (const Node* n : g.nodes())
    check(!rewrite::is_op(n, "QuantizeLinear") && !rewrite::is_op(n, "DequantizeLinear"),
          ErrorCode::InvalidArgument,
          "quantize: the graph is already quantized (it has " + n->describe() + ")");
  Quantizer(g, table, options).run();
}

}  // namespace minfer
