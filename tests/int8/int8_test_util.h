// Helpers for the int8 tests: random int8 tensors and running one op's reference kernel.
#pragma once

#include <string>
#include <vector>

#include "test_util.h"

namespace minfer::test {

inline Tensor random_i8(Shape shape, std::mt19937& rng, int lo = -128, int hi = 127) {
  Tensor t(DType::i8, std::move(shape));
  std::uniform_int_distribution<int> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int8_t>()[i] = static_cast<int8_t>(d(rng));
  return t;
}

inline Tensor random_i32(Shape shape, std::mt19937& rng, int lo, int hi) {
  Tensor t(DType::i32, std::move(shape));
  std::uniform_int_distribution<int> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int32_t>()[i] = d(rng);
  return t;
}

// Runs the reference kernel of `op` on `inputs` (undefined tensors = absent inputs).
inline std::vector<Tensor> run_ref(const std::string& op, const std::string& domain,
                                   const std::vector<Tensor>& inputs, const Attributes& a,
                                   size_t outputs = 1) {
  Graph g;
  std::vector<Value*> vs;
  for (size_t i = 0; i < inputs.size(); ++i)
    vs.push_back(inputs[i].defined() ? g.add_constant("in" + std::to_string(i), inputs[i])
                                     : nullptr);
  Node* n = g.add_node(op, "node", vs, outputs, a, domain);
  return OpRegistry::global().get_op(domain, op).reference(*n, inputs);
}

// Number of elements where two int8 tensors differ, and the largest difference.
struct Int8Diff {
  int64_t count = 0;
  int max = 0;
};
inline Int8Diff int8_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  Int8Diff d;
  for (int64_t i = 0; i < a.numel(); ++i) {
    int v = std::abs(int(a.data<int8_t>()[i]) - int(b.data<int8_t>()[i]));
    d.count += v != 0;
    d.max = std::max(d.max, v);
  }
  return d;
}

}  // namespace minfer::test
