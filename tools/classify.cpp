#include "tools/classify.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace minfer::cli {

std::vector<std::vector<Prediction>> top_k(const Tensor& out, int k) {
  check(out.dtype() == DType::f32, ErrorCode::InvalidArgument,
        std::string("the model's output is ") + dtype_name(out.dtype()) +
            ", expected f32 scores for top-K");
  check(out.numel() > 0, ErrorCode::InvalidArgument, "the model's output is empty");
  const int64_t rows = out.rank() >= 2 ? out.dim(0) : 1;
  const int64_t cols = out.numel() / rows;
  const float* p = out.data<float>();
  std::vector<std::vector<Prediction>> result;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = p + r * cols;
    // Already probabilities (a Softmax at the end)? Then do not softmax again.
    double sum = 0;
    bool in_unit = true;
    for (int64_t c = 0; c < cols; ++c) {
      sum += row[c];
      in_unit &= row[c] >= 0 && row[c] <= 1;
    }
    const bool is_prob = in_unit && std::abs(sum - 1.0) < 1e-3;
    const float mx = *std::max_element(row, row + cols);
    double denom = 0;
    for (int64_t c = 0; c < cols; ++c) denom += std::exp(double(row[c]) - mx);

    std::vector<int64_t> order(static_cast<size_t>(cols));
    std::iota(order.begin(), order.end(), 0);
    const int64_t kk = std::min<int64_t>(std::max(k, 1), cols);
    std::partial_sort(order.begin(), order.begin() + kk, order.end(), [&](int64_t a, int64_t b) {
      return row[a] > row[b] || (row[a] == row[b] && a < b);
    });
    std::vector<Prediction> top;
    for (int64_t i = 0; i < kk; ++i) {
      const int64_t c = order[static_cast<size_t>(i)];
      const float prob = is_prob ? row[c] : float(std::exp(double(row[c]) - mx) / denom);
      top.push_back({c, row[c], prob});
    }
    result.push_back(std::move(top));
  }
  return result;
}

std::string classifier_output(const std::vector<std::string>& output_names) {
  for (const auto& n : output_names)
    if (n == "logits") return n;
  return output_names.empty() ? "" : output_names[0];
}

}  // namespace minfer::cli
