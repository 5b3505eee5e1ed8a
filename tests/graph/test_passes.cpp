#include <catch2/catch.hpp>

#include <map>

#include "graph/pass.h"
#include "graph/passes/passes.h"
#include "minfer/calibrate.h"
#include "test_util.h"

using namespace minfer;
using namespace minfer::test;

namespace {
Value* conv_weight(GraphBuilder& b, const std::string& name, int64_t out, int64_t in, int64_t k,
                   std::mt19937& rng) {
  return b.constant(name, random_tensor({out, in, k, k}, rng, -0.3f, 0.3f));
}

Value* bn(GraphBuilder& b, const std::string& name, Value* x, int64_t c, std::mt19937& rng) {
  return b.batch_norm(name, x, b.constant(name + ".weight", random_tensor({c}, rng, 0.5f, 1.5f)),
                      b.constant(name + ".bias", random_tensor({c}, rng)),
                      b.constant(name + ".mean", random_tensor({c}, rng)),
                      b.constant(name + ".var", random_tensor({c}, rng, 0.5f, 2.f)));
}

// A residual block: relu(bn2(conv2(relu(bn1(conv1(x))))) + x), then a linear head.
Graph residual_block(std::mt19937& rng, bool expose_intermediate = false) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", DType::f32, Shape{-1, 8, 6, 6});
  Value* h = b.conv("conv1", x, conv_weight(b, "w1", 8, 8, 3, rng), nullptr, {1, 1}, {1, 1, 1, 1});
  h = b.relu("relu1", bn(b, "bn1", h, 8, rng));
  Value* c2 = b.conv("conv2", h, conv_weight(b, "w2", 8, 8, 3, rng), nullptr, {1, 1}, {1, 1, 1, 1});
  Value* y = b.relu("relu2", b.add("add", bn(b, "bn2", c2, 8, rng), x));
  y = b.flatten("flatten", b.global_average_pool("gap", y));
  y = b.relu("fc_relu", b.linear("fc", y, b.constant("fc.w", random_tensor({4, 8}, rng)),
                                 b.constant("fc.b", random_tensor({4}, rng))));
  b.output(y);
  if (expose_intermediate) b.output(c2);  // conv2's output is observable: no fusion through it
  return g;
}

// Runs the graph at opt level 0 and at `level` on the same random input; both must agree.
void require_same_outputs(const std::function<Graph()>& make, int level) {
  std::mt19937 rng(11);
  Tensor x = random_tensor({2, 8, 6, 6}, rng);
  SessionOptions o0;
  o0.optimization_level = 0;
  SessionOptions o2;
  o2.optimization_level = level;
  Session plain(make(), o0), optimized(make(), o2);
  NamedTensors a = plain.run({{"x", x}}), b = optimized.run({{"x", x}});
  REQUIRE(a.size() == b.size());
  // Folding BN reassociates float math: 1e-5 relative + 1e-5 absolute is a few ulps here.
  for (auto& [name, t] : a) require_close(b.at(name), t, 1e-5, 1e-5);
}
}  // namespace

TEST_CASE("level 2 folds BatchNorm and fuses conv, residual and activations", "[passes]") {
  std::mt19937 rng(1);
  Graph g = residual_block(rng);
  SessionOptions opts;
  g.infer_shapes();
  auto reports = optimize(g, opts);
  auto h = op_histogram(g);
  INFO(g.dump());
  REQUIRE(h.count("BatchNormalization") == 0);
  REQUIRE(h.count("Relu") == 0);
  REQUIRE(h.count("Add") == 0);
  REQUIRE(h["FusedConv"] == 2);
  REQUIRE(h["FusedGemm"] == 1);
  Node* conv2 = g.find_node("conv2");
  REQUIRE(conv2);
  REQUIRE(conv2->inputs.size() == 4);  // X, W, B, residual
  REQUIRE(conv2->inputs[3]->name == "x");
  REQUIRE(conv2->attrs.get_string("activation", "") == "Relu");
  REQUIRE(g.outputs()[0]->name == "fc_relu");  // the output keeps its public name
  bool logged = false;
  for (auto& r : reports)
    for (auto& c : r.changes) logged |= c.find("bn2") != std::string::npos;
  REQUIRE(logged);

  // Idempotence: a second run changes nothing.
  auto again = optimize(g, opts);
  for (auto& r : again) {
    INFO(r.name);
    REQUIRE_FALSE(r.changed);
  }
}

