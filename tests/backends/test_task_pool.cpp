// The CPU task pool (backends/cpu/task_pool.h) under concurrent callers: every task runs
// exactly once and the call returns only when all have, whether the pool is free, busy with
// another thread's loop, or called from inside a task. CI runs these under ThreadSanitizer
// (scripts/check-sanitizers.sh, tag [concurrency]).
#include <atomic>
#include <thread>
#include <vector>

#include "backends/cpu/parallel.h"
#include "test_util.h"

namespace minfer::test {
namespace {

// Each of n slots written once by a parallel_for over `threads`; returns the sum.
int64_t parallel_sum(int threads, int64_t n) {
  std::vector<int64_t> slots(size_t(n), 0);
  cpu::parallel_for(threads, n, [&](int64_t i) { slots[size_t(i)] += i + 1; });
  int64_t sum = 0;
  for (int64_t v : slots) sum += v;
  return sum;
}

TEST_CASE("task pool: concurrent loops each run every task once", "[cpu][concurrency]") {
  constexpr int kCallers = 4, kRounds = 50;
  std::atomic<int> wrong{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c)
    callers.emplace_back([&, c] {
      for (int r = 0; r < kRounds; ++r) {
        const int64_t n = 1 + (c * 37 + r * 11) % 500;
        if (parallel_sum(2 + (c + r) % 3, n) != n * (n + 1) / 2) ++wrong;
      }
    });
  for (std::thread& t : callers) t.join();
  CHECK(wrong == 0);
}

TEST_CASE("task pool: a loop inside a task runs on its thread", "[cpu][concurrency]") {
  std::vector<int64_t> inner(8, 0);
  cpu::parallel_for(4, 8, [&](int64_t i) { inner[size_t(i)] = parallel_sum(4, 100 + i); });
  for (int64_t i = 0; i < 8; ++i) CHECK(inner[size_t(i)] == (100 + i) * (101 + i) / 2);
}

TEST_CASE("parallel_for's chunks: larger first, sizes one apart, covering every item",
          "[cpu][concurrency]") {
  // Claimed in turn by equally fast threads, such chunks share the items evenly.
  for (int64_t n = 1; n <= 70; ++n)
    for (int64_t chunks = 1; chunks <= n; ++chunks) {
      INFO(n << " items in " << chunks << " chunks");
      CHECK(cpu::chunk_begin(n, chunks, 0) == 0);
      CHECK(cpu::chunk_begin(n, chunks, chunks) == n);
      const int64_t first = cpu::chunk_begin(n, chunks, 1);
      for (int64_t c = 0; c < chunks; ++c) {
        const int64_t size = cpu::chunk_begin(n, chunks, c + 1) - cpu::chunk_begin(n, chunks, c);
        CHECK((size == first || size == first - 1));
        if (c > 0)
          CHECK(size <= cpu::chunk_begin(n, chunks, c) - cpu::chunk_begin(n, chunks, c - 1));
      }
    }
}

}  // namespace
}  // namespace minfer::test
