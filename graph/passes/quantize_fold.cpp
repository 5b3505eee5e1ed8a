// QDQ folding (docs/int8.md, "From QDQ to int8 ops"): DequantizeLinear -> op -> QuantizeLinear
// patterns become com.minfer int8 ops. Anything that does not match stays as it is, which
// runs in float with the Q/DQ at its boundary: the QDQ graph's exact meaning.
#include <cmath>
#include <set>

#include "graph/passes/passes.h"
#include "graph/passes/quantize.h"
#include "graph/passes/rewrite.h"
#include "ops/int8/int8_ops.h"

namespace minfer::passes {

namespace {

using quant::QdqParams;

// A per-tensor int8 DequantizeLinear input: the int8 value and its parameters.
struct Int8In {
  Value* q = nullptr;
  float scale = 1;
  int32_t zero_point = 0;
};

std::optional<Int8In> int8_input(const Value* v) {
  Node* dq = quant::dq_producer(v);
  if (!dq) return std::nullopt;
  auto p = quant::qdq_params(*dq);
  if (!p || !p->per_tensor() || p->dtype != DType::i8) return std::nullopt;
  return Int8In{dq->inputs[0], p->scale[0], p->zero_point[0]};
}

// The per-tensor int8 QuantizeLinear that is the only user of `v`.
struct Int8Out {
  Node* q = nullptr;
  float scale = 1;
  int32_t zero_point = 0;
};

std::optional<Int8Out> int8_output(const Value* v) {
  Node* u = rewrite::sole_user(v);
  if (!rewrite::is_op(u, "QuantizeLinear") || u->inputs[0] != v) return std::nullopt;
  auto p = quant::qdq_params(*u);
  if (!p || !p->per_tensor() || p->dtype != DType::i8) return std::nullopt;
  return Int8Out{u, p->scale[0], p->zero_point[0]};
}

// A Relu or constant Clip that is the only user of `v`: its real bounds.
struct Activation {
  Node* node = nullptr;
  bool relu = false;
  float lo = -INFINITY, hi = INFINITY;
};

Activation activation_after(const Value* v) {
  Activation a;
  Node* u = rewrite::sole_user(v);
  if (!u || u->inputs[0] != v) return a;
  if (rewrite::is_op(u, "Relu")) {
    a = {u, true, 0.f, INFINITY};
  } else if (rewrite::is_op(u, "Clip")) {
    float lo = u->attrs.get_float("min", -INFINITY), hi = u->attrs.get_float("max", INFINITY);
    for (size_t i = 1; i <= 2; ++i) {
      if (!u->input(i)) continue;
      const Tensor* t = rewrite::constant_of(u->input(i));
      if (!t || t->dtype() != DType::f32 || t->numel() != 1) return a;
      (i == 1 ? lo : hi) = t->data<float>()[0];
    }
    a = {u, false, lo, hi};
  }
  return a;
}

// The int8 clamp [y_min, y_max] of an activation on an output quantized with `out`.
void set_bounds(Attributes& attrs, const std::string& prefix, const Activation& act,
                const Int8Out& out) {
  int32_t lo = int8::kQMin, hi = int8::kQMax;
  if (act.node) {
    if (std::isfinite(act.lo))
      lo = std::max(lo, int8::quantize_value(act.lo, out.scale, out.zero_point, -128, 127));
    if (std::isfinite(act.hi))
      hi = std::min(hi, int8::quantize_value(act.hi, out.scale, out.zero_point, -128, 127));
  }
  attrs.set(prefix + "_min", int64_t{lo});
  attrs.set(prefix + "_max", int64_t{hi});
}

// A constant int8 weight behind a symmetric DequantizeLinear (zero points all 0).
struct Weight {
  const Tensor* q = nullptr;
  std::vector<float> scale;  // 1 or one per channel on `axis`
  int64_t axis = -1;
};

std::optional<Weight> int8_weight(const Value* v) {
  Node* dq = quant::dq_producer(v);
  if (!dq) return std::nullopt;
  auto p = quant::qdq_params(*dq);
  const Tensor* q = rewrite::constant_of(dq->inputs[0]);
  if (!p || !q || q->dtype() != DType::i8) return std::nullopt;
  for (int32_t z : p->zero_point)
    if (z != 0) return std::nullopt;
  return Weight{q, p->scale, p->per_tensor() ? -1 : p->axis};
}

// The bias as int32 at scale s_x * s_w[c] (the float32 product): a DequantizeLinear of an
// int32 constant with that scale is used as is; anything else is re-quantized once.
std::optional<Tensor> int32_bias(const Value* v, float sx, const std::vector<float>& sw,
                                 int64_t channels) {
  std::vector<double> real(channels);
  std::vector<int32_t> exact(channels);
  std::vector<bool> is_exact(channels, false);
  if (Node* dq = quant::dq_producer(v)) {
    auto p = quant::qdq_params(*dq);
    const Tensor* q = rewrite::constant_of(dq->inputs[0]);
    if (!p || !q || q->dtype() != DType::i32 || q->numel() != channels) return std::nullopt;
    for (int64_t c = 0; c < channels; ++c) {
      const size_t k = p->per_tensor() ? 0 : static_cast<size_t>(c);
      const int64_t d = int64_t{q->data<int32_t>()[c]} - p->zero_point[k];
      real[c] = static_cast<double>(d) * p->scale[k];
      if (p->zero_point[k] == 0 && p->scale[k] == sx * sw[sw.size() == 1 ? 0 : c]) {
        exact[c] = q->data<int32_t>()[c];
        is_exact[c] = true;
      }
    }
  } else {
    const Tensor* b = rewrite::constant_of(v);
    if (!b || b->dtype() != DType::f32 || b->numel() != channels) return std::nullopt;
    for (int64_t c = 0; c < channels; ++c) real[c] = b->data<float>()[c];
  }
  std::vector<int32_t> out(channels);
  for (int64_t c = 0; c < channels; ++c) {
    const float s = sx * sw[sw.size() == 1 ? 0 : c];
    double r = std::nearbyint(real[c] / double(s));
    out[c] =
        is_exact[c] ? exact[c] : static_cast<int32_t>(std::clamp(r, -2147483648.0, 2147483647.0));
  }
  return Tensor::from_vector(out, Shape{channels});
}

// True when `attrs` make a valid output stage (multipliers in range) for the node.
bool stage_ok(const std::string& op, const std::string& name, const Attributes& attrs,
              int64_t channels, bool residual) {
  Node probe;
  probe.op_type = op;
  probe.name = name;
  probe.domain = kMinferDomain;
  probe.attrs = attrs;
  try {
    int8::parse_output_stage(probe, channels, residual);
    return true;
  } catch (const Error&) {
    return false;
  }
}

class Folder {
 public:
  Folder(Graph& g, PassLog& log) : g_(g), log_(log) {}