TEST_CASE("fused graph computes what the original does", "[passes]") {
  require_same_outputs([] {
    std::mt19937 rng(5);
    return residual_block(rng);
  }, 2);
}

TEST_CASE("no fusion through a value that is a graph output", "[passes]") {
  std::mt19937 rng(2);
  Graph g = residual_block(rng, /*expose_intermediate=*/true);
  g.infer_shapes();
  optimize(g, SessionOptions{});
  auto h = op_histogram(g);
  // conv2's raw output is observable, so BN2 cannot be folded into it nor Add fused.
  REQUIRE(h["BatchNormalization"] == 1);
  REQUIRE(h["Add"] == 1);
  REQUIRE(h["Conv"] == 1);
  require_same_outputs([] {
    std::mt19937 r(2);
    return residual_block(r, true);
  }, 2);
}

TEST_CASE("no fusion when the intermediate has other users", "[passes]") {
  Graph g;
  GraphBuilder b(g);
  std::mt19937 rng(3);
  Value* x = b.input("x", DType::f32, Shape{1, 4, 5, 5});
  Value* c = b.conv("conv", x, conv_weight(b, "w", 4, 4, 1, rng), nullptr, {1, 1}, {0, 0, 0, 0});
  Value* r = b.relu("relu", c);
  b.output(b.add("add", r, c));  // c feeds both the Relu and the Add
  g.infer_shapes();
  optimize(g, SessionOptions{});
  auto h = op_histogram(g);
  REQUIRE(h["Relu"] == 1);
  REQUIRE(h["Conv"] == 1);
}

TEST_CASE("constant folding reduces a shape chain to a static Reshape", "[passes]") {
  // PyTorch's exporter writes x.view(x.size(0), -1) as Shape -> Gather -> Unsqueeze -> Concat.
  auto make = [] {
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("x", DType::f32, Shape{2, 8, 6, 6});
    Value* shape = b.op("Shape", "shape", {x});
    Attributes gather_axis;
    gather_axis.set("axis", int64_t{0});
    Value* n = b.op("Gather", "gather", {shape, b.constant("zero", Tensor::scalar<int64_t>(0))},
                    gather_axis);
    Value* n1 = b.op("Unsqueeze", "unsqueeze",
                     {n, b.constant("axes", Tensor::from_vector<int64_t>({0}, Shape{1}))});
    Attributes cat_axis;
    cat_axis.set("axis", int64_t{0});
    Value* target = b.op("Concat", "concat",
                         {n1, b.constant("minus1", Tensor::from_vector<int64_t>({-1}, Shape{1}))},
                         cat_axis);
    b.output(b.relu("relu", b.op("Reshape", "reshape", {x, target})));
    return g;
  };
  Graph g = make();
  g.infer_shapes();
  SessionOptions o1;
  o1.optimization_level = 1;
  optimize(g, o1);
  auto h = op_histogram(g);
  INFO(g.dump());
  REQUIRE(h.count("Shape") == 0);
  REQUIRE(h.count("Concat") == 0);
  REQUIRE(h["Reshape"] == 1);
  REQUIRE(g.outputs()[0]->shape == Shape{2, 288});
  // And the unoptimized graph still runs: the plan resolves the chain itself.
  SessionOptions o0;
  o0.optimization_level = 0;
  std::mt19937 rng(4);
  Tensor x = random_tensor({2, 8, 6, 6}, rng);
  Tensor a = Session(make(), o0).run_one(x), c = Session(make(), o1).run_one(x);
  require_equal(a, c);
}

TEST_CASE("passes can be disabled by name, and unknown names are refused", "[passes]") {
  std::mt19937 rng(6);
  Graph g = residual_block(rng);
  g.infer_shapes();
  SessionOptions opts;
  // (Without the folding, a BatchNormalization before a Relu becomes a depthwise conv: that
  // pass off too.)
  opts.disabled_passes = {"batchnorm-folding", "batchnorm-to-depthwise"};
  optimize(g, opts);
  REQUIRE(op_histogram(g)["BatchNormalization"] == 2);
  opts.disabled_passes = {"no-such-pass"};
  REQUIRE_THROWS_AS(optimize(g, opts), Error);
}

