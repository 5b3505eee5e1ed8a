// The built-in model list and build_model(): names, preprocessing, and dispatch.

#include "minfer/models.h"
#include "models/resnet_builder.h"

namespace minfer {

namespace {

struct Entry {
  ModelInfo info;
  bool imagenet;
  int depth;
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> list = [] {
    std::vector<Entry> r;
    ImagePreprocess imagenet;  // the header's defaults are ImageNet's mean/std
    imagenet.height = imagenet.width = 224;
    imagenet.resize_shorter = 256;
    for (int depth : {18, 34, 50, 101, 152}) {
      ModelInfo info;
      info.name = "resnet" + std::to_string(depth);
      info.dataset = "imagenet";
      info.num_classes = 1000;
      info.preprocess = imagenet;
      info.description = "ResNet-" + std::to_string(depth) + " for ImageNet (torchvision layout, " +
                         (depth < 50 ? "BasicBlock" : "Bottleneck v1.5") + ")";
      r.push_back({info, true, depth});
    }
    // The CIFAR models were trained on 32x32 images normalized with ImageNet's mean/std.
    ImagePreprocess cifar;
    cifar.height = cifar.width = 32;
    cifar.resize_shorter = 0;
    for (int depth : {20, 32, 44, 56, 110}) {
      ModelInfo info;
      info.name = "cifar-resnet" + std::to_string(depth);
      info.dataset = "cifar10";
      info.num_classes = 10;
      info.preprocess = cifar;
      info.description = "ResNet-" + std::to_string(depth) +
                         " for CIFAR-10 (akamaster layout, option-A shortcuts)";
      r.push_back({info, false, depth});
    }
    return r;
  }();
  return list;
}

const Entry* find_entry(const std::string& name) {
  for (const Entry& e : entries())
    if (e.info.name == name) return &e;
  return nullptr;
}

}  // namespace

std::vector<ModelInfo> builtin_models() {
  std::vector<ModelInfo> r;
  for (const Entry& e : entries()) r.push_back(e.info);
  return r;
}

bool is_builtin_model(const std::string& name) { return find_entry(name) != nullptr; }

const ModelInfo& builtin_model_info(const std::string& name) {
  const Entry* e = find_entry(name);
  if (!e) {
    std::string names;
    for (const Entry& x : entries()) names += (names.empty() ? "" : ", ") + x.info.name;
    throw Error(ErrorCode::InvalidArgument,
                "unknown model '" + name + "'; the built-in models are " + names);
  }
  return e->info;
}

Graph build_model(const std::string& name, const std::string& weights_path, uint64_t seed) {
  const ModelInfo& info = builtin_model_info(name);
  const Entry& e = *find_entry(name);
  WeightSource weights(weights_path, seed, info.name);
  Graph g = e.imagenet ? build_imagenet_resnet(info.name, e.depth, weights)
                       : build_cifar_resnet(info.name, e.depth, weights);
  weights.check_all_used();
  return g;
}

const std::vector<std::string>& cifar10_class_names() {
  static const std::vector<std::string> names{"airplane", "automobile", "bird",  "cat",  "deer",
                                              "dog",      "frog",       "horse", "ship", "truck"};
  return names;
}

}  // namespace minfer
