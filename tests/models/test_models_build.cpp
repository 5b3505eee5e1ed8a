// The built-in ResNets: every one builds, verifies, infers shapes, has torchvision's names
// and parameter counts; seeded weights are deterministic.
#include <set>

#include "models/reference_eval.h"
#include "test_util.h"

using namespace minfer;

namespace {

// Parameters as torch counts them: everything but BN running statistics.
int64_t torch_parameter_count(const Graph& g) {
  int64_t n = 0;
  for (const Value* v : g.values()) {
    if (!v->is_constant() || v->dtype != DType::f32) continue;
    const std::string& s = v->name;
    if (s.find("running_") != std::string::npos) continue;
    n += v->constant->numel();
  }
  return n;
}

}  // namespace

TEST_CASE("models: the built-in list", "[models]") {
  std::vector<std::string> names;
  for (const ModelInfo& m : builtin_models()) names.push_back(m.name);
  REQUIRE(names == std::vector<std::string>{"resnet18", "resnet34", "resnet50", "resnet101",
                                            "resnet152", "cifar-resnet20", "cifar-resnet32",
                                            "cifar-resnet44", "cifar-resnet56", "cifar-resnet110"});
  CHECK(is_builtin_model("resnet50"));
  CHECK_FALSE(is_builtin_model("resnet19"));
  const ModelInfo& r50 = builtin_model_info("resnet50");
  CHECK(r50.num_classes == 1000);
  CHECK(r50.preprocess.resize_shorter == 256);
  CHECK(r50.preprocess.height == 224);
  const ModelInfo& c20 = builtin_model_info("cifar-resnet20");
  CHECK(c20.num_classes == 10);
  CHECK(c20.preprocess.height == 32);
  CHECK(c20.preprocess.resize_shorter == 0);
  CHECK(c20.preprocess.mean[0] == Approx(0.485f));
  CHECK(c20.preprocess.std[2] == Approx(0.225f));
  CHECK(cifar10_class_names().size() == 10);
  CHECK(cifar10_class_names()[3] == "cat");
  try {
    builtin_model_info("resnet19");
    FAIL("no error for an unknown model");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::InvalidArgument);
    CHECK_THAT(e.what(), Catch::Contains("resnet19") && Catch::Contains("cifar-resnet20"));
  }
}

TEST_CASE("models: every built-in model builds, verifies and infers shapes", "[models]") {
  // Parameter counts of torchvision's resnets and akamaster's CIFAR resnets.
  const std::map<std::string, int64_t> expected_params{
      {"resnet18", 11689512},      {"resnet34", 21797672},     {"resnet50", 25557032},
      {"resnet101", 44549160},     {"resnet152", 60192808},    {"cifar-resnet20", 269722},
      {"cifar-resnet32", 464154},  {"cifar-resnet44", 658586}, {"cifar-resnet56", 853018},
      {"cifar-resnet110", 1727962}};
  for (const ModelInfo& info : builtin_models()) {
    SECTION(info.name) {
      Graph g = build_model(info.name);
      verify(g);
      g.infer_shapes();
      REQUIRE(g.inputs().size() == 1);
      const Value* in = g.inputs()[0];
      CHECK(in->name == "input");
      const int64_t size = info.dataset == "imagenet" ? 224 : 32;
      CHECK(in->shape == Shape{Shape::kDynamic, 3, size, size});
      REQUIRE(in->shape.symbols.size() >= 1);
      CHECK(in->shape.symbols[0] == "N");
      REQUIRE(g.outputs().size() == 1);
      const Value* out = g.outputs()[0];
      CHECK(out->name == "logits");
      CHECK(out->shape == Shape{Shape::kDynamic, info.num_classes});
      CHECK(torch_parameter_count(g) == expected_params.at(info.name));
      // torchvision / akamaster module names on nodes and tensors.
      CHECK(g.find_node("layer1.0.conv1") != nullptr);
      CHECK(g.find_node("layer1.0.bn1") != nullptr);
      CHECK(g.find_node("layer1.0.relu1") != nullptr);
      CHECK(g.find_node("layer1.0.add") != nullptr);
      CHECK(g.find_value("layer1.0.bn1.running_var") != nullptr);
      CHECK(g.find_value("conv1.weight") != nullptr);
      if (info.dataset == "imagenet") {
        CHECK(g.find_node("fc") != nullptr);
        CHECK(g.find_node("maxpool") != nullptr);
        CHECK(g.find_value("layer2.0.downsample.0.weight") != nullptr);
        CHECK(g.find_value("fc.weight")->shape[0] == 1000);
      } else {
        CHECK(g.find_node("linear") != nullptr);
        CHECK(g.find_node("layer2.0.shortcut.pad") != nullptr);
        CHECK(g.find_value("linear.weight")->shape == Shape{10, 64});
      }
    }
  }
}

TEST_CASE("models: ResNet-50 is a v1.5 Bottleneck network", "[models]") {
  Graph g = build_model("resnet50");
  g.infer_shapes();
  // The stride sits on the 3x3 conv2 of the first block of a stage, not on conv1.
  CHECK(g.find_node("layer2.0.conv1")->attrs.get_ints("strides") == std::vector<int64_t>{1, 1});
  CHECK(g.find_node("layer2.0.conv2")->attrs.get_ints("strides") == std::vector<int64_t>{2, 2});
  CHECK(g.find_value("layer2.0.conv3.weight")->shape == Shape{512, 128, 1, 1});
  CHECK(g.find_value("layer1.0.downsample.0.weight")->shape == Shape{256, 64, 1, 1});
  CHECK(g.find_value("layer4.2.relu")->shape == Shape{Shape::kDynamic, 2048, 7, 7});
  CHECK(g.find_value("maxpool")->shape == Shape{Shape::kDynamic, 64, 56, 56});
}