TEST_CASE("ResNet-50 reduces to fused convolutions", "[passes][models]") {
  Graph g = build_model("resnet50");
  g.infer_shapes();
  size_t raw = g.node_count();
  auto before = op_histogram(g);
  optimize(g, SessionOptions{});
  auto h = op_histogram(g);
  INFO("raw " << raw << " nodes, fused " << g.node_count());
  REQUIRE(before["BatchNormalization"] == 53);
  REQUIRE(h.count("BatchNormalization") == 0);
  REQUIRE(h.count("Relu") == 0);
  REQUIRE(h.count("Add") == 0);
  // The downsample convs stay plain Conv (with the folded BN as bias): they feed the
  // residual Add as its shortcut, so the block's last conv is the one that absorbs the Add.
  REQUIRE(h["FusedConv"] == 49);
  REQUIRE(h["Conv"] == 4);
  REQUIRE(g.node_count() == 53 + 4);  // + MaxPool, GlobalAveragePool, Flatten, Gemm
}

TEST_CASE("fused ops run on the fast CPU kernels", "[passes][cpu]") {
  for (const char* op : {"FusedConv", "FusedGemm"}) {
    auto kernels = OpRegistry::global().kernels(kMinferDomain, op);
    INFO(op);
    REQUIRE_FALSE(kernels.empty());
  }
}

namespace {
// conv -> `make_activation` -> output: a 3x3 conv with a bias over [1, 4, 6, 6].
Graph conv_then(const std::function<Value*(GraphBuilder&, Value*)>& make_activation) {
  Graph g;
  GraphBuilder b(g);
  std::mt19937 rng(7);
  Value* x = b.input("x", DType::f32, Shape{1, 4, 6, 6});
  Value* c = b.conv("conv", x, conv_weight(b, "w", 4, 4, 3, rng),
                    b.constant("b", random_tensor({4}, rng)), {1, 1}, {1, 1, 1, 1});
  b.output(make_activation(b, c));
  g.infer_shapes();
  return g;
}

Attributes hard_sigmoid_attrs(float alpha, float beta) {
  Attributes a;
  a.set("alpha", alpha);
  a.set("beta", beta);
  return a;
}

// What conv_then(make) becomes on the CPU: the fused activation ("" = not fused) and the
// number of nodes left; the fused graph computes what the original does.
std::pair<std::string, size_t> fused_on_cpu(
    const std::function<Value*(GraphBuilder&, Value*)>& make) {
  Graph g = conv_then(make);
  optimize(g, SessionOptions{});
  const Node* conv = g.find_node("conv");
  REQUIRE(conv);
  std::mt19937 rng(3);
  Tensor x = random_tensor({1, 4, 6, 6}, rng, -4.f, 4.f);
  SessionOptions o0;
  o0.optimization_level = 0;
  Session plain(conv_then(make), o0), fused(conv_then(make), SessionOptions{});
  NamedTensors a = plain.run({{"x", x}}), b = fused.run({{"x", x}});
  for (auto& [name, t] : a) require_close(b.at(name), t, 1e-5, 1e-6);
  return {conv->attrs.get_string("activation", ""), g.node_count()};
}
}  // namespace

