// Models quantized by ONNX Runtime's quantize_static (QDQ and QOperator formats) from a
// minfer-exported ResNet-20 with its real weights: minfer runs them through its int8 ops and
// agrees with ONNX Runtime's top-1 on the 500 CIFAR-10 JPEGs.
#include <algorithm>
#include <cmath>

#include "conformance_test_util.h"
#include "runtime/onnx_test_models.h"

using namespace minfer;
using namespace minfer::test;
namespace fs = std::filesystem;

TEST_CASE("pre-quantized: ONNX Runtime's QDQ and QOperator ResNet-20 run int8 in minfer",
          "[conformance][python][slow]") {
  const fs::path dir = temp_dir("prequantized");
  const Tensor x = write_resnet20_and_cifar_jpegs(dir).x;
  REQUIRE(run_python("make_prequantized.py", std::string("'") + (dir / "resnet20.onnx").string() +
                                                 "' '" + (dir / "x.npy").string() + "' '" +
                                                 dir.string() + "'") == 0);

  for (const char* tag : {"qdq", "qoperator"}) {
    INFO(tag);
    SessionOptions options;
    options.threads = 2;
    Session s = Session::from_file((dir / (std::string(tag) + ".onnx")).string(), options);
    int qconv = 0;
    for (const Node* n : s.graph().nodes()) qconv += n->op_type == "QConv";
    CHECK(qconv == 19);  // every convolution became an int8 op

    const std::vector<int64_t> ort =
        load_npy((dir / (std::string(tag) + "_top1.npy")).string()).to_vector<int64_t>();
    REQUIRE(ort.size() == 500);
    const std::vector<int64_t> ours = top1_in_batches(s, x, 100);
    int agree = 0;
    for (size_t i = 0; i < 500; ++i) agree += ours[i] == ort[i];
    WARN(tag << ": minfer's int8 top-1 agrees with ONNX Runtime on " << agree << "/500 images");
    CHECK(agree >= 495);  // 99 %
  }
}

TEST_CASE("pre-quantized: QOperator nodes import as DequantizeLinear -> op -> QuantizeLinear",
          "[conformance]") {
  using TP = onnx::TensorProto;
  auto scalar = [](OnnxModel& m, const std::string& name, int32_t type, float v) {
    auto* t = m.g().add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    if (type == TP::FLOAT)
      t->add_float_data(v);
    else
      t->add_int32_data(static_cast<int32_t>(v));
  };
  auto model = [&](bool bias, bool constant_scale) {
    OnnxModel m(13);
    m.input("x", TP::INT8, {"1", "2", "3", "3"});
    if (constant_scale)
      scalar(m, "xs", TP::FLOAT, 0.5f);
    else
      m.input("xs", TP::FLOAT, {});
    scalar(m, "xz", TP::INT8, 0);
    auto* w = m.g().add_initializer();
    w->set_name("w");
    w->set_data_type(TP::INT8);
    for (int64_t d : {3, 2, 1, 1}) w->add_dims(d);
    for (int i = 0; i < 6; ++i) w->add_int32_data(i - 3);
    scalar(m, "ws", TP::FLOAT, 0.25f);
    scalar(m, "wz", TP::INT8, 0);
    scalar(m, "ys", TP::FLOAT, 0.125f);
    scalar(m, "yz", TP::INT8, 1);
    std::vector<std::string> in{"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"};
    if (bias) {
      auto* b = m.g().add_initializer();
      b->set_name("b");
      b->set_data_type(TP::INT32);
      b->add_dims(3);
      for (int i = 0; i < 3; ++i) b->add_int32_data(8 * i);
      in.push_back("b");
    }
    m.node("QLinearConv", "qconv", in, {"y"});
    m.output("y", TP::INT8);
    return m;
  };
  Graph g = model(true, true).parse();
  std::vector<std::string> ops;
  for (const Node* n : g.topo_order()) ops.push_back(n->op_type);
  CHECK(std::count(ops.begin(), ops.end(), "DequantizeLinear") == 3);  // x, w, bias
  CHECK(g.find_node("qconv")->op_type == "Conv");  // the float op keeps the node's name
  CHECK(g.outputs()[0]->producer->op_type == "QuantizeLinear");
  // Bias at scale x_scale * w_scale = 0.125; x = 2 everywhere: y = 0.25 * 2 * (w0 + w1) + b.
  Session s(model(true, true).parse());
  Tensor x(DType::i8, Shape{1, 2, 3, 3});
  std::fill(x.data<int8_t>(), x.data<int8_t>() + x.numel(), int8_t{2});
  Tensor y = s.run_one(x);
  REQUIRE(y.dtype() == DType::i8);
  // Channel c: real = 0.5*0.25*2*((2c-3)+(2c-2)) + 0.125*8c = (4c-5)/4 + c; q = real/0.125 + 1.
  for (int c = 0; c < 3; ++c) {
    INFO("channel " << c);
    const double real = 0.25 * (4 * c - 5) + c;
    CHECK(y.data<int8_t>()[c * 9] == static_cast<int8_t>(std::nearbyint(real / 0.125) + 1));
  }
  require_error([&] { model(true, false).parse(); }, ErrorCode::Unsupported,
                {"QLinearConv 'qconv'", "input scale must be a float32 constant"});
  OnnxModel short_model = model(false, true);
  short_model.g().mutable_node(0)->mutable_input()->RemoveLast();
  require_error([&] { short_model.parse(); }, ErrorCode::InvalidModel,
                {"QLinearConv 'qconv'", "expects 8..9 inputs"});
}
