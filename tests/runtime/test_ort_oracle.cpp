// The exported ResNet-20 (real weights), run by ONNX Runtime, gives minfer's logits.
#include <catch2/catch.hpp>

#include "repo_data.h"
#include "test_util.h"

using namespace minfer;

TEST_CASE("exported cifar-resnet20 run by ONNX Runtime matches minfer within 1e-4",
          "[io][python][models]") {
  const auto data = test::repo_data_dir();
  const auto dir = test::temp_dir("ort_oracle");
  const std::string weights = (data / "models" / "resnet20.safetensors").string();
  const std::string model = (dir / "resnet20.onnx").string();
  save_onnx(build_model("cifar-resnet20", weights), model);

  std::vector<Tensor> images;
  for (const auto& entry : std::filesystem::directory_iterator(data / "images" / "cifar10-png"))
    if (entry.path().extension() == ".png")  // not labels.csv
      images.push_back(
          load_image(entry.path().string(), builtin_model_info("cifar-resnet20").preprocess));
  REQUIRE(images.size() == 20);
  Tensor batch = stack_batch(images);
  save_npy(batch, (dir / "x.npy").string());

  Tensor ours = Session::from_file(model).run_one(batch);
  const std::string cmd = "python3 '" MINFER_SOURCE_DIR "/tests/python/ort_run.py' '" + model +
                          "' '" + (dir / "x.npy").string() + "' '" + (dir / "y.npy").string() +
                          "'";
  const int status = std::system(cmd.c_str());
  INFO("needs python3 with numpy and onnxruntime (pip install numpy onnxruntime)");
  REQUIRE(status == 0);
  Tensor theirs = load_npy((dir / "y.npy").string());
  REQUIRE(theirs.shape() == ours.shape());
  // Absolute 1e-4 on logits of magnitude ~10: float32 summation order differs between the two.
  test::require_close(ours, theirs, 0.0, 1e-4);
}
