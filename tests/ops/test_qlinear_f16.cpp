// QLinearMatMul with float16 scales (opset 21): imported as DequantizeLinear -> MatMul ->
// QuantizeLinear in float32 with the scales widened to float (exactly); a constant scale is
// converted at import so that the int8 folding still makes a QGemm.
#include <onnx/onnx_pb.h>

#include "op_test_util.h"
#include "runtime/conformance.h"
#include "runtime/onnx_test_models.h"

using namespace minfer;
using namespace minfer::test;

namespace {

using TP = onnx::TensorProto;

// Float16 scales and their exact float32 values (numpy: float32(float16(v))).
constexpr uint16_t kHalfA = 0x1ec2, kHalfB = 0x1f38, kHalfY = 0x217a;  // ~0.0066, 0.00705, 0.0107
const float kScaleA = 1730.f / 262144.f, kScaleB = 1848.f / 262144.f, kScaleY = 1402.f / 131072.f;

void add_initializer(OnnxModel& m, const std::string& name, int32_t type, const std::string& raw,
                     std::vector<int64_t> dims) {
  auto* t = m.g().add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(raw);
}

template <typename T>
std::string raw_bytes(std::vector<T> v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// QLinearMatMul(a [2,4] int8 input, constant b [4,3] int8), constant scales of type
// `scale_type` (FLOAT16 or FLOAT, same values) and zero points a 1, b 0, y -2.
OnnxModel qlinear_matmul(int32_t scale_type) {
  OnnxModel m(21);
  m.input("a", TP::INT8, {"2", "4"});
  auto scale = [&](const std::string& name, uint16_t half, float value) {
    if (scale_type == TP::FLOAT16)
      add_initializer(m, name, TP::FLOAT16, raw_bytes<uint16_t>({half}), {1});
    else
      add_initializer(m, name, TP::FLOAT, raw_bytes<float>({value}), {1});
  };
  scale("a_scale", kHalfA, kScaleA);
  scale("b_scale", kHalfB, kScaleB);
  scale("y_scale", kHalfY, kScaleY);
  add_initializer(m, "a_zp", TP::INT8, raw_bytes<int8_t>({1}), {1});
  add_initializer(m, "b_zp", TP::INT8, raw_bytes<int8_t>({0}), {1});
  add_initializer(m, "y_zp", TP::INT8, raw_bytes<int8_t>({-2}), {1});
  add_initializer(m, "b", TP::INT8, raw_bytes<int8_t>({1, -2, 3, 4, 5, -6, -7, 8, 9, 10, -11, 12}),
                  {4, 3});
  m.node("QLinearMatMul", "qmm",
         {"a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"}, {"y"});
  m.output("y", TP::INT8);
  return m;
}

Tensor a_input() {
  return Tensor::from_vector<int8_t>({-3, 5, 0, 127, -128, 7, 2, -1}, Shape{2, 4});
}

int count_ops(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node* node : g.nodes()) n += node->op_type == op;
  return n;
}

}  // namespace

TEST_CASE("QLinearMatMul float16 conformance cases pass", "[ops][compare-reduce]") {
  const auto dir = data_dir() / "onnx-node-tests";
  for (const char* dims : {"2D", "3D"})
    for (const char* type : {"int8", "uint8"})
      for (const char* scale : {"float16", "float32"}) {
        const std::string name =
            std::string("test_qlinearmatmul_") + dims + "_" + type + "_" + scale;
        CaseResult r = run_conformance_case((dir / name).string());
        INFO(name << ": " << r.reason);
        CHECK(r.status == CaseStatus::Pass);
      }
}

TEST_CASE("QLinearMatMul: float16 scale inputs are cast to float", "[ops][compare-reduce]") {
  Graph g = load_onnx(
      (data_dir() / "onnx-node-tests" / "test_qlinearmatmul_2D_int8_float16" / "model.onnx")
          .string());
  // One Cast(to=FLOAT) per scale, each feeding the scale input of a Q or DQ.
  int casts = 0;
  for (const Node* n : g.nodes()) {
    if (n->op_type != "Cast") continue;
    ++casts;
    CHECK(n->attrs.get_int("to", 0) == TP::FLOAT);
    REQUIRE(n->inputs[0]->dtype == DType::f16);
    REQUIRE(n->outputs[0]->uses.size() == 1);
    const Use& u = n->outputs[0]->uses[0];
    CHECK((u.node->op_type == "DequantizeLinear" || u.node->op_type == "QuantizeLinear"));
    CHECK(u.input_index == 1);
  }
  CHECK(casts == 3);
  g.infer_shapes();
  REQUIRE(count_ops(g, "MatMul") == 1);
  for (const Node* n : g.nodes())
    if (n->op_type == "MatMul") CHECK(n->outputs[0]->dtype == DType::f32);
}

TEST_CASE("QLinearMatMul: constant float16 scales fold into int8 like float32 ones",
          "[ops][compare-reduce]") {
  Graph g = qlinear_matmul(TP::FLOAT16).parse();
  CHECK(count_ops(g, "Cast") == 0);  // converted at import
  for (const Node* n : g.nodes()) {
    if (n->op_type != "DequantizeLinear" && n->op_type != "QuantizeLinear") continue;
    const Value* s = n->inputs[1];
    REQUIRE(s->is_constant());
    REQUIRE(s->constant->dtype() == DType::f32);
    const float v = s->constant->data<float>()[0];
    CHECK((v == kScaleA || v == kScaleB || v == kScaleY));  // exactly the float16 values
  }

  // ONNX's reference (onnx.reference QLinearMatMul) on these inputs.
  const std::vector<int8_t> want{4, -8, 4, -3, -1, -4};
  SessionOptions float_path;
  float_path.optimization_level = 0;
  for (int32_t type : {TP::FLOAT16, TP::FLOAT}) {
    INFO((type == TP::FLOAT16 ? "float16" : "float32") << " scales");
    Session folded(qlinear_matmul(type).parse());
    CHECK(count_ops(folded.graph(), "QGemm") == 1);
    CHECK(count_ops(folded.graph(), "DequantizeLinear") == 0);
    Session plain(qlinear_matmul(type).parse(), float_path);
    CHECK(count_ops(plain.graph(), "QGemm") == 0);
    for (const Session* s : {&folded, &plain}) {
      Tensor y = s->run_one(a_input());
      require_values<int8_t>(y, {2, 3}, want);
    }
  }
}

TEST_CASE("DequantizeLinear on its own still declines float16 scales", "[ops][compare-reduce]") {
  require_error(
      [] {
        infer("DequantizeLinear",
              {info(DType::i8, {2}), info(DType::f16, {}), info(DType::i8, {})});
      },
      ErrorCode::Unsupported, "scale of type f16 is not supported (float32 only)");
}
