// Static memory planning: give every intermediate tensor an offset in one arena so that
// tensors whose lifetimes overlap never share bytes, and the arena stays small.
#pragma once

#include <cstddef>
#include <vector>

namespace minfer {

struct BufferRequest {
  size_t bytes = 0;
  int first_step = 0;  // written by this step
  int last_step = 0;   // last read by this step (inclusive)
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // one per request, each a multiple of kArenaAlignment
  size_t arena_bytes = 0;
  size_t naive_bytes = 0;  // sum of all requests (what allocating each separately costs)
};

inline constexpr size_t kArenaAlignment = 64;

// Greedy best-fit by decreasing size (as in TFLite's arena planner): each buffer goes at the
// lowest offset where it overlaps no already-placed buffer that is live at the same time.
MemoryPlan plan_memory(const std::vector<BufferRequest>& requests);

}  // namespace minfer