TEST_CASE("CPU sessions fuse Sigmoid, SiLU, HardSigmoid and HardSwish into the conv",
          "[passes][cpu]") {
  using Make = std::function<Value*(GraphBuilder&, Value*)>;
  const std::vector<std::pair<std::string, Make>> cases{
      {"Sigmoid", [](GraphBuilder& b, Value* c) { return b.op("Sigmoid", "act", {c}); }},
      {"Silu",  // x * Sigmoid(x), either operand order
       [](GraphBuilder& b, Value* c) {
         return b.op("Mul", "mul", {c, b.op("Sigmoid", "s", {c})});
       }},
      {"Silu",
       [](GraphBuilder& b, Value* c) {
         return b.op("Mul", "mul", {b.op("Sigmoid", "s", {c}), c});
       }},
      {"HardSigmoid",
       [](GraphBuilder& b, Value* c) {
         return b.op("HardSigmoid", "act", {c}, hard_sigmoid_attrs(0.3f, 0.4f));
       }},
      {"HardSwish", [](GraphBuilder& b, Value* c) { return b.op("HardSwish", "act", {c}); }},
      {"HardSwish",  // torch's export below opset 14
       [](GraphBuilder& b, Value* c) {
         Value* gate = b.op("HardSigmoid", "hs", {c}, hard_sigmoid_attrs(1.f / 6.f, 0.5f));
         return b.op("Mul", "mul", {c, gate});
       }},
  };
  for (const auto& [activation, make] : cases) {
    INFO(activation);
    auto [fused, nodes] = fused_on_cpu(make);
    REQUIRE(fused == activation);
    REQUIRE(nodes == 1);
  }
}

TEST_CASE("smooth activations stay unfused where they are not the conv's own", "[passes][cpu]") {
  // x * HardSigmoid(x) with other parameters is not HardSwish, and the conv's output has two
  // users: nothing fuses.
  auto [fused, nodes] = fused_on_cpu([](GraphBuilder& b, Value* c) {
    return b.op("Mul", "mul", {c, b.op("HardSigmoid", "hs", {c}, hard_sigmoid_attrs(0.2f, 0.5f))});
  });
  REQUIRE(fused.empty());
  REQUIRE(nodes == 3);
  // Sigmoid(x) * y for another y: not SiLU.
  std::tie(fused, nodes) = fused_on_cpu([](GraphBuilder& b, Value* c) {
    Value* s = b.op("Sigmoid", "s", {c});
    return b.op("Mul", "mul", {c, b.op("Add", "add", {c, s})});
  });
  REQUIRE(fused.empty());
  REQUIRE(nodes == 4);
  // The sigmoid's output is also a graph output: the Sigmoid must stay.
  Graph g = conv_then([](GraphBuilder& b, Value* c) {
    Value* s = b.op("Sigmoid", "s", {c});
    b.output(s);
    return b.op("Mul", "mul", {c, s});
  });
  optimize(g, SessionOptions{});
  REQUIRE(g.find_node("conv")->attrs.get_string("activation", "").empty());
}

TEST_CASE("CUDA sessions keep smooth activations out of the conv (its kernels clamp only)",
          "[passes]") {
  Graph g = conv_then(
      [](GraphBuilder& b, Value* c) { return b.op("Mul", "mul", {c, b.op("Sigmoid", "s", {c})}); });
  SessionOptions cuda;
  cuda.device = Device::cuda(0);
  optimize(g, cuda);  // passes only: no device is needed
  REQUIRE(g.find_node("conv")->attrs.get_string("activation", "").empty());
  REQUIRE(op_histogram(g)["Sigmoid"] == 1);
}

namespace {
// x [2, 7, 300] -> MatMul(W [300, 40]) -> Add(bias) -> output, bias as [40] or `bias_shape`
// (300: two depth blocks of the GEMM, the bias added with the last).
Graph linear_3d(Shape bias_shape = Shape{40}) {
  Graph g;
  GraphBuilder b(g);
  std::mt19937 rng(9);
  Value* x = b.input("x", DType::f32, Shape{2, 7, 300});
  Value* y = b.op("MatMul", "mm", {x, b.constant("w", random_tensor({300, 40}, rng))});
  b.output(b.op("Add", "add", {y, b.constant("bias", random_tensor(bias_shape, rng))}));
  g.infer_shapes();
  return g;
}

// `make`'s graph at level 0, and at level 2 on 1 and 2 threads, on input x: the outputs agree.
void require_fused_matches_plain(const std::function<Graph()>& make, const Tensor& x) {
  for (int threads : {1, 2}) {
    SessionOptions o0, o2;
    o0.optimization_level = 0;
    o2.threads = threads;
    Session plain(make(), o0), fused(make(), o2);
    NamedTensors a = plain.run({{"x", x}}), b = fused.run({{"x", x}});
    for (auto& [name, t] : a) require_close(b.at(name), t, 1e-5, 1e-6);
  }
}
}  // namespace

