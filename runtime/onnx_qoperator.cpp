#include "runtime/onnx_qoperator.h"

#include "minfer/registry.h"

namespace minfer::detail {

namespace {

constexpr int64_t kOnnxFloat = 1;  // TensorProto.FLOAT, Cast's `to`

class Expander {
 public:
  Expander(Graph& g, const ImportedNode& n,
           const std::function<std::string(const std::string&)>& fresh_name)
      : g_(g), n_(n), fresh_(fresh_name), base_(n.name.empty() ? n.outputs[0] : n.name) {}

  bool run() {
    const std::string& op = n_.op;
    if (n_.domain.empty() && op == "QLinearConv") return conv();
    if (n_.domain.empty() && op == "QLinearMatMul") return matmul();
    if (n_.domain != "com.microsoft") return false;
    if (op == "QGemm") return gemm();
    if (op == "QLinearAdd" || op == "QLinearMul") return binary(op.substr(7));
    if (op == "QLinearGlobalAveragePool") return global_average_pool();
    return false;
  }

 private:
  Value* in(size_t i) const { return i < n_.inputs.size() ? n_.inputs[i] : nullptr; }

  Value* required(size_t i, const char* what) const {
    check(in(i) != nullptr, ErrorCode::InvalidModel,
          n_.where + ": input " + std::to_string(i) + " (" + what + ") is missing");
    return in(i);
  }

  void arity(size_t min, size_t max) const {
    check(n_.inputs.size() >= min && n_.inputs.size() <= max && n_.outputs.size() == 1,
          ErrorCode::InvalidModel,
          n_.where + ": expects " + std::to_string(min) + ".." + std::to_string(max) +
              " inputs and one output, has " + std::to_string(n_.inputs.size()) + " and " +
              std::to_string(n_.outputs.size()));
  }

  // A float32 constant scale (scalar or 1-D), for computing a bias scale at import time.
  std::vector<float> constant_scale(Value* v, const char* what) const {
    check(v->is_constant() && v->constant->dtype() == DType::f32 && v->constant->rank() <= 1,
          ErrorCode::Unsupported,
          n_.where + ": " + what + " must be a float32 constant (scalar or 1-D) for the bias");
    return v->constant->to_vector<float>();
  }

  Value* add(const std::string& op, const std::string& suffix, std::vector<Value*> inputs,
             Attributes attrs = {}) {
    const std::string name = base_ + "/" + suffix;
    return g_
        .add_node_named(op, name, std::move(inputs), {fresh_(name + "_output")}, std::move(attrs))
        ->outputs[0];
  }

  // The scale as float32. QLinearMatMul allows float16 scales from opset 21; a Cast to float
  // keeps the float op in float32 and the arithmetic that of a float32 scale (the widening is
  // exact). A constant scale is converted here, with Cast's own reference kernel, so that the
  // int8 folding sees float32 parameters as usual. A scale computed by another node has no
  // dtype yet at import: it passes through, and shape inference checks it.
  Value* float32_scale(Value* scale, const std::string& what) {
    if (!scale || scale->dtype != DType::f16 || !(scale->is_constant() || scale->is_graph_input))
      return scale;
    Attributes a;
    a.set("to", kOnnxFloat);
    if (!scale->is_constant()) return add("Cast", "cast_" + what + "_scale", {scale}, a);
    Node cast;  // evaluated here, never added to the graph
    Value out;
    cast.name = base_ + "/cast_" + what + "_scale";
    cast.op_type = "Cast";
    cast.attrs = a;
    cast.outputs = {&out};
    Tensor t = OpRegistry::global().get_op("", "Cast").reference(cast, {*scale->constant}).at(0);
    return g_.add_constant(fresh_(base_ + "/" + what + "_scale_f32"), std::move(t));
  }

  // DequantizeLinear(x, scale, zero_point), on `axis` when the scale has several values.
  Value* dq(Value* x, Value* scale, Value* zero_point, int64_t axis, const std::string& what) {
    const Shape& s = scale->shape;
    const bool one = s.rank() == 0 || (s.rank() == 1 && s[0] == 1);
    Attributes a;
    a.set("axis", one ? int64_t{0} : axis);  // 0 is valid for any x of rank >= 1
    return add("DequantizeLinear", "dq_" + what, {x, float32_scale(scale, what), zero_point}, a);
  }

  // The float op under the node's own name, writing `out` (a fresh name unless it is the
  // node's output), then QuantizeLinear into the node's output when `y_scale` is given.
  void finish(const std::string& op, std::vector<Value*> inputs, Attributes attrs, Value* y_scale,
              Value* y_zero_point) {
    const std::string out = y_scale ? fresh_(base_ + "/float_output") : n_.outputs[0];
    Value* y = g_.add_node_named(op, n_.name.empty() ? base_ + "/float" : n_.name,
                                 std::move(inputs), {out}, std::move(attrs))
                   ->outputs[0];
    if (!y_scale) return;
    g_.add_node_named("QuantizeLinear", base_ + "/q_y",
                      {y, float32_scale(y_scale, "y"), y_zero_point}, {n_.outputs[0]});
  }

