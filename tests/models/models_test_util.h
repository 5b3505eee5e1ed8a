// Helpers for the model tests: the CIFAR-10 PNGs and their reference logits.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "repo_data.h"
#include "test_util.h"

namespace minfer::test {

struct CifarReference {
  std::vector<std::string> files;
  std::vector<std::vector<double>> logits;  // 10 per image
  std::vector<int> argmax;
};

// Where a CIFAR model's real weights and reference logits are: data/ ships ResNet-20's, the
// shared data has the others.
inline std::filesystem::path cifar_model_dir(const std::string& model) {
  return (model == "resnet20" ? repo_data_dir() : data_dir()) / "models";
}

// Reads models/<model>.cifar10-png.logits.txt: "file argmax l0 .. l9" per image.
inline CifarReference read_cifar_reference(const std::string& model) {
  const auto path = cifar_model_dir(model) / (model + ".cifar10-png.logits.txt");
  std::ifstream in(path);
  INFO(path.string());
  REQUIRE(in);
  CifarReference r;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string file;
    int argmax = 0;
    if (!(ss >> file >> argmax) || file.find(".png") == std::string::npos) continue;
    std::vector<double> v(10);
    for (double& x : v) REQUIRE(bool(ss >> x));
    r.files.push_back(file);
    r.argmax.push_back(argmax);
    r.logits.push_back(v);
  }
  REQUIRE(r.files.size() == 20);
  return r;
}

// The 20 lossless CIFAR-10 test images, preprocessed for the CIFAR models, as one batch.
inline Tensor cifar_png_batch(const CifarReference& ref) {
  const ImagePreprocess& pre = builtin_model_info("cifar-resnet20").preprocess;
  std::vector<Tensor> images;
  for (const auto& f : ref.files)
    images.push_back(load_image((repo_data_dir() / "images" / "cifar10-png" / f).string(), pre));
  return stack_batch(images);
}

inline int64_t argmax_row(const Tensor& t, int64_t row) {
  const int64_t cols = t.numel() / t.dim(0);
  const float* p = t.data<float>() + row * cols;
  return std::max_element(p, p + cols) - p;
}

}  // namespace minfer::test