TEST_CASE("CPU sessions fuse a Linear layer's Gelu into its FusedMatMul", "[passes][cpu]") {
  for (const char* approximate : {"none", "tanh"}) {
    INFO(approximate);
    auto make = [&] {
      Graph g = linear_3d();
      Attributes a;
      a.set("approximate", std::string(approximate));
      Value* y = g.outputs()[0];
      g.clear_outputs();
      g.add_output(g.add_node("Gelu", "gelu", {y}, 1, a)->outputs[0]);
      g.infer_shapes();
      return g;
    };
    Graph g = make();
    optimize(g, SessionOptions{});
    REQUIRE(op_histogram(g) == std::map<std::string, int>{{"FusedMatMul", 1}});
    CHECK(g.nodes()[0]->attrs.get_string("activation", "") ==
          (std::string(approximate) == "tanh" ? "GeluTanh" : "Gelu"));
    std::mt19937 rng(5);
    require_fused_matches_plain(make, random_tensor({2, 7, 300}, rng, -3.f, 3.f));
  }
}

TEST_CASE("CPU sessions fuse a rank-3 MatMul with its bias into FusedMatMul", "[passes][cpu]") {
  Graph g = linear_3d();
  optimize(g, SessionOptions{});
  REQUIRE(op_histogram(g) == std::map<std::string, int>{{"FusedMatMul", 1}});
  std::mt19937 rng(4);
  require_fused_matches_plain([] { return linear_3d(); }, random_tensor({2, 7, 300}, rng));
  // Not a bias of the columns ([7, 40] varies by row), or a CUDA session: no fusion.
  Graph rows = linear_3d(Shape{7, 40});
  optimize(rows, SessionOptions{});
  REQUIRE(op_histogram(rows)["MatMul"] == 1);
  Graph cuda_graph = linear_3d();
  SessionOptions cuda;
  cuda.device = Device::cuda(0);
  optimize(cuda_graph, cuda);
  REQUIRE(op_histogram(cuda_graph)["MatMul"] == 1);
}

TEST_CASE("a Transpose that moves only dims of size 1 becomes a Reshape", "[passes]") {
  struct Case {
    Shape in;
    std::vector<int64_t> perm;
    bool reshape;
  };
  const std::vector<Case> cases{
      {{1, 197, 768}, {1, 0, 2}, true},    // ViT's [1, 197, 768] <-> [197, 1, 768]
      {{1, 3, 1, 4}, {2, 1, 3, 0}, true},  // units anywhere, the others in order
      {{2, 3, 4}, {1, 0, 2}, false},       // a real transpose
      {{3, 1, 4}, {2, 1, 0}, false},       // non-unit dims swapped around a unit one
      {{1, 1}, {1, 0}, true},
  };
  std::mt19937 rng(9);
  for (const Case& c : cases) {
    INFO(c.in.to_string());
    auto make = [&] {
      Graph g;
      GraphBuilder b(g);
      Attributes a;
      a.set("perm", c.perm);
      Value* x = b.input("x", DType::f32, c.in);
      b.output(b.relu("y", b.op("Transpose", "t", {x}, a)));
      return g;
    };
    Graph g = make();
    optimize(g, SessionOptions{});
    CHECK(op_histogram(g)[c.reshape ? "Reshape" : "Transpose"] == 1);
    CHECK(op_histogram(g)[c.reshape ? "Transpose" : "Reshape"] == 0);
    SessionOptions o0;
    o0.optimization_level = 0;
    Session plain(make(), o0), optimized(make());
    const Tensor x = random_tensor(c.in, rng);
    const Tensor want = plain.run({{"x", x}}).at("y"), got = optimized.run({{"x", x}}).at("y");
    CHECK(got.shape() == want.shape());
    require_equal(got, want);
  }
}