  // The int32 bias B, at scale x_scale * w_scale (per output channel), zero point 0.
  Value* bias(Value* b, Value* x_scale, Value* w_scale, float alpha) {
    const std::vector<float> xs = constant_scale(x_scale, "the input scale");
    const std::vector<float> ws = constant_scale(w_scale, "the weight scale");
    check(xs.size() == 1, ErrorCode::Unsupported,
          n_.where + ": a per-channel input scale is not supported");
    std::vector<float> scale(ws.size());
    for (size_t i = 0; i < ws.size(); ++i) scale[i] = alpha * xs[0] * ws[i];
    const bool scalar = w_scale->constant->rank() == 0;
    Value* s = g_.add_constant(
        fresh_(base_ + "/bias_scale"),
        Tensor::from_vector(scale, scalar ? Shape{} : Shape{static_cast<int64_t>(scale.size())}));
    return dq(b, s, nullptr, -1, "bias");
  }

  // QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, [B]).
  bool conv() {
    arity(8, 9);
    Value* x = dq(required(0, "x"), required(1, "x_scale"), in(2), 1, "x");
    Value* w = dq(required(3, "w"), required(4, "w_scale"), in(5), 0, "w");
    std::vector<Value*> inputs{x, w};
    if (in(8)) inputs.push_back(bias(in(8), in(1), in(4), 1.f));
    finish("Conv", inputs, n_.attrs, required(6, "y_scale"), in(7));
    return true;
  }

  // QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp).
  bool matmul() {
    arity(8, 8);
    Value* a = dq(required(0, "a"), required(1, "a_scale"), in(2), -2, "a");  // per row
    Value* b = dq(required(3, "b"), required(4, "b_scale"), in(5), -1, "b");  // per column
    finish("MatMul", {a, b}, {}, required(6, "y_scale"), in(7));
    return true;
  }

  // com.microsoft QGemm(A, a_scale, a_zp, B, b_scale, b_zp, [C], [y_scale], [y_zp]): C is
  // int32 at scale alpha * a_scale * b_scale; without y_scale the output is float.
  bool gemm() {
    arity(6, 9);
    const float alpha = n_.attrs.get_float("alpha", 1.f);
    const bool trans_b = n_.attrs.get_int("transB", 0) != 0;
    Value* a = dq(required(0, "A"), required(1, "a_scale"), in(2), 1, "a");
    Value* b = dq(required(3, "B"), required(4, "b_scale"), in(5), trans_b ? 0 : 1, "b");
    std::vector<Value*> inputs{a, b};
    if (in(6)) inputs.push_back(bias(in(6), in(1), in(4), alpha));
    Attributes attrs;
    attrs.set("alpha", alpha);
    attrs.set("transA", n_.attrs.get_int("transA", 0));
    attrs.set("transB", n_.attrs.get_int("transB", 0));
    finish("Gemm", inputs, attrs, in(7), in(8));
    return true;
  }

  // com.microsoft QLinearAdd / QLinearMul(A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp).
  bool binary(const std::string& op) {
    arity(7, 8);
    Value* a = dq(required(0, "A"), required(1, "A_scale"), in(2), 1, "a");
    Value* b = dq(required(3, "B"), required(4, "B_scale"), in(5), 1, "b");
    finish(op, {a, b}, {}, required(6, "C_scale"), in(7));
    return true;
  }

  // com.microsoft QLinearGlobalAveragePool(X, x_scale, x_zp, y_scale, y_zp), NCHW only.
  bool global_average_pool() {
    arity(4, 5);
    check(n_.attrs.get_int("channels_last", 0) == 0, ErrorCode::Unsupported,
          n_.where + ": channels_last=1 is not supported");
    Value* x = dq(required(0, "X"), required(1, "x_scale"), in(2), 1, "x");
    finish("GlobalAveragePool", {x}, {}, required(3, "y_scale"), in(4));
    return true;
  }

  Graph& g_;
  const ImportedNode& n_;
  const std::function<std::string(const std::string&)>& fresh_;
  std::string base_;
};

}  // namespace

bool expand_qoperator(Graph& g, const ImportedNode& n,
                      const std::function<std::string(const std::string&)>& fresh_name) {
  if (n.outputs.empty()) return false;  // left for the session to refuse
  return Expander(g, n, fresh_name).run();
}

}  // namespace minfer::detail
