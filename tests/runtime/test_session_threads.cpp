// Several threads running one int8 and one fp32 convolutional Session at once, each run on
// two threads of the CPU task pool: every run equals the same run made alone. CI runs the
// [concurrency] tests under ThreadSanitizer (scripts/check-sanitizers.sh).
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "minfer/calibrate.h"
#include "minfer/models.h"
#include "test_util.h"

namespace minfer::test {
namespace {

TEST_CASE("session: threads running int8 and fp32 convnets at once, two threads each",
          "[session][concurrency]") {
  std::mt19937 rng(8);
  std::vector<Tensor> xs;
  for (int i = 0; i < 3; ++i) xs.push_back(random_tensor(Shape{1, 3, 32, 32}, rng, -2.f, 2.f));
  Graph fp32 = build_model("cifar-resnet20");
  Graph int8 = clone_graph(fp32);
  CalibrationOptions co;
  co.progress = false;
  Calibrator cal(int8, co);
  cal.add(xs[0]);
  quantize_graph(int8, cal.table(CalibrationMethod::minmax));
  SessionOptions two;
  two.threads = 2;
  Session sessions[2] = {Session(std::move(fp32), two), Session(std::move(int8), two)};
  std::vector<Tensor> want[2];
  for (int s = 0; s < 2; ++s)
    for (const Tensor& x : xs) want[s].push_back(sessions[s].run_one(x));
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 3; ++rep) {
        const int s = (t + rep) % 2, i = (t + rep) % 3;
        const Tensor y = sessions[s].run_one(xs[size_t(i)]);
        if (y.nbytes() != want[s][size_t(i)].nbytes() ||
            std::memcmp(y.raw(), want[s][size_t(i)].raw(), y.nbytes()) != 0)
          ++mismatches;
      }
    });
  for (std::thread& th : threads) th.join();
  CHECK(mismatches == 0);
}

}  // namespace
}  // namespace minfer::test