namespace {
// x -> Pad(`pads`, `mode`, value `value`) -> AveragePool 3x3 stride 1 (`ceil_mode`), and the
// Pad's output also a graph output where `observed`.
Graph pad_then_pool(std::vector<int64_t> pads, const std::string& mode = "constant",
                    float value = 0.f, int64_t ceil_mode = 0, bool observed = false) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", DType::f32, Shape{2, 8, 6, 6});
  Attributes pa;
  pa.set("mode", mode);
  Value* padded =
      b.op("Pad", "pad",
           {x, b.constant("pads", Tensor::from_vector<int64_t>(pads, {int64_t(pads.size())})),
            b.constant("value", Tensor::from_vector<float>({value}, {}))},
           pa);
  Attributes pool;
  pool.set("kernel_shape", std::vector<int64_t>{3, 3});
  pool.set("ceil_mode", ceil_mode);
  if (ceil_mode) pool.set("strides", std::vector<int64_t>{2, 2});
  b.output(b.op("AveragePool", "pool", {padded}, pool));
  if (observed) b.output(padded);
  return g;
}
}  // namespace

TEST_CASE("pad-pool-fusion: a zero Pad of the spatial dims becomes the AveragePool's pads",
          "[passes]") {
  const std::vector<int64_t> spatial{0, 0, 1, 2, 0, 0, 1, 0};
  Graph g = pad_then_pool(spatial);
  g.infer_shapes();
  optimize(g, SessionOptions{});
  auto h = op_histogram(g);
  CHECK(h["Pad"] == 0);
  for (const Node* n : g.topo_order())
    if (n->op_type == "AveragePool") {
      CHECK(n->attrs.get_ints("pads") == std::vector<int64_t>{1, 2, 1, 0});
      CHECK(n->attrs.get_int("count_include_pad", 0) == 1);
    }
  require_same_outputs([&] { return pad_then_pool(spatial); }, 2);
  // What it must leave alone: a non-zero value, padded channels, another mode, a ceil-mode pool
  // (whose last window may pass the pads), a padded tensor someone else reads.
  const std::vector<std::function<Graph()>> kept = {
      [&] { return pad_then_pool(spatial, "constant", 1.f); },
      [&] { return pad_then_pool({0, 1, 1, 1, 0, 0, 1, 1}); },
      [&] { return pad_then_pool(spatial, "reflect"); },
      [&] { return pad_then_pool(spatial, "constant", 0.f, 1); },
      [&] { return pad_then_pool(spatial, "constant", 0.f, 0, true); }};
  for (size_t i = 0; i < kept.size(); ++i) {
    INFO("case " << i);
    Graph k = kept[i]();
    k.infer_shapes();
    optimize(k, SessionOptions{});
    CHECK(op_histogram(k)["Pad"] == 1);
  }
}

namespace {
// x [2, 8, 6, 6] -> Conv (k x k, `stride`, with a bias) -> AveragePool 2x2 stride 2 (`pads`),
// the conv's output also a graph output where `observed`.
Graph conv_then_pool(int64_t k = 1, int64_t stride = 1, std::vector<int64_t> pads = {0, 0, 0, 0},
                     bool observed = false) {
  std::mt19937 rng(21);
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", DType::f32, Shape{2, 8, 6, 6});
  Value* c = b.conv("conv", x, conv_weight(b, "w", 4, 8, k, rng),
                    b.constant("b", random_tensor({4}, rng)), {stride, stride}, {0, 0, 0, 0});
  Attributes pool;
  pool.set("kernel_shape", std::vector<int64_t>{2, 2});
  pool.set("strides", std::vector<int64_t>{2, 2});
  pool.set("pads", pads);
  b.output(b.op("AveragePool", "pool", {c}, pool));
  if (observed) b.output(c);
  return g;
}

// The input the optimized graph's AveragePool reads.
std::string pool_input(const std::function<Graph()>& make) {
  Graph g = make();
  g.infer_shapes();
  optimize(g, SessionOptions{});
  for (const Node* n : g.topo_order())
    if (n->op_type == "AveragePool") return n->inputs[0]->name;
  return "";
}
}  // namespace

TEST_CASE("pool-before-pointwise-conv: a 1x1 conv's average pool runs first, the same values",
          "[passes]") {
  CHECK(pool_input([] { return conv_then_pool(); }) == "x");
  require_same_outputs([] { return conv_then_pool(); }, 2);
  // Kept: a 3x3 conv, a strided one, a padded pool, a conv output someone else reads.
  CHECK(pool_input([] { return conv_then_pool(3); }) != "x");
  CHECK(pool_input([] { return conv_then_pool(1, 2); }) != "x");
  CHECK(pool_input([] { return conv_then_pool(1, 1, {1, 1, 1, 1}); }) != "x");
  CHECK(pool_input([] { return conv_then_pool(1, 1, {0, 0, 0, 0}, true); }) != "x");
}

