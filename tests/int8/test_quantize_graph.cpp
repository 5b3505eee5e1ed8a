// Calibration, quantize_graph (QDQ insertion) and the folding pass on small models.
#include <fstream>
#include <map>

#include "graph/passes/passes.h"
#include "int8/int8_test_util.h"
#include "minfer/builder.h"
#include "minfer/calibrate.h"
#include "models/reference_eval.h"

using namespace minfer;
using namespace minfer::test;

namespace {

std::vector<Tensor> random_images(int count, int size, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Tensor> v;
  for (int i = 0; i < count; ++i)
    v.push_back(random_tensor(Shape{1, 3, size, size}, rng, -2.f, 2.f));
  return v;
}

// Largest |a - b| over the largest |b|.
double relative_error(const Tensor& a, const Tensor& b) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    num = std::max(num, double(std::fabs(a.data<float>()[i] - b.data<float>()[i])));
    den = std::max(den, double(std::fabs(b.data<float>()[i])));
  }
  return num / den;
}

CalibrationOptions quiet() {
  CalibrationOptions o;
  o.progress = false;
  return o;
}

// fp32 calibrated (min/max) on `count` random images of `size` x `size` and quantized: its QDQ
// graph.
Graph quantized(const Graph& fp32, int count, int size, uint32_t seed) {
  Calibrator cal(fp32, quiet());
  cal.add_all(random_images(count, size, seed));
  Graph qdq = clone_graph(fp32);
  quantize_graph(qdq, cal.table(CalibrationMethod::minmax));
  return qdq;
}

// A small float model being built, its weights constants of uniform values in [-0.5, 0.5).
struct SmallModel {
  explicit SmallModel(uint32_t seed) : rng(seed) {}
  Value* weight(const std::string& name, Shape s) {
    return b.constant(name, random_tensor(std::move(s), rng, -0.5f, 0.5f));
  }
  // relu(conv(x) + bias) named `name`, of a `kernel` [out, in, kh, kw] weight.
  Value* conv_relu(const std::string& name, Value* x, Shape kernel, std::vector<int64_t> strides,
                   std::vector<int64_t> pads) {
    const int64_t out = kernel[0];
    Value* w = weight(name + ".w", std::move(kernel));
    return b.relu(name, b.conv(name + "_conv", x, w, weight(name + ".b", Shape{out}),
                               std::move(strides), std::move(pads)));
  }
  Graph g;
  GraphBuilder b{g};
  std::mt19937 rng;
};

}  // namespace

TEST_CASE("Calibrator records every activation; tables save and load", "[int8]") {
  Graph g = build_model("cifar-resnet20", "", 1);
  Calibrator cal(g, quiet());
  cal.add_all(random_images(4, 32, 1));
  CHECK(cal.samples() == 4);
  CalibrationTable t = cal.table(CalibrationMethod::minmax);
  CHECK(t.ranges.count("input"));
  CHECK(t.ranges.count("logits"));
  for (const auto& [name, r] : t.ranges) {
    INFO(name);
    CHECK(r.lo <= 0.f);
    CHECK(r.hi >= 0.f);
  }
  // Every method gives a range inside min-max; thresholds of non-negative tensors keep lo = 0.
  for (auto m :
       {CalibrationMethod::percentile, CalibrationMethod::entropy, CalibrationMethod::mse}) {
    CalibrationTable tm = cal.table(m);
    CHECK(tm.method == calibration_method_name(m));
    for (const auto& [name, r] : tm.ranges) {
      INFO(name << " " << tm.method);
      CHECK(r.lo >= t.ranges[name].lo);
      CHECK(r.hi <= t.ranges[name].hi);
      CHECK(r.hi - r.lo > 0.f);
    }
  }
  auto path = temp_dir("calib_table") / "t.json";
  t.save(path.string());
  CalibrationTable back = CalibrationTable::load(path.string());
  CHECK(back.samples == 4);
  CHECK(back.method == "minmax");
  REQUIRE(back.ranges.size() == t.ranges.size());
  for (const auto& [name, r] : t.ranges) {
    CHECK(back.ranges[name].lo == r.lo);
    CHECK(back.ranges[name].hi == r.hi);
  }
  std::ofstream(path)
      << "{\"format\": \"minfer-calibration\", \"version\": 1, \"tensors\": {\"x\": [2, 1]}}";
  CHECK_THROWS_AS(CalibrationTable::load(path.string()), Error);
  CHECK_THROWS_AS(parse_calibration_method("kl"), Error);
}

