#include "runtime/buffer_pool.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <new>
#include <string>

#include "minfer/error.h"
#include "runtime/memory_budget.h"

namespace minfer {

namespace {
constexpr std::align_val_t kAlign{64};
std::atomic<bool> g_operator_new{false};
}

void BufferPool::use_operator_new(bool on) { g_operator_new = on; }

BufferPool::~BufferPool() {
  for (Buffer b : idle_) free_buffer(b);
}

void BufferPool::free_buffer(Buffer b) {
  if (g_operator_new)
    ::operator delete(b.data, kAlign);
  else
    munmap(b.data, b.bytes);
}

BufferPool::Buffer BufferPool::acquire(size_t bytes) {
  bytes = std::max<size_t>((bytes + 63) / 64 * 64, 64);
  std::vector<Buffer> too_small;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto best = idle_.end();
    for (auto it = idle_.begin(); it != idle_.end(); ++it)
      if (it->bytes >= bytes && (best == idle_.end() || it->bytes < best->bytes)) best = it;
    if (best != idle_.end()) {
      Buffer b = *best;
      idle_.erase(best);
      ++in_use_;
      return b;
    }
    too_small = idle_;  // a copy: idle_ keeps its capacity for release()
    idle_.clear();
    for (const Buffer& b : too_small) held_ -= b.bytes;
  }
  for (Buffer b : too_small) free_buffer(b);
  Buffer b;
  try {
    {  // room for every buffer to come back, so that release() never allocates
      std::lock_guard<std::mutex> lock(mutex_);
      idle_.reserve(idle_.size() + in_use_ + 1);
    }
    if (g_operator_new) {
      b.data = ::operator new(bytes, kAlign);
    } else {
      void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      b.data = p;  // page-aligned, zero-filled as the kernel lends pages
    }
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::OutOfMemory,
                "cannot allocate a working buffer of " + memory_size(bytes) + " for a run");
  }
  b.bytes = bytes;
  std::lock_guard<std::mutex> lock(mutex_);
  held_ += bytes;
  ++in_use_;
  return b;
}

void BufferPool::release(Buffer buffer) {
  if (!buffer.data) return;
  std::lock_guard<std::mutex> lock(mutex_);
  --in_use_;
  idle_.push_back(buffer);  // never reallocates: acquire() reserved room for it
}

size_t BufferPool::trim() {
  std::vector<Buffer> freed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    freed = idle_;
    idle_.clear();
    for (const Buffer& b : freed) held_ -= b.bytes;
  }
  size_t bytes = 0;
  for (Buffer b : freed) {
    bytes += b.bytes;
    free_buffer(b);
  }
  return bytes;
}

size_t BufferPool::idle_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t total = 0;
  for (const Buffer& b : idle_) total += b.bytes;
  return total;
}

size_t BufferPool::held_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return held_;
}

}  // namespace minfer
