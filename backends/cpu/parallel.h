// OpenMP helpers for the CPU kernels: the only place with omp pragmas, so that the library
// still builds (serially) with MINFER_WITH_OPENMP=OFF.
#pragma once

#include <algorithm>
#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace minfer::cpu {

// Threads worth using for `work` units of cheap (memory-bound) work: small tensors are not
// worth waking a team for.
inline int threads_for(int64_t work, int threads, int64_t min_work_per_thread = 32768) {
  int64_t useful = std::max<int64_t>(1, work / std::max<int64_t>(1, min_work_per_thread));
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(threads, useful)));
}

// f(i) for i in [0, n), statically split over `threads` threads.
template <typename F>
void parallel_for(int threads, int64_t n, F&& f) {
  if (threads <= 1 || n <= 1) {
    for (int64_t i = 0; i < n; ++i) f(i);
    return;
  }
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static)
#endif
  for (int64_t i = 0; i < n; ++i) f(i);
}

// Runs f(thread_index, thread_count) once on each of up to `threads` threads.
template <typename F>
void parallel_region(int threads, F&& f) {
  if (threads <= 1) {
    f(0, 1);
    return;
  }
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
  f(omp_get_thread_num(), omp_get_num_threads());
#else
  f(0, 1);
#endif
}

// The [begin, end) share of part `i` of `n` items split into `parts` near-equal parts.
inline int64_t split_begin(int64_t n, int parts, int i) { return n * i / parts; }

}  // namespace minfer::cpu