  bool run() {
    bool changed = false;
    for (Node* n : g_.topo_order()) {
      if (removed_.count(n) || !n->domain.empty()) continue;
      const std::string& op = n->op_type;
      if (op == "Conv")
        changed |= fold_conv(n);
      else if (op == "Gemm" || op == "MatMul")
        changed |= fold_gemm(n);
      else if (op == "Add")
        changed |= fold_add(n);
      else if (op == "GlobalAveragePool" || op == "AveragePool")
        changed |= fold_avg_pool(n);
      else if (op == "Concat")
        changed |= fold_concat(n);
      else
        changed |= fold_pass_through(n);
    }
    return changed;
  }

 private:
  // The activation and output Q after `lead` (the node, or a MatMul and its bias Add);
  // appends them to `chain`. False when an int8 output is required and there is none.
  bool output_chain(const std::vector<Node*>& lead, std::vector<Node*>& chain, Activation& act,
                    std::optional<Int8Out>& out) {
    chain = lead;
    const Value* cur = lead.back()->outputs[0];
    act = activation_after(cur);
    if (act.node) {
      chain.push_back(act.node);
      cur = act.node->outputs[0];
    }
    out = int8_output(cur);
    if (out) chain.push_back(out->q);
    return true;
  }

  // Output attributes for QConv/QGemm; false if a float output cannot express the chain.
  bool set_output(Attributes& a, const Activation& act, const std::optional<Int8Out>& out) {
    if (out) {
      a.set("y_scale", out->scale);
      a.set("y_zero_point", int64_t{out->zero_point});
      set_bounds(a, "y", act, *out);
      return true;
    }
    if (act.node && !act.relu) return false;  // a float Clip: leave it to the fp32 path
    if (act.relu) a.set("activation", std::string("Relu"));
    return true;
  }