TEST_CASE("quantize_graph writes QDQ; a Session folds it into int8 ops", "[int8]") {
  Graph fp32 = build_model("cifar-resnet20", "", 3);
  Calibrator cal(fp32, quiet());
  cal.add_all(random_images(8, 32, 2));
  CalibrationTable table = cal.table(CalibrationMethod::minmax);

  Graph qdq = clone_graph(fp32);
  quantize_graph(qdq, table);
  auto counts = op_histogram(qdq);
  CHECK(counts["BatchNormalization"] == 0);
  CHECK(counts["Conv"] == 19);
  CHECK(counts["QuantizeLinear"] > 0);
  CHECK(counts["DequantizeLinear"] > counts["QuantizeLinear"]);
  for (const Node* n : qdq.nodes())
    if (n->op_type == "Conv") CHECK(n->inputs[1]->producer->op_type == "DequantizeLinear");
  verify(qdq);

  // Level 1: the QDQ graph in float. Level 2: folded into int8 ops.
  SessionOptions l1;
  l1.optimization_level = 1;
  Session sim(clone_graph(qdq), l1);
  Session int8(clone_graph(qdq));
  Session ref(clone_graph(fp32));
  auto folded = op_histogram(int8.graph());
  CHECK(folded["QConv"] == 19);
  CHECK(folded["QAdd"] == 0);  // every residual add fused into its conv
  CHECK(folded["QGlobalAveragePool"] == 1);
  CHECK(folded["QGemm"] == 1);
  CHECK(folded["Conv"] == 0);
  CHECK(folded["FusedConv"] == 0);
  CHECK(folded["DequantizeLinear"] == 0);
  CHECK(folded["QuantizeLinear"] == 1);  // the image
  int residual = 0;
  for (const Node* n : int8.graph().nodes()) {
    if (n->op_type != "QConv") continue;
    CHECK(n->attrs.get_string("layout", "") == "NHWC");
    residual += n->input(3) != nullptr;
  }
  CHECK(residual == 9);

  for (const Tensor& x : random_images(2, 32, 9)) {
    Tensor yf = ref.run_one(x), ys = sim.run_one(x), yq = int8.run_one(x);
    CHECK(relative_error(yq, ys) < 0.05);
    CHECK(relative_error(yq, yf) < 0.2);
  }
}

TEST_CASE("quantize options keep layers in fp32", "[int8]") {
  Graph fp32 = build_model("cifar-resnet20", "", 4);
  Calibrator cal(fp32, quiet());
  cal.add_all(random_images(2, 32, 4));
  CalibrationTable table = cal.table(CalibrationMethod::percentile);

  QuantizeOptions o;
  o.keep_first_last_fp32 = true;
  o.exclude_nodes = {"layer2.0.conv1"};
  o.exclude_op_types = {"Add"};
  Graph qdq = clone_graph(fp32);
  quantize_graph(qdq, table, o);
  Session s(std::move(qdq));
  auto counts = op_histogram(s.graph());
  CHECK(counts["QConv"] == 17);
  CHECK(counts["QAdd"] == 0);
  CHECK(counts["QGemm"] == 0);
  CHECK(s.graph().find_node("conv1")->op_type != "QConv");
  CHECK(s.graph().find_node("layer2.0.conv1")->op_type != "QConv");
  Tensor y = s.run_one(random_images(1, 32, 5)[0]);
  CHECK(y.shape() == Shape{1, 10});

  CalibrationTable empty;
  Graph g2 = clone_graph(fp32);
  try {
    quantize_graph(g2, empty);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("no range for tensor") != std::string::npos);
  }
}

