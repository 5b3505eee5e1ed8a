#include "backends/cpu/task_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#define MINFER_PAUSE() _mm_pause()
#else
#define MINFER_PAUSE() std::this_thread::yield()
#endif

namespace minfer::cpu {

namespace {

// Workers spin this many pauses (tens of microseconds) before sleeping, so that the next
// parallel loop of the same run finds them awake.
constexpr int kSpinPauses = 1 << 12;

struct Job {
  void (*fn)(void*, int64_t) = nullptr;
  void* ctx = nullptr;
  int64_t n = 0;
  std::atomic<int64_t> next{0};  // next unclaimed task
  std::atomic<int64_t> done{0};  // tasks finished
  std::atomic<int> seats{0};     // workers that may still join
};

// Claims and runs tasks until none is left.
void work(Job& job) {
  for (int64_t i; (i = job.next.fetch_add(1, std::memory_order_relaxed)) < job.n;) {
    job.fn(job.ctx, i);
    job.done.fetch_add(1, std::memory_order_release);
  }
}

class Pool {
 public:
  // Never destroyed: its detached workers sleep until the process exits.
  static Pool& get() {
    static Pool* pool = new Pool;
    return *pool;
  }

  void run(int threads, int64_t n, void (*fn)(void*, int64_t), void* ctx) {
    bool expected = false;
    if (!busy_.compare_exchange_strong(expected, true, std::memory_order_acquire)) {
      for (int64_t i = 0; i < n; ++i) fn(ctx, i);  // nested or concurrent: inline
      return;
    }
    auto job = std::make_shared<Job>();
    job->fn = fn;
    job->ctx = ctx;
    job->n = n;
    job->seats.store(static_cast<int>(std::min<int64_t>(threads, n)) - 1);
    grow(threads - 1);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      current_ = job;
      epoch_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    work(*job);
    for (int spins = 0; job->done.load(std::memory_order_acquire) < n; ++spins) {
      if (spins < kSpinPauses)
        MINFER_PAUSE();
      else
        std::this_thread::yield();  // a worker holds a task but not a core
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      current_.reset();
    }
    busy_.store(false, std::memory_order_release);
  }

 private:
  void grow(int helpers) {
    while (static_cast<int>(started_) < helpers) {
      std::thread([this] { loop(); }).detach();
      ++started_;
    }
  }

  void loop() {
    uint64_t seen = epoch_.load(std::memory_order_acquire);
    for (;;) {
      for (int i = 0; i < kSpinPauses && epoch_.load(std::memory_order_acquire) == seen; ++i)
        MINFER_PAUSE();
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return epoch_.load(std::memory_order_acquire) != seen; });
        seen = epoch_.load(std::memory_order_acquire);
        job = current_;
      }
      if (job && job->seats.fetch_sub(1, std::memory_order_relaxed) > 0) work(*job);
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::atomic<uint64_t> epoch_{0};
  std::shared_ptr<Job> current_;  // guarded by mutex_
  std::atomic<bool> busy_{false};
  unsigned started_ = 0;  // only touched by the holder of busy_
};

}  // namespace

void run_tasks(int threads, int64_t n, void (*fn)(void* ctx, int64_t i), void* ctx) {
  if (n <= 0) return;
  if (threads <= 1 || n == 1) {
    for (int64_t i = 0; i < n; ++i) fn(ctx, i);
    return;
  }
  Pool::get().run(threads, n, fn, ctx);
}

}  // namespace minfer::cpu