  void replace(const std::vector<Node*>& chain, Node* replacement, const std::string& what) {
    log_.note("folded " + what + " into " + replacement->describe());
    rewrite::replace_chain(g_, chain, replacement, removed_);
  }

  // Replaces `n` (with its bias Add where `bias_add`) and the activation/QuantizeLinear chain
  // after it with one int8 node `op` (QConv, QGemm) of int8 weights `w` and int32 `bias`; false
  // if the output stage does not fit.
  bool emit(const char* op, Node* n, Attributes a, const Int8In& x,
            const std::vector<float>& w_scale, const Tensor& w, const std::optional<Tensor>& bias,
            int64_t channels, Node* bias_add = nullptr) {
    std::vector<Node*> chain, lead{n};
    if (bias_add) lead.push_back(bias_add);
    Activation act;
    std::optional<Int8Out> out;
    output_chain(lead, chain, act, out);
    a.set("x_scale", x.scale);
    a.set("x_zero_point", int64_t{x.zero_point});
    a.set("w_scale", w_scale);
    if (!set_output(a, act, out)) {  // keep only the node; the chain stays in float
      chain = lead;
      out.reset();
      act = {};
      set_output(a, act, out);
    }
    if (!stage_ok(op, n->name, a, channels, false)) return false;
    std::vector<Value*> inputs{x.q, quant::add_unique_constant(g_, n->name + ".w_int8", w)};
    if (bias) inputs.push_back(quant::add_unique_constant(g_, n->name + ".b_int32", *bias));
    replace(chain, g_.add_node(op, n->name, inputs, 1, a, kMinferDomain), n->describe());
    return true;
  }

  bool fold_conv(Node* conv) {
    auto x = int8_input(conv->inputs[0]);
    auto w = int8_weight(conv->input(1));
    if (!x || !w || w->q->rank() < 3) return false;
    const int64_t channels = w->q->dim(0);
    if (w->axis > 0 || (w->axis == 0 && static_cast<int64_t>(w->scale.size()) != channels))
      return false;
    std::optional<Tensor> bias;
    if (conv->input(2) && !(bias = int32_bias(conv->input(2), x->scale, w->scale, channels)))
      return false;
    return emit("QConv", conv, conv->attrs, *x, w->scale, *w->q, bias, channels);
  }