TEST_CASE("uint8 activations (as ONNX Runtime writes them) fold like int8 ones", "[int8]") {
  Graph fp32 = build_model("cifar-resnet20", "", 6);
  Graph qdq = quantized(fp32, 2, 32, 6);
  // The same model with uint8 activations: every int8 zero point z becomes z + 128.
  Graph u8 = clone_graph(qdq);
  for (Value* v : u8.values()) {
    if (!v->is_constant() || v->constant->dtype() != DType::i8 || v->constant->numel() != 1)
      continue;
    bool activation_zero_point = !v->uses.empty();
    for (const Use& u : v->uses) activation_zero_point &= u.input_index == 2;
    if (!activation_zero_point) continue;
    Tensor z = Tensor::scalar<uint8_t>(static_cast<uint8_t>(v->constant->data<int8_t>()[0] + 128));
    v->constant = z;
    v->dtype = DType::u8;
  }
  u8.infer_shapes();
  Session a(std::move(qdq)), b(std::move(u8));
  auto counts = op_histogram(b.graph());
  CHECK(counts["QConv"] == 19);
  CHECK(counts["DequantizeLinear"] == 0);
  const Tensor x = random_images(1, 32, 7)[0];
  require_equal(b.run_one(x), a.run_one(x));
}

TEST_CASE("SessionOptions::precision int8 runs quantized graphs and refuses fp32 ones",
          "[int8][errors]") {
  Graph fp32 = build_model("cifar-resnet20", "", 3);
  REQUIRE_FALSE(is_quantized(fp32));
  SessionOptions opts;
  opts.precision = Precision::int8;
  try {
    Session s(clone_graph(fp32), opts);
    FAIL("an fp32 graph ran as int8");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::InvalidArgument);
    CHECK_THAT(e.what(), Catch::Contains("not quantized") && Catch::Contains("quantize_graph"));
  }

  Graph qdq = quantized(fp32, 4, 32, 5);
  REQUIRE(is_quantized(qdq));
  Session int8(clone_graph(qdq), opts);
  CHECK(op_histogram(int8.graph())["QConv"] == 19);
  CHECK(is_quantized(int8.graph()));
  // The same graph with the default precision runs the same int8 kernels: identical outputs.
  Session plain(clone_graph(qdq));
  const Tensor x = random_images(1, 32, 6)[0];
  require_equal(int8.run_one(x), plain.run_one(x));

  opts.optimization_level = 1;  // below the level that folds Q/DQ into int8 kernels
  try {
    Session s(clone_graph(qdq), opts);
    FAIL("int8 accepted at a level that cannot fold");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("optimization level 2"));
  }
}