namespace {
// Dilated convs on a 6x6 plane (x [2, 8, 6, 6]), as DeepLabv3's ASPP branches meet a small
// plane; `name` -> (kernel, dilations, pads, group).
struct DilatedConv {
  std::vector<int64_t> kernel, dilations, pads;
  int64_t group = 1;
};
const std::map<std::string, DilatedConv>& dilated_convs() {
  static const std::map<std::string, DilatedConv> convs{
      {"rate6", {{3, 3}, {6, 6}, {6, 6, 6, 6}}},         // only the centre tap reads the plane
      {"rate3_5x5", {{5, 5}, {3, 3}, {6, 6, 6, 6}}},     // the outer ring reads only padding
      {"rows_only", {{3, 3}, {6, 1}, {6, 1, 6, 1}}},     // the rows trimmed, the columns kept
      {"depthwise", {{5, 5}, {3, 3}, {6, 6, 6, 6}, 8}},  // group = channels
      {"rate2", {{3, 3}, {2, 2}, {2, 2, 2, 2}}},         // every tap reads the plane somewhere
  };
  return convs;
}

Graph dilated_conv_graph() {
  std::mt19937 rng(3);
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", DType::f32, Shape{-1, 8, 6, 6});
  for (const auto& [name, c] : dilated_convs()) {
    Tensor w = random_tensor({8, 8 / c.group, c.kernel[0], c.kernel[1]}, rng, -0.3f, 0.3f);
    Value* y = b.conv(name, x, b.constant(name + ".w", std::move(w)),
                      b.constant(name + ".b", random_tensor({8}, rng)), {1, 1}, c.pads, c.group,
                      c.dilations);
    b.output(b.relu(name + "_relu", y));
  }
  return g;
}

// The spatial kernel of each conv of an optimized graph, by the conv's name.
std::map<std::string, std::vector<int64_t>> kernels_of(const Graph& g) {
  std::map<std::string, std::vector<int64_t>> kernels;
  for (const Node* n : g.topo_order()) {
    if (n->op_type != "Conv" && n->op_type != "FusedConv" && n->op_type != "QConv") continue;
    REQUIRE(n->input(1)->is_constant());
    const Tensor& w = *n->input(1)->constant;
    kernels[n->name] = {w.dim(2), w.dim(3)};
  }
  return kernels;
}
}  // namespace

TEST_CASE("conv-tap-trimming: kernel rows and columns that read only padding are cut",
          "[passes]") {
  Graph g = dilated_conv_graph();
  g.infer_shapes();
  optimize(g, SessionOptions{});
  const auto kernels = kernels_of(g);
  CHECK(kernels.at("rate6") == std::vector<int64_t>{1, 1});
  CHECK(kernels.at("rate3_5x5") == std::vector<int64_t>{3, 3});
  CHECK(kernels.at("rows_only") == std::vector<int64_t>{1, 3});
  CHECK(kernels.at("depthwise") == std::vector<int64_t>{3, 3});
  CHECK(kernels.at("rate2") == std::vector<int64_t>{3, 3});
  require_same_outputs(dilated_conv_graph, 2);
}