TEST_CASE("models: seeded weights are deterministic and depend on the seed", "[models]") {
  Graph a = build_model("cifar-resnet20", "", 7);
  Graph b = build_model("cifar-resnet20", "", 7);
  Graph c = build_model("cifar-resnet20", "", 8);
  for (const char* name : {"conv1.weight", "layer2.1.bn2.running_var", "linear.bias"}) {
    INFO(name);
    const auto va = a.find_value(name)->constant->to_vector<float>();
    CHECK(va == b.find_value(name)->constant->to_vector<float>());
    CHECK(va != c.find_value(name)->constant->to_vector<float>());
  }
  // Non-trivial BN statistics; He-scaled convs; small gamma closing each residual branch.
  const auto var = a.find_value("layer1.0.bn1.running_var")->constant->to_vector<float>();
  const auto mean = a.find_value("layer1.0.bn1.running_mean")->constant->to_vector<float>();
  for (float v : var) CHECK((v >= 0.5f && v <= 1.5f));
  CHECK(std::any_of(mean.begin(), mean.end(), [](float m) { return m != 0.f; }));
  for (float v : a.find_value("layer1.0.bn2.weight")->constant->to_vector<float>())
    CHECK((v >= 0.05f && v <= 0.15f));
  const auto w = a.find_value("layer3.1.conv1.weight")->constant->to_vector<float>();
  double sq = 0;
  for (float x : w) sq += double(x) * x;
  CHECK(std::sqrt(sq / w.size()) == Approx(std::sqrt(2.0 / (64 * 9))).epsilon(0.05));
}

TEST_CASE("models: seeded cifar-resnet20 matches the reference evaluator", "[models]") {
  std::mt19937 rng(3);
  Tensor x = test::random_tensor(Shape{3, 3, 32, 32}, rng, -2.f, 2.f);
  Graph g = build_model("cifar-resnet20", "", 1);
  const Tensor want = reference_eval(g, {{"input", x}}).at("logits");
  REQUIRE(want.shape() == Shape{3, 10});
  Session s(build_model("cifar-resnet20", "", 1));
  test::require_close(s.run_one(x), want, 1e-4, 1e-4);
}

TEST_CASE("models: reference_eval reports a missing input", "[models]") {
  Graph g = build_model("cifar-resnet20");
  try {
    reference_eval(g, {});
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::InvalidArgument);
    CHECK_THAT(e.what(), Catch::Contains("'input'"));
  }
}

namespace {

// Mean and standard deviation of all logits.
std::pair<double, double> moments(const Tensor& t) {
  const auto v = t.to_vector<float>();
  double m = 0, s = 0;
  for (float x : v) m += x;
  m /= double(v.size());
  for (float x : v) s += (x - m) * (x - m);
  return {m, std::sqrt(s / double(v.size()))};
}

// A seeded ImageNet model end to end: finite O(1) logits that depend on the input, the same
// at every optimization level.
void check_seeded_forward(const std::string& name) {
  std::mt19937 rng(5);
  Tensor x = test::random_tensor(Shape{2, 3, 224, 224}, rng, -2.f, 2.f);
  SessionOptions o0;
  o0.optimization_level = 0;
  Session plain(build_model(name, "", 0), o0);
  Session optimized(build_model(name, "", 0));
  const Tensor y = optimized.run_one(x);
  REQUIRE(y.shape() == Shape{2, 1000});
  test::require_close(y, plain.run_one(x), 1e-3, 1e-3);
  const auto [mean, sd] = moments(y);
  INFO("logits mean " << mean << " sd " << sd);
  CHECK(std::isfinite(mean));
  CHECK(sd > 0.01);  // activations did not die out...
  CHECK(sd < 20);    // ...nor explode through the residual stages
  double row_diff = 0;
  for (int64_t c = 0; c < 1000; ++c)
    row_diff = std::max(row_diff, double(std::abs(y.data<float>()[c] - y.data<float>()[1000 + c])));
  CHECK(row_diff > 1e-3);  // the two images give different logits
}

}  // namespace

TEST_CASE("models: seeded resnet18 runs end to end", "[models]") {
  check_seeded_forward("resnet18");
}

TEST_CASE("models: seeded resnet50 runs end to end", "[models][slow]") {
  check_seeded_forward("resnet50");
}

TEST_CASE("models: seeded resnet152 keeps activations O(1)", "[models][slow]") {
  check_seeded_forward("resnet152");
}

TEST_CASE("models: seeded resnet18 matches the reference evaluator", "[models][slow]") {
  std::mt19937 rng(9);
  Tensor x = test::random_tensor(Shape{1, 3, 224, 224}, rng, -2.f, 2.f);
  Graph g = build_model("resnet18");
  const Tensor want = reference_eval(g, {{"input", x}}).at("logits");
  Session s(build_model("resnet18"));
  test::require_close(s.run_one(x), want, 1e-3, 1e-4);
}
