#include <catch2/catch.hpp>

#include <random>

#include "runtime/memory_planner.h"

using namespace minfer;

namespace {
void require_no_overlap(const std::vector<BufferRequest>& reqs, const MemoryPlan& plan) {
  for (size_t i = 0; i < reqs.size(); ++i) {
    REQUIRE(plan.offsets[i] % kArenaAlignment == 0);
    REQUIRE(plan.offsets[i] + reqs[i].bytes <= plan.arena_bytes);
    for (size_t j = i + 1; j < reqs.size(); ++j) {
      bool live_together =
          reqs[i].first_step <= reqs[j].last_step && reqs[j].first_step <= reqs[i].last_step;
      bool bytes_overlap = plan.offsets[i] < plan.offsets[j] + reqs[j].bytes &&
                           plan.offsets[j] < plan.offsets[i] + reqs[i].bytes;
      INFO("buffers " << i << " and " << j);
      REQUIRE(!(live_together && bytes_overlap && reqs[i].bytes && reqs[j].bytes));
    }
  }
}
}  // namespace

TEST_CASE("memory planner reuses memory of a chain", "[planner]") {
  // A chain a->b->c->d: each buffer dies when the next is made, so two slots suffice.
  std::vector<BufferRequest> reqs{{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
  MemoryPlan plan = plan_memory(reqs);
  require_no_overlap(reqs, plan);
  REQUIRE(plan.arena_bytes == 2 * 1024);
  REQUIRE(plan.naive_bytes == 4 * 1024);
}

TEST_CASE("memory planner never overlaps live buffers (random)", "[planner]") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<BufferRequest> reqs;
    int n = 1 + rng() % 40;
    for (int i = 0; i < n; ++i) {
      int first = rng() % 30;
      reqs.push_back({size_t(rng() % 5000), first, first + int(rng() % 8)});
    }
    MemoryPlan plan = plan_memory(reqs);
    require_no_overlap(reqs, plan);
    REQUIRE(plan.arena_bytes <= plan.naive_bytes);
  }
}