  bool fold_gemm(Node* n) {
    const bool matmul = n->op_type == "MatMul";
    auto x = int8_input(n->inputs[0]);
    auto w = int8_weight(n->input(1));
    if (!x || !w || w->q->rank() != 2 || !x->q->shape_known) return false;
    if (x->q->shape.rank() != 2 && !(matmul && x->q->shape.rank() > 2)) return false;
    if (!matmul && (n->attrs.get_float("alpha", 1.f) != 1.f || n->attrs.get_int("transA", 0)))
      return false;
    const bool trans_b = !matmul && n->attrs.get_int("transB", 0) != 0;
    const int64_t channels = trans_b ? w->q->dim(0) : w->q->dim(1);
    const int64_t wanted_axis = trans_b ? 0 : 1;
    if (w->axis >= 0 &&
        (w->axis != wanted_axis || static_cast<int64_t>(w->scale.size()) != channels))
      return false;
    std::optional<Tensor> bias;
    if (!matmul && n->input(2)) {
      if (n->attrs.get_float("beta", 1.f) != 1.f) return false;
      if (!(bias = int32_bias(n->input(2), x->scale, w->scale, channels))) return false;
    }
    // A MatMul's bias: the Add of a constant [M] that alone reads its output.
    Node* bias_add = nullptr;
    if (matmul)
      if (Node* add = rewrite::sole_user(n->outputs[0]);
          rewrite::is_op(add, "Add") && add->inputs.size() == 2) {
        const Value* b = add->inputs[add->inputs[0] == n->outputs[0] ? 1 : 0];
        const bool flat = b->shape_known && b->shape.rank() == 1 && b->shape[0] == channels;
        if (flat && b->uses.size() == 1 && (bias = int32_bias(b, x->scale, w->scale, channels)))
          bias_add = add;
      }
    // W as [M, K] int8.
    Tensor wt = *w->q;
    if (!trans_b) {
      const int64_t K = w->q->dim(0), M = w->q->dim(1);
      wt = Tensor(DType::i8, Shape{M, K});
      for (int64_t k = 0; k < K; ++k)
        for (int64_t m = 0; m < M; ++m)
          wt.data<int8_t>()[m * K + k] = w->q->data<int8_t>()[k * M + m];
    }
    return emit("QGemm", n, {}, *x, w->scale, wt, bias, channels, bias_add);
  }

  bool fold_add(Node* n) {
    if (n->inputs.size() != 2) return false;
    auto a = int8_input(n->inputs[0]);
    auto b = int8_input(n->inputs[1]);
    if (!a || !b || !a->q->shape_known || !b->q->shape_known || a->q->shape != b->q->shape)
      return false;
    std::vector<Node*> chain;
    Activation act;
    std::optional<Int8Out> out;
    output_chain({n}, chain, act, out);
    if (!out) return false;
    Attributes at;
    at.set("a_scale", a->scale);
    at.set("a_zero_point", int64_t{a->zero_point});
    at.set("b_scale", b->scale);
    at.set("b_zero_point", int64_t{b->zero_point});
    at.set("y_scale", out->scale);
    at.set("y_zero_point", int64_t{out->zero_point});
    set_bounds(at, "y", act, *out);
    try {
      int8::make_add_multipliers(double(a->scale) / out->scale, double(b->scale) / out->scale);
    } catch (const Error&) {
      return false;
    }
    Node* q = g_.add_node("QAdd", n->name, {a->q, b->q}, 1, at, kMinferDomain);
    replace(chain, q, n->describe());
    return true;
  }

  bool fold_avg_pool(Node* n) {
    auto x = int8_input(n->inputs[0]);
    auto out = int8_output(n->outputs[0]);
    if (!x || !out) return false;
    Attributes a = n->attrs;
    a.set("x_scale", x->scale);
    a.set("x_zero_point", int64_t{x->zero_point});
    a.set("y_scale", out->scale);
    a.set("y_zero_point", int64_t{out->zero_point});
    try {
      int8::make_multiplier(double(x->scale) / double(out->scale));
    } catch (const Error&) {
      return false;
    }
    Node* q = g_.add_node("Q" + n->op_type, n->name, {x->q}, 1, a, kMinferDomain);
    replace({n, out->q}, q, n->describe());
    return true;
  }