TEST_CASE("element-wise ops between int8 convs stay NHWC (EfficientNet's SiLU and SE)",
          "[int8]") {
  Graph fp32 = load_onnx(
      (std::filesystem::path(MINFER_SOURCE_DIR) / "tests/python/tiny_models/efficientnet_op13.onnx")
          .string());
  fp32.infer_shapes();
  Graph qdq = quantized(fp32, 4, 32, 5);
  SessionOptions l1;
  l1.optimization_level = 1;
  Session sim(clone_graph(qdq), l1), int8(clone_graph(qdq));
  auto folded = op_histogram(int8.graph());
  INFO(int8.graph().dump());
  CHECK(folded["QConv"] > 10);
  // SiLU and the SE gates' Sigmoid run in the float output stage of the QConv before them.
  CHECK(folded["Sigmoid"] == 0);
  int silu = 0, sigmoid = 0;
  for (const Node* n : int8.graph().topo_order()) {
    silu += n->attrs.get_string("activation", "") == "Silu";
    sigmoid += n->attrs.get_string("activation", "") == "Sigmoid";
  }
  CHECK(silu > 5);
  CHECK(sigmoid > 2);
  // The fusion computes what the unfused float nodes and QuantizeLinear do, the same float
  // operations but for SiLU's last rounding (x / (1 + e) against x * (1 / (1 + e))): no int8
  // value moves on this model and input, so the outputs are equal.
  SessionOptions unfused;
  unfused.disabled_passes = {"int8-smooth-activation-fusion"};
  Session plain(clone_graph(qdq), unfused);
  CHECK(op_histogram(plain.graph())["Sigmoid"] > 10);
  CHECK(op_histogram(plain.graph())["QuantizeLinear"] > folded["QuantizeLinear"]);
  // Only where the image enters the int8 region and where the pooled features leave it; before,
  // each float SiLU / SE gate was wrapped in two Transposes.
  CHECK(folded["Transpose"] <= 2);
  // Each SE block's Mul by its gate and the QuantizeLinear after it are one GatedQuantize: the
  // same float product and quantization, so the outputs are equal bit for bit.
  CHECK(folded["GatedQuantize"] > 2);
  CHECK(folded["Mul"] == 0);
  SessionOptions ungated;
  ungated.disabled_passes = {"gated-quantize-fusion"};
  Session separate(clone_graph(qdq), ungated);
  CHECK(op_histogram(separate.graph())["GatedQuantize"] == 0);
  CHECK(op_histogram(separate.graph())["Mul"] == folded["GatedQuantize"]);
  // Each SE block's squeeze, QuantizeLinear then QGlobalAveragePool, is the pool on the floats:
  // the same int8 values summed, so the outputs are equal bit for bit.
  int float_pools = 0;
  for (const Node* n : int8.graph().topo_order())
    float_pools += n->op_type == "QGlobalAveragePool" && n->inputs[0]->dtype == DType::f32;
  CHECK(float_pools > 2);
  SessionOptions unpooled;
  unpooled.disabled_passes = {"quantize-pool-fusion"};
  Session pooled_apart(clone_graph(qdq), unpooled);
  CHECK(op_histogram(pooled_apart.graph())["QuantizeLinear"] ==
        folded["QuantizeLinear"] + float_pools);
  for (const Tensor& x : random_images(2, 32, 6)) {
    const Tensor y = int8.run_one(x);
    CHECK(relative_error(y, sim.run_one(x)) < 0.05);
    require_equal(y, plain.run_one(x));
    require_equal(y, separate.run_one(x));
    require_equal(y, pooled_apart.run_one(x));
  }
}

// quantize-pool-fusion takes only a QuantizeLinear whose int8 values the pool reads alone and
// with its own x_scale and x_zero_point.
TEST_CASE("quantize-pool-fusion: the pool alone reads the int8 values, at its x_scale",
          "[int8][passes]") {
  auto squeeze = [](float pool_scale, bool second_reader) {
    Graph g;
    Value* x = g.add_input("x", DType::f32, Shape{1, 4, 4, 8});
    Node* q = g.add_node("QuantizeLinear", "q",
                         {x, g.add_constant("s", Tensor::scalar<float>(0.05f)),
                          g.add_constant("z", Tensor::scalar<int8_t>(3))},
                         1);
    Attributes a;
    a.set("layout", std::string("NHWC"));
    a.set("x_scale", pool_scale);
    a.set("x_zero_point", int64_t{3});
    a.set("y_scale", 0.02f);
    a.set("y_zero_point", int64_t{-1});
    g.add_output(
        g.add_node("QGlobalAveragePool", "pool", {q->outputs[0]}, 1, a, kMinferDomain)->outputs[0]);
    if (second_reader) g.add_output(q->outputs[0]);
    g.infer_shapes();
    PassLog log;
    return passes::fuse_quantize_global_pool(g, log);
  };
  CHECK(squeeze(0.05f, false));
  CHECK_FALSE(squeeze(0.06f, false));  // the pool's own x_scale differs
  CHECK_FALSE(squeeze(0.05f, true));   // the int8 values are an output too
}

