#include "runtime/memory_planner.h"

#include <algorithm>
#include <cstdint>
#include <numeric>

namespace minfer {

namespace {
size_t align_up(size_t n) { return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }
bool lifetimes_overlap(const BufferRequest& a, const BufferRequest& b) {
  return a.first_step <= b.last_step && b.first_step <= a.last_step;
}
}  // namespace

MemoryPlan plan_memory(const std::vector<BufferRequest>& requests) {
  MemoryPlan plan;
  plan.offsets.assign(requests.size(), 0);
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return requests[a].bytes > requests[b].bytes;
  });

  std::vector<size_t> placed;  // indices already given an offset, sorted by offset
  for (size_t idx : order) {
    const BufferRequest& r = requests[idx];
    size_t size = align_up(r.bytes);
    plan.naive_bytes += size;
    if (size == 0) continue;
    // Walk the live neighbours in offset order and take the first gap that fits.
    size_t offset = 0, best = SIZE_MAX, best_gap = SIZE_MAX;
    for (size_t p : placed) {
      if (!lifetimes_overlap(r, requests[p])) continue;
      size_t p_begin = plan.offsets[p], p_end = p_begin + align_up(requests[p].bytes);
      if (p_begin >= offset + size && p_begin - offset < best_gap) {
        best = offset;
        best_gap = p_begin - offset;
      }
      offset = std::max(offset, p_end);
    }
    if (best == SIZE_MAX) best = offset;
    plan.offsets[idx] = best;
    plan.arena_bytes = std::max(plan.arena_bytes, best + size);
    placed.insert(std::upper_bound(placed.begin(), placed.end(), idx,
                                   [&](size_t a, size_t b) {
                                     return plan.offsets[a] < plan.offsets[b];
                                   }),
                  idx);
  }
  return plan;
}

}  // namespace minfer
