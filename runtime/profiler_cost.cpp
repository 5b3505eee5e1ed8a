// What one plan step costs on paper: its arithmetic (FLOPs) and the bytes it must move, and
// what a fused node stands for. The profiler divides these by measured times.
#include "runtime/profiler_cost.h"

#include <algorithm>

namespace minfer::profiler {

namespace {

double numel(const Slot& s) {
  double n = 1;
  for (int64_t d : s.shape.dims()) n *= double(std::max<int64_t>(d, 0));
  return n;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Element-wise ops and activations: about one operation per output element.
bool is_elementwise(const std::string& op) {
  static const char* ops[] = {"Add",
                              "Sub",
                              "Mul",
                              "Div",
                              "Relu",
                              "Clip",
                              "Sigmoid",
                              "Tanh",
                              "Exp",
                              "Log",
                              "Sqrt",
                              "Pow",
                              "Erf",
                              "Gelu",
                              "HardSigmoid",
                              "HardSwish",
                              "LeakyRelu",
                              "Neg",
                              "Abs",
                              "Max",
                              "Min",
                              "Sum",
                              "Mean",
                              "QAdd",
                              "BatchNormalization",
                              "QuantizeLinear",
                              "DequantizeLinear",
                              "Softmax",
                              "LRN"};
  return std::find(std::begin(ops), std::end(ops), op) != std::end(ops);
}

}  // namespace

double step_flops(const Plan& plan, const Step& st) {
  if (st.kind != Step::Kind::Kernel || !st.node || st.outputs.empty()) return 0;
  const std::string& op = st.node->op_type;
  const Slot& out = plan.slots[st.outputs[0]];
  auto in = [&](size_t i) -> const Slot* {
    return i < st.inputs.size() && st.inputs[i] >= 0 ? &plan.slots[st.inputs[i]] : nullptr;
  };
  if (ends_with(op, "Conv") || op == "ConvInteger") {
    // 2 x (output elements) x (weight elements per output channel): [Cout, Cin/g, kh, kw].
    const Slot* w = in(1);
    if (!w || w->shape.rank() < 2 || w->shape[0] <= 0) return 0;
    const double per_channel = numel(*w) / double(w->shape[0]);
    double extra = 0;  // the fused bias, residual and activation: one op each per element
    for (size_t i = 2; i < st.inputs.size(); ++i) extra += in(i) ? numel(out) : 0;
    if (!st.node->attrs.get_string("activation", "").empty()) extra += numel(out);
    return 2 * numel(out) * per_channel + extra;
  }
  if (ends_with(op, "Gemm") || ends_with(op, "MatMul") || op == "MatMulInteger") {
    // 2 x (output elements) x K, K the reduced dimension of the first input.
    const Slot* a = in(0);
    if (!a || a->shape.rank() < 1) return 0;
    const bool trans_a = st.node->attrs.get_int("transA", 0) != 0 && a->shape.rank() == 2;
    const int64_t k = trans_a ? a->shape[0] : a->shape[a->shape.rank() - 1];
    return 2 * numel(out) * double(k);
  }
  if (op == "MaxPool" || op == "AveragePool") {
    const std::vector<int64_t> kernel = st.node->attrs.get_ints("kernel_shape", {});
    double window = 1;
    for (int64_t k : kernel) window *= double(k);
    return numel(out) * window;
  }
  if (ends_with(op, "GlobalAveragePool") || op == "GlobalMaxPool" || op.rfind("Reduce", 0) == 0)
    return in(0) ? numel(*in(0)) : 0;
  if (is_elementwise(op)) return numel(out);
  return 0;  // data movement (Reshape, Transpose, Concat, ...): bytes only
}

double step_bytes(const Plan& plan, const Step& st) {
  double bytes = 0;
  for (int id : st.inputs)
    if (id >= 0) bytes += numel(plan.slots[id]) * double(dtype_size(plan.slots[id].dtype));
  for (int id : st.outputs)
    bytes += numel(plan.slots[id]) * double(dtype_size(plan.slots[id].dtype));
  return bytes;
}

std::string fused_description(const Node& n) {
  const std::string act = n.attrs.get_string("activation", "");
  std::string base;
  bool residual = false;
  if (n.op_type == "FusedConv" || n.op_type == "NhwcConv") {
    base = n.op_type == "NhwcConv" ? "Conv NHWC" : "Conv";
    residual = n.input(3) != nullptr;
  } else if (n.op_type == "FusedGemm") {
    base = "Gemm";
  } else if (n.domain == kMinferDomain && n.op_type.size() > 1 && n.op_type[0] == 'Q') {
    // int8 ops folded from QuantizeLinear/DequantizeLinear around a float op
    base = "DequantizeLinear + " + n.op_type.substr(1);
    residual = n.attrs.has("z_scale");
    std::string s = base + (residual ? " + Add" : "") + (act.empty() ? "" : " + " + act);
    return s + " + QuantizeLinear";
  } else {
    return "";
  }
  return base + (residual ? " + Add" : "") + (act.empty() ? "" : " + " + act);
}

}  // namespace minfer::profiler