TEST_CASE("a Concat of int8 branches stays NHWC (SqueezeNet's Fire modules)", "[int8]") {
  // conv -> two branch convs (1x1, 3x3) -> Concat on the channels -> conv: in the QDQ graph
  // the branches join in float between their DequantizeLinears and the next QuantizeLinear.
  SmallModel m(41);
  Graph& fp32 = m.g;
  GraphBuilder& b = m.b;
  Value* x = b.input("x", DType::f32, Shape{1, 3, 16, 16});
  Value* h = m.conv_relu("h", x, {8, 3, 3, 3}, {1, 1}, {1, 1, 1, 1});
  Value* e1 = m.conv_relu("e1", h, {6, 8, 1, 1}, {1, 1}, {0, 0, 0, 0});
  Value* e3 = m.conv_relu("e3", h, {10, 8, 3, 3}, {1, 1}, {1, 1, 1, 1});
  Attributes axis;
  axis.set("axis", int64_t{1});
  Value* cat = b.op("Concat", "cat", {e1, e3}, axis);
  b.output(
      b.conv("c4", cat, m.weight("w4", {4, 16, 3, 3}), m.weight("b4", {4}), {1, 1}, {1, 1, 1, 1}));
  fp32.infer_shapes();
  Graph qdq = quantized(fp32, 4, 16, 7);
  SessionOptions l1;
  l1.optimization_level = 1;
  Session sim(clone_graph(qdq), l1), int8(clone_graph(qdq));
  INFO(int8.graph().dump());
  auto folded = op_histogram(int8.graph());
  CHECK(folded["QConv"] == 4);
  // Transposes only where the image enters the int8 region and the output leaves it (before,
  // each branch went back to NCHW for the Concat and the join to NHWC after it).
  CHECK(folded["Transpose"] == 2);
  for (const Node* n : int8.graph().nodes())
    if (n->op_type == "Concat") {
      CHECK(n->attrs.get_int("axis", 0) == 3);
      CHECK(n->outputs[0]->dtype == DType::i8);  // the branches write int8 at the join's scale
    }
  for (const Tensor& img : random_images(2, 16, 8)) {
    const Tensor y = int8.run_one(img);
    // The folded graph's reference kernels, node by node: the same int8 values.
    require_equal(y, reference_eval(int8.graph(), {{"x", img}}).begin()->second);
    CHECK(relative_error(y, sim.run_one(img)) < 0.05);
  }
}

TEST_CASE("Inception's blocks stay int8 and NHWC: the pool beside a conv, the Pad before a pool",
          "[int8]") {
  // conv -> [3x3 stride-2 conv, 3x3 stride-2 MaxPool] -> Concat -> Pad -> AveragePool -> conv:
  // torchvision's Inception v3 exports its reduction blocks and the next block's branch pool
  // (avg_pool2d with padding 1) so.
  SmallModel m(43);
  Graph& fp32 = m.g;
  GraphBuilder& b = m.b;
  Value* x = b.input("x", DType::f32, Shape{1, 3, 17, 17});
  Value* h = m.conv_relu("h", x, {8, 3, 3, 3}, {1, 1}, {1, 1, 1, 1});
  Value* reduced = m.conv_relu("r", h, {6, 8, 3, 3}, {2, 2}, {0, 0, 0, 0});
  Value* pooled = b.max_pool("pool", h, {3, 3}, {2, 2}, {0, 0, 0, 0});
  Attributes axis;
  axis.set("axis", int64_t{1});
  Value* cat = b.op("Concat", "cat", {reduced, pooled}, axis);
  Value* padded = b.op(
      "Pad", "pad",
      {cat, b.constant("pads", Tensor::from_vector<int64_t>({0, 0, 1, 1, 0, 0, 1, 1}, Shape{8}))});
  Attributes window;
  window.set("kernel_shape", std::vector<int64_t>{3, 3});
  Value* avg = b.op("AveragePool", "avg", {padded}, window);
  b.output(
      b.conv("c2", avg, m.weight("w2", {4, 14, 1, 1}), m.weight("b2", {4}), {1, 1}, {0, 0, 0, 0}));
  fp32.infer_shapes();
  Graph qdq = quantized(fp32, 4, 17, 9);
  SessionOptions l1, unfused;
  l1.optimization_level = 1;
  unfused.disabled_passes = {"pad-pool-fusion"};
  Session sim(clone_graph(qdq), l1), int8(clone_graph(qdq)), padded_int8(clone_graph(qdq), unfused);
  INFO(int8.graph().dump());
  auto folded = op_histogram(int8.graph());
  CHECK(folded["QConv"] == 3);
  CHECK(folded["QMaxPool"] == 1);  // on the int8 values, where it had taken floats
  CHECK(folded["MaxPool"] == 0);
  CHECK(folded["Pad"] == 0);  // the pool's own padding, counted
  CHECK(folded["QAveragePool"] == 1);
  CHECK(op_histogram(padded_int8.graph())["Pad"] == 1);
  for (const Node* n : int8.graph().nodes())
    if (n->op_type == "Concat") CHECK(n->outputs[0]->dtype == DType::i8);
  // Transposes only where the image enters the int8 region and the output leaves it (the float
  // pool had taken the Concat and both branches back to NCHW).
  CHECK(folded["Transpose"] == 2);
  for (const Tensor& img : random_images(2, 17, 10)) {
    const Tensor y = int8.run_one(img);
    require_equal(y, reference_eval(int8.graph(), {{"x", img}}).begin()->second);
    require_equal(y, padded_int8.run_one(img));  // the int8 Pad's fold changes no value
    CHECK(relative_error(y, sim.run_one(img)) < 0.05);
  }
}

