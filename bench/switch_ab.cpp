// A kernel switch measured in one process: two sessions of the same model, B planned with an
// environment variable set (MINFER_CPU_SMALL_PLANE=0, MINFER_CPU_WINOGRAD=0, ...), run in
// alternating rounds so that a cloud VM's drift between seconds hits both alike. Prints each
// session's median and the median of the per-round ratios B / A with its quartiles.
//
//   build/bench/switch_ab MODEL.onnx THREADS VAR VALUE [ROUNDS=12] [RUNS=5] [--at-run]
//
// The switch is read when a session runs its passes (at construction) or makes its plans (at
// its first run): it is set around both for B. A kernel that reads it on every run: --at-run
// then also sets it around B's runs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "minfer/minfer.h"

namespace {

// The median ms of `runs` runs, after one untimed run (the other session's threads may still
// be spinning).
double median_ms(const minfer::Session& session, const minfer::Tensor& x, int runs) {
  session.run_one(x);
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    session.run_one(x);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * double(v.size() - 1) + 0.5)];
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s MODEL.onnx THREADS VAR VALUE [ROUNDS] [RUNS] [--at-run]\n",
                 argv[0]);
    return 2;
  }
  const char* model = argv[1];
  const char* var = argv[3];
  const char* value = argv[4];
  const int rounds = argc > 5 ? std::atoi(argv[5]) : 12;
  const int runs = argc > 6 ? std::atoi(argv[6]) : 5;
  const bool at_run = argc > 7 && std::strcmp(argv[7], "--at-run") == 0;
  minfer::SessionOptions options;
  options.threads = std::atoi(argv[2]);
  minfer::Session a = minfer::Session::from_file(model, options);
  // One input of the model's shape (symbolic dimensions as 1), zeros.
  minfer::Shape shape;
  for (int64_t d : a.graph().inputs()[0]->shape.dims()) shape.dims().push_back(d > 0 ? d : 1);
  const minfer::Tensor x(minfer::DType::f32, shape);
  a.run_one(x);  // plans are made at a shape's first run
  setenv(var, value, 1);
  minfer::Session b = minfer::Session::from_file(model, options);
  b.run_one(x);
  unsetenv(var);
  std::vector<double> ta, tb, ratio;
  auto run_b = [&] {
    if (at_run) setenv(var, value, 1);
    const double ms = median_ms(b, x, runs);
    if (at_run) unsetenv(var);
    return ms;
  };
  for (int r = 0; r < rounds; ++r) {
    double ma, mb;
    if (r % 2) {
      mb = run_b();
      ma = median_ms(a, x, runs);
    } else {
      ma = median_ms(a, x, runs);
      mb = run_b();
    }
    ta.push_back(ma);
    tb.push_back(mb);
    ratio.push_back(mb / ma);
  }
  std::printf("%s, %s threads: A %.2f ms, B (%s=%s) %.2f ms; B / A %.3f (quartiles %.3f-%.3f, "
              "%d rounds of %d runs)\n",
              model, argv[2], quantile(ta, 0.5), var, value, quantile(tb, 0.5),
              quantile(ratio, 0.5), quantile(ratio, 0.25), quantile(ratio, 0.75), rounds, runs);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