  // DQ(x_i) -> Concat -> Q, every x_i with the Q's parameters: the Concat of the int8 values.
  bool fold_concat(Node* n) {
    auto out = int8_output(n->outputs[0]);
    if (!out || n->inputs.empty()) return false;
    std::vector<Value*> inputs;
    for (Value* v : n->inputs) {
      auto x = int8_input(v);
      if (!x || x->scale != out->scale || x->zero_point != out->zero_point) return false;
      inputs.push_back(x->q);
    }
    replace({n, out->q}, g_.add_node("Concat", n->name, inputs, 1, n->attrs), n->describe());
    return true;
  }

  // DQ(x) -> MaxPool/Slice/Pad/Flatten/... -> Q with the same parameters: the op on int8.
  bool fold_pass_through(Node* n) {
    static const std::set<std::string> kOps = {"MaxPool", "Slice",     "Pad",
                                               "Flatten", "Reshape",   "Transpose",
                                               "Squeeze", "Unsqueeze", "Identity"};
    if (!kOps.count(n->op_type) || n->outputs.size() != 1 || n->inputs.empty()) return false;
    auto x = int8_input(n->inputs[0]);
    auto out = int8_output(n->outputs[0]);
    if (x && n->op_type == "MaxPool" &&
        (!out || out->scale != x->scale || out->zero_point != x->zero_point))
      return max_pool_before_dequantize(n, *x);
    if (!x || !out || out->scale != x->scale || out->zero_point != x->zero_point) return false;
    std::vector<Value*> inputs = n->inputs;
    inputs[0] = x->q;
    Attributes a = n->attrs;
    std::string op = n->op_type, domain;
    if (op == "MaxPool") {
      op = "QMaxPool";
      domain = kMinferDomain;
      a.erase("storage_order");
    } else if (op == "Pad") {
      if (n->attrs.has("pads")) return false;  // opset < 11: a float `value` attribute
      if (n->attrs.get_string("mode", "constant") == "constant") {
        if (inputs.size() > 2 && inputs[2]) {
          const Tensor* c = rewrite::constant_of(inputs[2]);
          if (!c || c->dtype() != DType::f32 || c->numel() != 1 || c->data<float>()[0] != 0.f)
            return false;
        }
        if (inputs.size() < 3) inputs.resize(3, nullptr);
        inputs[2] = quant::add_unique_constant(
            g_, n->name + ".pad_value", Tensor::scalar<int8_t>(static_cast<int8_t>(x->zero_point)));
      }
    }
    Node* q = g_.add_node(op, n->name, inputs, 1, a, domain);
    replace({n, out->q}, q, n->describe());
    return true;
  }

  // DQ(x) -> MaxPool whose float output goes on in float (Inception's reduction blocks: into
  // a Concat): QMaxPool(x) -> DQ instead, the same values (DequantizeLinear is increasing for
  // a positive scale, so the max passes through it) from a quarter of the bytes, and in the
  // int8 region's layout (the float pool and its Concat had taken the block back to NCHW).
  bool max_pool_before_dequantize(Node* n, const Int8In& x) {
    if (!(x.scale > 0) || !no_window_in_padding_only(*n)) return false;
    const Node* dq = quant::dq_producer(n->inputs[0]);
    Attributes a = n->attrs;
    a.erase("storage_order");
    Node* pool = g_.add_node("QMaxPool", n->name, {x.q}, 1, a, kMinferDomain);
    Node* deq = g_.add_node("DequantizeLinear", n->name + "_dequantize",
                            {pool->outputs[0], dq->inputs[1], dq->input(2)}, 1, dq->attrs);
    replace({n}, deq, n->describe());
    return true;
  }

  // True when every window of the pool `n` has a tap inside its input (a window in padding
  // only gives -inf in float, the lowest int8 value in QMaxPool): floor mode, pads shorter
  // than the (dilated) window.
  static bool no_window_in_padding_only(const Node& n) {
    if (n.attrs.get_int("ceil_mode", 0) != 0) return false;
    const std::vector<int64_t> kernel = n.attrs.get_ints("kernel_shape");
    const std::vector<int64_t> pads = n.attrs.get_ints("pads");
    const std::vector<int64_t> dilations = n.attrs.get_ints("dilations");
    if (kernel.empty() || (!pads.empty() && pads.size() != 2 * kernel.size())) return false;
    for (size_t i = 0; i < pads.size(); ++i) {
      const size_t d = i % kernel.size();
      const int64_t dilation = d < dilations.size() ? dilations[d] : 1;
      if (pads[i] >= (kernel[d] - 1) * dilation + 1) return false;
    }
    return true;
  }