// DequantizeLinear -> MaxPool in float becomes QMaxPool -> DequantizeLinear: the same floats,
// padding included, where every window reaches the input.
TEST_CASE("a float MaxPool after DequantizeLinear runs on the int8 values, the same floats",
          "[int8][passes]") {
  auto graph = [](int64_t ceil_mode) {
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("x", DType::f32, Shape{1, 4, 7, 7});
    Value* s = b.constant("s", Tensor::scalar<float>(0.03f));
    Value* z = b.constant("z", Tensor::scalar<int8_t>(-5));
    Value* q = b.op("QuantizeLinear", "q", {x, s, z});
    Value* dq = b.op("DequantizeLinear", "dq", {q, s, z});
    Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{3, 3});
    a.set("strides", std::vector<int64_t>{2, 2});
    a.set("pads", std::vector<int64_t>{1, 1, 2, 2});
    a.set("ceil_mode", ceil_mode);
    b.output(b.op("MaxPool", "pool", {dq}, a));
    return g;
  };
  std::mt19937 rng(12);
  const Tensor x = random_tensor(Shape{1, 4, 7, 7}, rng, -3.f, 3.f);
  SessionOptions l1;
  l1.optimization_level = 1;
  Session plain(graph(0), l1), folded(graph(0));
  CHECK(op_histogram(folded.graph())["QMaxPool"] == 1);
  require_equal(folded.run_one(x), plain.run_one(x));
  // In ceil mode a last window may lie in the padding only: -inf in float, so kept.
  Session ceil(graph(1));
  CHECK(op_histogram(ceil.graph())["MaxPool"] == 1);
}

