// Reading classifier outputs: top-K classes per row, with probabilities.
#pragma once

#include <cstdint>
#include <vector>

#include "minfer/tensor.h"

namespace minfer::cli {

struct Prediction {
  int64_t index = 0;
  float score = 0;  // the raw output (a logit, or a probability if the model outputs those)
  float prob = 0;   // softmax of the row, or the output itself when it already sums to 1
};

// Treats `out` (f32, [N, C, ...]) as N rows of scores; returns the top `k` of each row,
// best first. Throws InvalidArgument for non-f32 or empty outputs.
std::vector<std::vector<Prediction>> top_k(const Tensor& out, int k);

// The graph output to read classes from: "logits" if present, else the first one.
std::string classifier_output(const std::vector<std::string>& output_names);

}  // namespace minfer::cli
