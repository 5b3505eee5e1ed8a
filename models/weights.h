// Where a built-in model's parameters come from: a safetensors file with torchvision /
// akamaster tensor names, or a deterministic seeded initialization when there is no file.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "minfer/tensor.h"

namespace minfer {

// How a tensor is initialized when no weights file is given.
enum class WeightInit {
  ConvHe,           // N(0, 2 / fan_in): keeps the second moment of a Relu'd input
  BnGamma,          // U(0.5, 1.5)
  BnGammaResidual,  // U(0.05, 0.15): the last BN of a residual branch (see weights.cpp)
  BnBeta,           // U(-0.1, 0.1)
  BnMean,           // U(-0.1, 0.1)
  BnVar,            // U(0.5, 1.5)
  LinearUniform,    // U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as torch.nn.Linear
};

class WeightSource {
 public:
  // `path` empty = seeded initialization from `seed`. `model` names the model in messages.
  WeightSource(const std::string& path, uint64_t seed, std::string model);

  // The tensor `name` of shape `shape`: from the file (checked: present, f32, that shape) or
  // freshly initialized. `fan_in` is used by ConvHe and LinearUniform.
  Tensor get(const std::string& name, const Shape& shape, WeightInit init, int64_t fan_in = 0);

  // Throws InvalidModel when the file holds tensors the model never asked for (a wrong file).
  void check_all_used() const;

  bool from_file() const { return !path_.empty(); }

 private:
  Tensor init_tensor(const std::string& name, const Shape& shape, WeightInit init,
                     int64_t fan_in) const;

  std::string path_;
  uint64_t seed_;
  std::string model_;
  std::map<std::string, Tensor> file_;
  std::set<std::string> used_;
};

}  // namespace minfer