// The int8 Pad folds into QAveragePool only where it pads the spatial dims with the pool's
// x_zero_point (the value that stands for 0).
TEST_CASE("pad-pool-fusion: an int8 Pad of the zero point becomes QAveragePool's pads",
          "[int8][passes]") {
  // x: int8 [1, 6, 5, 8] (NHWC) or [1, 8, 6, 5] (NCHW).
  auto graph = [](bool nhwc, int8_t value, std::vector<int64_t> pads) {
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("x", DType::i8, nhwc ? Shape{1, 6, 5, 8} : Shape{1, 8, 6, 5});
    Value* padded = b.op("Pad", "pad",
                         {x, b.constant("pads", Tensor::from_vector(pads, Shape{8})),
                          b.constant("value", Tensor::scalar<int8_t>(value))});
    Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{3, 3});
    a.set("layout", std::string(nhwc ? "NHWC" : "NCHW"));
    a.set("x_scale", 0.05f);
    a.set("x_zero_point", int64_t{7});
    a.set("y_scale", 0.04f);
    a.set("y_zero_point", int64_t{-3});
    b.output(b.op("QAveragePool", "avg", {padded}, a, kMinferDomain));
    return g;
  };
  const std::vector<int64_t> nhwc_pads{0, 1, 2, 0, 0, 1, 0, 0}, nchw_pads{0, 0, 1, 2, 0, 0, 1, 0};
  std::mt19937 rng(13);
  SessionOptions unfused;
  unfused.disabled_passes = {"pad-pool-fusion"};
  for (bool nhwc : {true, false}) {
    INFO((nhwc ? "NHWC" : "NCHW"));
    const std::vector<int64_t>& pads = nhwc ? nhwc_pads : nchw_pads;
    const Tensor x = random_i8(nhwc ? Shape{1, 6, 5, 8} : Shape{1, 8, 6, 5}, rng);
    Session fused(graph(nhwc, 7, pads)), plain(graph(nhwc, 7, pads), unfused);
    CHECK(op_histogram(fused.graph())["Pad"] == 0);
    for (const Node* n : fused.graph().nodes())
      if (n->op_type == "QAveragePool")
        CHECK(n->attrs.get_ints("pads") == std::vector<int64_t>{1, 2, 1, 0});
    require_equal(fused.run_one(x), plain.run_one(x));
  }
  // Kept: another value than the zero point; padded channels.
  CHECK(op_histogram(Session(graph(true, 0, nhwc_pads)).graph())["Pad"] == 1);
  CHECK(op_histogram(Session(graph(true, 7, {0, 1, 1, 1, 0, 1, 1, 0})).graph())["Pad"] == 1);
}

// Q(Concat(a, b)) = Concat(Q(a), Q(b)): the folding quantizes a Concat's inputs with its Q's
// parameters and joins int8 values, the same ones.
TEST_CASE("a Concat before QuantizeLinear joins its inputs' int8 values, the same ones",
          "[int8][passes]") {
  auto graph = [] {
    Graph g;
    GraphBuilder b(g);
    Value* a = b.input("a", DType::f32, Shape{2, 3, 4, 5});
    Value* c = b.input("c", DType::f32, Shape{2, 3, 1, 5});
    Value* s = b.constant("s", Tensor::scalar<float>(0.02f));
    Value* z = b.constant("z", Tensor::scalar<int8_t>(9));
    Attributes axis;
    axis.set("axis", int64_t{2});
    Value* cat = b.op("Concat", "cat", {a, c}, axis);
    b.output(b.op("DequantizeLinear", "dq", {b.op("QuantizeLinear", "q", {cat, s, z}), s, z}));
    return g;
  };
  std::mt19937 rng(14);
  const NamedTensors in{{"a", random_tensor(Shape{2, 3, 4, 5}, rng, -3.f, 3.f)},
                        {"c", random_tensor(Shape{2, 3, 1, 5}, rng, -3.f, 3.f)}};
  SessionOptions l1;
  l1.optimization_level = 1;
  Session plain(graph(), l1), folded(graph());
  for (const Node* n : folded.graph().nodes())
    if (n->op_type == "Concat") CHECK(n->outputs[0]->dtype == DType::i8);
  require_equal(folded.run(in).at("dq"), plain.run(in).at("dq"));
}

