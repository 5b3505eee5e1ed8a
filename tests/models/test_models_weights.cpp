// The real CIFAR-10 ResNets: reference logits, accuracy on the JPEG set, and clear errors for
// weights files that do not fit the model.
#include <filesystem>
#include <fstream>

#include "models_test_util.h"

using namespace minfer;

namespace {

std::string weights_path(const std::string& file) {
  return (test::cifar_model_dir(file.substr(0, file.find('.'))) / file).string();
}

// Checks a CIFAR model with real weights against its float64 reference logits.
void check_reference_logits(const std::string& model, const std::string& ref_name) {
  const test::CifarReference ref = test::read_cifar_reference(ref_name);
  Session s(build_model(model, weights_path(ref_name + ".safetensors")));
  const Tensor logits = s.run_one(test::cifar_png_batch(ref));
  REQUIRE(logits.shape() == Shape{20, 10});
  double max_diff = 0;
  int agree = 0;
  for (int64_t i = 0; i < 20; ++i) {
    for (int64_t c = 0; c < 10; ++c)
      max_diff = std::max(max_diff, std::abs(double(logits.data<float>()[i * 10 + c]) -
                                             ref.logits[size_t(i)][size_t(c)]));
    agree += test::argmax_row(logits, i) == ref.argmax[size_t(i)];
  }
  INFO(model << ": max |diff| " << max_diff);
  CHECK(max_diff < 1e-3);
  CHECK(agree == 20);
}

// Writes a copy of resnet20's weights after `edit` to a temporary file.
template <typename Edit>
std::string edited_weights(const std::string& name, Edit edit) {
  auto tensors = load_safetensors(weights_path("resnet20.safetensors"));
  edit(tensors);
  const auto path = (test::temp_dir("models_" + name) / "w.safetensors").string();
  save_safetensors(tensors, path);
  return path;
}

void require_model_error(const std::string& model, const std::string& path,
                         const std::vector<std::string>& parts) {
  try {
    build_model(model, path);
    FAIL("no error for " << path);
  } catch (const Error& e) {
    INFO(e.what());
    CHECK(e.code() == ErrorCode::InvalidModel);
    for (const auto& p : parts) CHECK_THAT(e.what(), Catch::Contains(p));
  }
}

}  // namespace

TEST_CASE("models: cifar-resnet20 reproduces the reference logits", "[models]") {
  check_reference_logits("cifar-resnet20", "resnet20");
}

TEST_CASE("models: cifar-resnet32 reproduces the reference logits", "[models]") {
  check_reference_logits("cifar-resnet32", "resnet32");
}

TEST_CASE("models: cifar-resnet20 scores 399/500 on the CIFAR-10 JPEGs", "[models]") {
  const auto dir = test::data_dir() / "images" / "cifar10-jpeg";
  std::ifstream csv(dir / "labels.csv");
  REQUIRE(csv);
  std::vector<std::pair<std::string, int64_t>> samples;
  std::string line;
  std::getline(csv, line);  // header
  while (std::getline(csv, line)) {
    const auto c1 = line.find(','), c2 = line.find(',', c1 + 1);
    samples.emplace_back(line.substr(0, c1), std::stoll(line.substr(c1 + 1, c2 - c1 - 1)));
  }
  REQUIRE(samples.size() == 500);
  Session s(build_model("cifar-resnet20", weights_path("resnet20.safetensors")));
  const ImagePreprocess& pre = builtin_model_info("cifar-resnet20").preprocess;
  int correct = 0;
  for (size_t start = 0; start < samples.size(); start += 50) {
    std::vector<Tensor> batch;
    for (size_t i = start; i < start + 50; ++i)
      batch.push_back(load_image((dir / samples[i].first).string(), pre));
    const Tensor logits = s.run_one(stack_batch(batch));
    for (size_t i = start; i < start + 50; ++i)
      correct += test::argmax_row(logits, int64_t(i - start)) == samples[i].second;
  }
  CHECK(correct >= 398);
  CHECK(correct <= 400);
}

TEST_CASE("models: weights files that do not fit are rejected clearly", "[models]") {
  SECTION("a missing tensor") {
    const auto path =
        edited_weights("missing", [](auto& t) { t.erase("layer2.1.bn1.running_var"); });
    require_model_error("cifar-resnet20", path,
                        {path, "layer2.1.bn1.running_var", "missing", "[32]"});
  }
  SECTION("a tensor of the wrong shape") {
    const auto path = edited_weights("shape", [](auto& t) {
      t["layer1.0.conv2.weight"] = Tensor(DType::f32, Shape{16, 16, 1, 1});
    });
    require_model_error("cifar-resnet20", path,
                        {"layer1.0.conv2.weight", "[16,16,1,1]", "[16,16,3,3]"});
  }
  SECTION("a tensor of the wrong dtype") {
    const auto path =
        edited_weights("dtype", [](auto& t) { t["linear.bias"] = Tensor(DType::i32, Shape{10}); });
    require_model_error("cifar-resnet20", path, {"linear.bias", "i32", "f32"});
  }
  SECTION("tensors the model does not use (another model's file)") {
    require_model_error("cifar-resnet20", weights_path("resnet32.safetensors"),
                        {"resnet32.safetensors", "does not use", "layer1.3."});
  }
  SECTION("a file that lacks the model's deeper layers") {
    require_model_error("cifar-resnet32", weights_path("resnet20.safetensors"),
                        {"layer1.3.conv1.weight", "missing"});
  }
  SECTION("CIFAR weights for an ImageNet model") {
    require_model_error("resnet18", weights_path("resnet20.safetensors"),
                        {"conv1.weight", "[64,3,7,7]", "[16,3,3,3]"});
  }
  SECTION("no file at all") {
    CHECK_THROWS_AS(build_model("cifar-resnet20", "/nonexistent/w.safetensors"), Error);
  }
}

TEST_CASE("models: resnet20 and resnet32 real weights both load", "[models]") {
  Graph g20 = build_model("cifar-resnet20", weights_path("resnet20.safetensors"));
  Graph g32 = build_model("cifar-resnet32", weights_path("resnet32.safetensors"));
  verify(g20);
  verify(g32);
  CHECK(g32.node_count() > g20.node_count());
  // The real weights are used, not a seeded init.
  Graph seeded = build_model("cifar-resnet20");
  CHECK(g20.find_value("conv1.weight")->constant->to_vector<float>() !=
        seeded.find_value("conv1.weight")->constant->to_vector<float>());
}
