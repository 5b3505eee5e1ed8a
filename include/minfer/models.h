// Hand-built networks on the builder API: the ResNet family (ImageNet and CIFAR-10).
#pragma once

#include <string>
#include <vector>

#include "minfer/graph.h"
#include "minfer/image.h"

namespace minfer {

struct ModelInfo {
  std::string name;         // "resnet50", "cifar-resnet20", ...
  std::string dataset;      // "imagenet" or "cifar10"
  int num_classes = 1000;
  ImagePreprocess preprocess;
  std::string description;
};

// The built-in model names, in a stable order.
std::vector<ModelInfo> builtin_models();
bool is_builtin_model(const std::string& name);
const ModelInfo& builtin_model_info(const std::string& name);  // throws InvalidArgument

// Builds a model with input "input" [N,3,H,W] (symbolic batch N) and output "logits".
// Weights come from a safetensors file (torchvision / akamaster tensor names) or, when
// `weights_path` is empty, from a deterministic seeded initialization.
Graph build_model(const std::string& name, const std::string& weights_path = "",
                  uint64_t seed = 0);

// CIFAR-10 class names, index order.
const std::vector<std::string>& cifar10_class_names();

}  // namespace minfer