TEST_CASE("conv-tap-trimming: a 1-D conv and a 3-D one", "[passes]") {
  // Rank 3 (a 1-D conv of length 6, rate 6: the centre tap only) and rank 5 (3x3x3 at rates
  // 1, 4, 1 on 2x3x4: the depth dim trimmed to its centre, the others kept).
  struct Case {
    Shape x, w;
    std::vector<int64_t> dilations, pads, trimmed;
  };
  const Case cases[] = {{{2, 3, 6}, {4, 3, 3}, {6}, {6, 6}, {4, 3, 1}},
                        {{1, 2, 2, 3, 4}, {3, 2, 3, 3, 3}, {4, 1, 1}, {4, 1, 1, 4, 1, 1},
                         {3, 2, 1, 3, 3}}};
  for (const Case& c : cases) {
    INFO("input " << c.x.to_string());
    auto make = [&] {
      std::mt19937 rng(4);
      Graph g;
      GraphBuilder b(g);
      Attributes a;
      a.set("dilations", c.dilations);
      a.set("pads", c.pads);
      b.output(b.op("Conv", "conv",
                    {b.input("x", DType::f32, c.x),
                     b.constant("w", random_tensor(c.w, rng, -0.3f, 0.3f))},
                    a));
      return g;
    };
    Graph g = make();
    g.infer_shapes();
    optimize(g, SessionOptions{});
    for (const Node* n : g.topo_order())
      if (n->op_type == "Conv" || n->op_type == "FusedConv")
        CHECK(n->input(1)->constant->shape() == Shape(c.trimmed));
    std::mt19937 rng(5);
    const Tensor x = random_tensor(c.x, rng);
    SessionOptions plain;
    plain.optimization_level = 0;
    Session before(make(), plain), after(make());
    require_close(after.run_one(x), before.run_one(x), 1e-5, 1e-5);
  }
}

TEST_CASE("conv-tap-trimming keeps int8 convs bit-exact", "[passes][int8]") {
  std::mt19937 rng(9);
  Graph g = dilated_conv_graph();
  g.infer_shapes();
  CalibrationOptions co;
  co.progress = false;
  Calibrator cal(g, co);
  for (int i = 0; i < 2; ++i) cal.add(random_tensor({2, 8, 6, 6}, rng));
  quantize_graph(g, cal.table(CalibrationMethod::minmax));
  Graph trimmed = clone_graph(g);
  optimize(trimmed, SessionOptions{});
  const auto kernels = kernels_of(trimmed);
  CHECK(kernels.at("rate6") == std::vector<int64_t>{1, 1});
  CHECK(kernels.at("depthwise") == std::vector<int64_t>{3, 3});
  SessionOptions untrimmed;
  untrimmed.disabled_passes = {"conv-tap-trimming"};
  Session with(clone_graph(g), SessionOptions{}), without(std::move(g), untrimmed);
  const Tensor x = random_tensor({2, 8, 6, 6}, rng);
  NamedTensors a = with.run({{"x", x}}), b = without.run({{"x", x}});
  for (auto& [name, t] : b) require_equal(a.at(name), t);
}

namespace {
// DenseNet's pre-activation: x -> Concat(x, x) -> BN -> Relu -> 1x1 conv, and a BN with no Relu
// after it; x [2, 8, 6, 6].
Graph preactivation() {
  std::mt19937 rng(13);
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", DType::f32, Shape{-1, 8, 6, 6});
  Value* cat = b.op("Concat", "cat", {x, x}, [] {
    Attributes a;
    a.set("axis", int64_t{1});
    return a;
  }());
  Value* h = b.relu("relu1", bn(b, "norm1", cat, 16, rng));
  h = b.conv("conv1", h, conv_weight(b, "w1", 4, 16, 1, rng), nullptr, {1, 1}, {0, 0, 0, 0});
  b.output(h);
  b.output(bn(b, "norm2", cat, 16, rng));  // no Relu: stays a BatchNormalization
  return g;
}
}  // namespace

TEST_CASE("batchnorm-to-depthwise: BatchNormalization + Relu becomes one 1x1 depthwise conv",
          "[passes][cpu]") {
  Graph g = preactivation();
  g.infer_shapes();
  optimize(g, SessionOptions{});
  auto h = op_histogram(g);
  CHECK(h["BatchNormalization"] == 1);
  CHECK(h["Relu"] == 0);
  const Node* dw = g.find_node("norm1");
  REQUIRE(dw);
  CHECK(dw->op_type == "FusedConv");
  CHECK(dw->attrs.get_int("group", 1) == 16);
  CHECK(dw->attrs.get_string("activation", "") == "Relu");
  require_same_outputs(preactivation, 2);
  // CUDA sessions keep the BatchNormalization (the pass is the CPU's).
  SessionOptions cuda;
  cuda.device = Device::cuda(0);
  Graph kept = preactivation();
  kept.infer_shapes();
  optimize(kept, cuda);
  CHECK(op_histogram(kept)["BatchNormalization"] == 2);
}
