// Parallel loops for the CPU kernels, on the task pool (task_pool.h): the caller and the pool's
// workers claim pieces of the loop, so a thread the OS has not scheduled delays nobody.
#pragma once

#include <algorithm>
#include <cstdint>

#include "backends/cpu/task_pool.h"

namespace minfer::cpu {

// Threads worth using for `work` units of cheap (memory-bound) work: small tensors are not
// worth waking a team for.
inline int threads_for(int64_t work, int threads, int64_t min_work_per_thread = 32768) {
  int64_t useful = std::max<int64_t>(1, work / std::max<int64_t>(1, min_work_per_thread));
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, useful)));
}

namespace detail {
template <typename F>
void call_task(void* f, int64_t i) {
  (*static_cast<F*>(f))(i);
}
}  // namespace detail

// Where chunk c of n items in `chunks` starts: the larger chunks first, so that claimed in turn
// they share n as evenly as it goes (10 items in 8 chunks as 2, 2, 1, ...: 5 and 5 on 2
// threads; the sizes 1, 1, 2, 1, 1, 1, 2, 1 gave one thread 6, and EfficientNet-B0's 7x7
// projections took 1.2x longer).
inline int64_t chunk_begin(int64_t n, int64_t chunks, int64_t c) {
  return c * (n / chunks) + std::min(c, n % chunks);
}

// f(i) for i in [0, n), in contiguous chunks (a few per thread, so that a late thread's
// share is small) over up to `threads` threads.
template <typename F>
void parallel_for(int threads, int64_t n, F&& f) {
  if (threads <= 1 || n <= 1) {
    for (int64_t i = 0; i < n; ++i) f(i);
    return;
  }
  const int64_t chunks = std::min<int64_t>(n, int64_t{4} * threads);
  auto chunk = [&](int64_t c) {
    for (int64_t i = chunk_begin(n, chunks, c), end = chunk_begin(n, chunks, c + 1); i < end; ++i)
      f(i);
  };
  run_tasks(threads, chunks, detail::call_task<decltype(chunk)>, &chunk);
}

// Runs f(part, threads) once for each part in [0, threads), each part on one thread at a
// time (the parts may share threads: a part's index, not the thread, owns its scratch).
template <typename F>
void parallel_region(int threads, F&& f) {
  if (threads <= 1) {
    f(0, 1);
    return;
  }
  auto part = [&](int64_t i) { f(static_cast<int>(i), threads); };
  run_tasks(threads, threads, detail::call_task<decltype(part)>, &part);
}

// Integer helpers of the work splits and tile sizes.
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }
inline int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -ceil_div(-a, b); }

// The [begin, end) share of part `i` of `n` items split into `parts` near-equal parts.
inline int64_t split_begin(int64_t n, int parts, int i) { return n * i / parts; }

// The same with every boundary but the last rounded down to a multiple of `align` (a
// micro-kernel's rows or columns), so that only the last part has a partial tile.
inline int64_t aligned_split_begin(int64_t n, int64_t parts, int64_t i, int64_t align) {
  return i >= parts ? n : n * i / parts / align * align;
}

}  // namespace minfer::cpu