TEST_CASE("Linear layers on rows of any rank (MatMul + Add) quantize and fold into QGemm",
          "[int8]") {
  // A ViT's or ConvNeXt's MLP: x [1, 6, 5, 16] -> Linear(16 -> 24) -> Relu -> Linear(24 -> 8),
  // each Linear exported as MatMul by a constant [K, M] and Add of a constant [M].
  SmallModel m(21);
  Value* x = m.b.input("x", DType::f32, Shape{1, 6, 5, 16});
  auto linear = [&](const std::string& name, Value* in, int64_t k, int64_t out) {
    Value* y = m.b.op("MatMul", name, {in, m.weight(name + ".w", Shape{k, out})});
    return m.b.add(name + "_bias", y, m.weight(name + ".b", Shape{out}));
  };
  m.b.output(linear("fc2", m.b.relu("act", linear("fc1", x, 16, 24)), 24, 8));
  std::mt19937 rng(22);
  std::vector<Tensor> calib;
  for (int i = 0; i < 4; ++i) calib.push_back(random_tensor(Shape{1, 6, 5, 16}, rng, -2.f, 2.f));
  Calibrator cal(m.g, quiet());
  cal.add_all(calib);
  Graph qdq = clone_graph(m.g);
  quantize_graph(qdq, cal.table(CalibrationMethod::minmax));
  // The weights per output channel, the bias as int32 at the product's scale (as a Gemm's).
  for (const char* add : {"fc1_bias", "fc2_bias"}) {
    const Node* dq = qdq.find_node(add)->inputs[1]->producer;
    REQUIRE(dq != nullptr);
    CHECK(dq->op_type == "DequantizeLinear");
    CHECK(dq->inputs[0]->dtype == DType::i32);
  }
  verify(qdq);

  SessionOptions l1;
  l1.optimization_level = 1;
  Session sim(clone_graph(qdq), l1), int8(clone_graph(qdq)), ref(clone_graph(m.g));
  auto folded = op_histogram(int8.graph());
  CHECK(folded["QGemm"] == 2);
  CHECK(folded["MatMul"] + folded["FusedMatMul"] + folded["Add"] + folded["Relu"] == 0);
  CHECK(folded["Reshape"] == 0);  // QGemm takes A's rows of any rank
  for (const Node* n : int8.graph().nodes())
    if (n->op_type == "QGemm") CHECK(n->input(2) != nullptr);  // the folded bias
  for (const Tensor& t : {calib[0], random_tensor(Shape{1, 6, 5, 16}, rng, -2.f, 2.f)}) {
    const Tensor yq = int8.run_one(t);
    CHECK(yq.shape() == Shape{1, 6, 5, 8});
    CHECK(relative_error(yq, sim.run_one(t)) < 0.02);
    CHECK(relative_error(yq, ref.run_one(t)) < 0.1);
  }
}

TEST_CASE("a Linear layer's Gelu runs in QGemm's epilogue on the CPU, its int8 output folded in",
          "[int8]") {
  // A transformer's MLP: Linear(8 -> 16) -> Gelu -> Linear(16 -> 4), on x [2, 3, 8].
  SmallModel m(23);
  Value* x = m.b.input("x", DType::f32, Shape{2, 3, 8});
  auto linear = [&](const std::string& name, Value* in, int64_t k, int64_t out) {
    Value* y = m.b.op("MatMul", name, {in, m.weight(name + ".w", Shape{k, out})});
    return m.b.add(name + "_bias", m.weight(name + ".b", Shape{out}), y);  // (bias first)
  };
  m.b.output(linear("fc2", m.b.op("Gelu", "gelu", {linear("fc1", x, 8, 16)}), 16, 4));
  std::mt19937 rng(24);
  std::vector<Tensor> calib;
  for (int i = 0; i < 4; ++i) calib.push_back(random_tensor(Shape{2, 3, 8}, rng, -2.f, 2.f));
  Calibrator cal(m.g, quiet());
  cal.add_all(calib);
  Graph qdq = clone_graph(m.g);
  quantize_graph(qdq, cal.table(CalibrationMethod::minmax));

  SessionOptions l1;
  l1.optimization_level = 1;
  Session sim(clone_graph(qdq), l1), int8(clone_graph(qdq));
  auto folded = op_histogram(int8.graph());
  CHECK(folded["QGemm"] == 2);
  CHECK(folded["Gelu"] + folded["QuantizeLinear"] == 1);  // the input's Q only
  const Node* fc1 = int8.graph().find_node("fc1");
  REQUIRE(fc1 != nullptr);
  CHECK(fc1->attrs.get_string("activation", "") == "Gelu");
  CHECK(fc1->outputs[0]->dtype == DType::i8);
  for (const Tensor& t : calib) CHECK(relative_error(int8.run_one(t), sim.run_one(t)) < 0.02);
}
