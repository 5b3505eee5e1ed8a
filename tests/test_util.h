// Shared helpers for the tests: random tensors, data paths, comparisons.
#pragma once

#include <catch2/catch.hpp>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>

#include "minfer/minfer.h"

namespace minfer::test {

// Nodes per op type: what the passes made of a graph.
inline std::map<std::string, int> op_histogram(const Graph& g) {
  std::map<std::string, int> h;
  for (const Node* n : g.nodes()) ++h[n->op_type];
  return h;
}

// The shared data folder (../shared/data next to the project, or $MINFER_DATA). A test that
// needs it stops with this message when it is missing, and CTest reports it as skipped
// (tests/CMakeLists.txt matches the message): never passed, and a fresh clone without the
// data still runs every other test. CI has the data and requires it (.ci/run).
inline std::filesystem::path data_dir() {
  const char* env = std::getenv("MINFER_DATA");
  const auto p = env ? std::filesystem::path(env)
                     : std::filesystem::path(MINFER_SOURCE_DIR) / ".." / "shared" / "data";
  INFO("test data not found at " << p.string() << " (set MINFER_DATA)");
  REQUIRE(std::filesystem::exists(p));
  return std::filesystem::canonical(p);
}

// A fresh temporary directory for one test. The process id keeps test processes that
// CTest runs in parallel out of each other's way; tests/main.cpp removes them at exit.
inline std::filesystem::path temp_dir(const std::string& name) {
  auto p = std::filesystem::temp_directory_path() /
           ("minfer_test_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p;
}

inline Tensor random_tensor(Shape shape, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  Tensor t(DType::f32, std::move(shape));
  std::uniform_real_distribution<float> dist(lo, hi);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  return t;
}

// Largest |a-b| / (atol + rtol*|b|) over all elements: <= 1 means "close".
inline double max_violation(const Tensor& a, const Tensor& b, double rtol, double atol) {
  REQUIRE(a.shape() == b.shape());
  const float* x = a.data<float>();
  const float* y = b.data<float>();
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double v = std::abs(double(x[i]) - double(y[i])) / (atol + rtol * std::abs(double(y[i])));
    if (!(v <= worst)) worst = std::isnan(v) ? INFINITY : v;
  }
  return worst;
}

inline void require_close(const Tensor& a, const Tensor& b, double rtol = 1e-4,
                          double atol = 1e-5) {
  INFO("shape " << a.shape().to_string());
  REQUIRE(max_violation(a, b, rtol, atol) <= 1.0);
}

// Bit-for-bit equality (int8 paths, and rewrites that must not change the math).
inline void require_equal(const Tensor& a, const Tensor& b) {
  REQUIRE(a.dtype() == b.dtype());
  REQUIRE(a.shape() == b.shape());
  REQUIRE(std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
}

// Sets an environment variable for the object's lifetime (kernels read MINFER_ISA,
// MINFER_CPU_WINOGRAD, MINFER_IGEMM_PLAN at prepare; CLI children inherit it), then restores
// what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_.empty())
      ::unsetenv(name_);
    else
      ::setenv(name_, old_.c_str(), 1);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
};

}  // namespace minfer::test
