// A small pool of worker threads for the CPU kernels' parallel loops (parallel.h).
//
// The caller and the workers claim task indices from a shared counter, and the call returns
// as soon as every task has run: a worker that the OS has not scheduled yet is not waited
// for (the caller runs its share instead). OpenMP's fork-join waits at every region's barrier
// for every thread of the team, which on a busy machine costs a scheduler time slice per
// region whenever one thread is descheduled (docs/performance.md measured 2-thread runs 10x
// slower than 1-thread ones at a load average of 5).
#pragma once

#include <cstdint>

namespace minfer::cpu {

// Runs fn(ctx, i) for every i in [0, n) on up to `threads` threads (the caller included),
// and returns when all have run. A call made while the pool is busy (another session's run,
// or from inside a task) runs its tasks on the calling thread.
void run_tasks(int threads, int64_t n, void (*fn)(void* ctx, int64_t i), void* ctx);

}  // namespace minfer::cpu