  Graph& g_;
  PassLog& log_;
  std::set<const Node*> removed_;
};

bool is_qop(const Node* n, const char* op) { return rewrite::is_op(n, op, kMinferDomain); }

}  // namespace

bool fold_qdq_patterns(Graph& g, PassLog& log) { return Folder(g, log).run(); }

bool quantize_concat_inputs(Graph& g, PassLog& log) {
  bool changed = false;
  for (Node* concat : g.topo_order()) {
    if (!rewrite::is_op(concat, "Concat")) continue;
    Node* q = rewrite::sole_user(concat->outputs[0]);
    if (!rewrite::is_op(q, "QuantizeLinear") || q->inputs[0] != concat->outputs[0]) continue;
    auto p = quant::qdq_params(*q);
    if (!p || !p->per_tensor() || p->dtype != DType::i8) continue;
    bool quantized = false;
    for (size_t i = 0; i < concat->inputs.size(); ++i) {
      Value* v = concat->inputs[i];
      const Node* dq = quant::dq_producer(v);
      auto dp = dq ? quant::qdq_params(*dq) : std::nullopt;
      if (!v ||
          (dp && dp->scale == p->scale && dp->zero_point == p->zero_point && dp->dtype == p->dtype))
        continue;  // already the Q's int8 values
      const std::string name = concat->name + "_input" + std::to_string(i);
      Node* qi = g.add_node("QuantizeLinear", name + "_quantize", {v, q->inputs[1], q->input(2)});
      Node* dqi = g.add_node("DequantizeLinear", name + "_dequantize",
                             {qi->outputs[0], q->inputs[1], q->input(2)});
      g.set_input(concat, i, dqi->outputs[0]);
      quantized = true;
    }
    if (quantized) log.note("quantized the inputs of " + concat->describe());
    changed |= quantized;
  }
  if (changed) g.infer_shapes();  // the new values' int8 dtype, which the folding reads
  return changed;
}

bool fuse_qconv_residual(Graph& g, PassLog& log) {
  bool changed = false;
  std::set<const Node*> removed;
  for (Node* add : g.topo_order()) {
    if (removed.count(add) || !is_qop(add, "QAdd")) continue;
    for (int side = 0; side < 2; ++side) {
      Value* mine = add->inputs[side];
      Value* other = add->inputs[1 - side];
      Node* conv = mine->producer;
      if (!is_qop(conv, "QConv") || conv->input(3) || !conv->attrs.has("y_scale")) continue;
      if (rewrite::sole_user(mine) != add || other == mine || !other->shape_known ||
          !mine->shape_known || other->shape != mine->shape)
        continue;
      const char* z = side == 0 ? "b" : "a";
      Attributes a = conv->attrs;
      a.set("conv_scale", conv->attrs.get_float("y_scale", 1.f));
      a.set("conv_zero_point", conv->attrs.get_int("y_zero_point", 0));
      a.set("conv_min", conv->attrs.get_int("y_min", int8::kQMin));
      a.set("conv_max", conv->attrs.get_int("y_max", int8::kQMax));
      a.set("z_scale", add->attrs.get_float(std::string(z) + "_scale", 1.f));
      a.set("z_zero_point", add->attrs.get_int(std::string(z) + "_zero_point", 0));
      for (const char* k : {"y_scale", "y_zero_point", "y_min", "y_max"})
        if (add->attrs.has(k)) a.set(k, add->attrs.all().at(k));
      const int64_t channels = conv->inputs[1]->shape[0];
      if (!stage_ok("QConv", conv->name, a, channels, true)) continue;
      std::vector<Value*> inputs{conv->inputs[0], conv->inputs[1], conv->input(2), other};
      Node* fused = g.add_node("QConv", conv->name, inputs, 1, a, kMinferDomain);
      log.note("fused " + conv->describe() + " + " + add->describe());
      rewrite::replace_chain(g, {conv, add}, fused, removed);
      changed = true;
      break;
    }
  }
  return changed;
}

bool remove_qdq_pairs(Graph& g, PassLog& log) {
  bool changed = false;
  for (Node* q : g.topo_order()) {
    if (!rewrite::is_op(q, "QuantizeLinear")) continue;
    Node* dq = quant::dq_producer(q->inputs[0]);
    auto qp = quant::qdq_params(*q);
    auto dp = dq ? quant::qdq_params(*dq) : std::nullopt;
    if (!dp || !qp || qp->scale != dp->scale || qp->zero_point != dp->zero_point ||
        qp->dtype != dp->dtype || qp->axis != dp->axis || q->outputs[0]->is_graph_output)
      continue;
    g.replace_all_uses(q->outputs[0], dq->inputs[0]);
    log.note("removed " + q->describe() + " of " + dq->describe());
    changed = true;
  }
  if (changed) eliminate_dead_code(g, log);
  return changed;
}

bool uint8_to_int8(Graph& g, PassLog& log) {
  bool changed = false;
  for (Node* q : g.topo_order()) {
    if (!rewrite::is_op(q, "QuantizeLinear")) continue;
    auto qp = quant::qdq_params(*q);
    if (!qp || qp->dtype != DType::u8 || !qp->per_tensor() || q->outputs[0]->is_graph_output ||
        q->outputs[0]->uses.empty())
      continue;
    bool all_dq = true;
    for (const Use& u : q->outputs[0]->uses) {
      auto dp = rewrite::is_op(u.node, "DequantizeLinear") && u.input_index == 0
                    ? quant::qdq_params(*u.node)
                    : std::nullopt;
      all_dq &= dp && dp->scale == qp->scale && dp->zero_point == qp->zero_point;
    }
    if (!all_dq) continue;
    // q - 128 with zero point z - 128: the same reals, the same saturation.
    Value* zero = quant::add_unique_constant(
        g, q->name + ".zero_point_int8",
        Tensor::scalar<int8_t>(static_cast<int8_t>(qp->zero_point[0] - 128)));
    const std::vector<Use> uses = q->outputs[0]->uses;
    while (q->inputs.size() < 3) q->inputs.push_back(nullptr);
    g.set_input(q, 2, zero);
    q->attrs.erase("output_dtype");
    q->outputs[0]->dtype = DType::i8;
    for (const Use& u : uses) {
      while (u.node->inputs.size() < 3) u.node->inputs.push_back(nullptr);
      g.set_input(u.node, 2, zero);
    }
    log.note("made " + q->describe() + " int8 (uint8 zero point " +
             std::to_string(qp->zero_point[0]) + ")");
    changed = true;
  }
  if (changed) g.remove_unused_values();
  return changed;
}

bool fold_qdq(Graph& g, PassLog& log) {
  bool any_qdq = false;
  for (const Node* n : g.nodes())
    any_qdq |= rewrite::is_op(n, "DequantizeLinear") || rewrite::is_op(n, "QuantizeLinear");
  if (!any_qdq) return false;
  bool changed = uint8_to_int8(g, log);
  changed |= quantize_concat_inputs(g, log);
  changed |= fold_qdq_patterns(g, log);
  changed |= remove_qdq_pairs(g, log);
  if (changed) eliminate_dead_code(g, log);
  changed |= fuse_qconv_residual(g, log);
  changed |= int8_to_nhwc(g, log);
  return changed;
}

}  // namespace minfer::passes
