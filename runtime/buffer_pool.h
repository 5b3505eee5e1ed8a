// Host working buffers (the arenas of runs), shared by the plans of a session: a run takes
// the smallest idle buffer that fits and gives it back when done, so runs of different input
// shapes one after the other reuse one buffer instead of each plan keeping its own.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

namespace minfer {

class BufferPool {
 public:
  struct Buffer {
    void* data = nullptr;
    size_t bytes = 0;
  };
  BufferPool() = default;
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  ~BufferPool();

  // At least `bytes` (64-byte aligned). Idle buffers too small for it are freed first, so that
  // growing shapes do not pile up buffers. Throws Error(OutOfMemory).
  Buffer acquire(size_t bytes);
  void release(Buffer buffer);  // back to the idle list
  size_t trim();                // frees the idle buffers; returns their bytes
  size_t idle_bytes() const;
  size_t held_bytes() const;    // idle and in use

  // Buffers come from mmap, not malloc: freeing a large malloc'd block raises glibc's
  // threshold for using mmap, after which the caller's own tensors of growing sizes pile up
  // in the heap (ResNet-50 at batches 1..8: 13 MB more). Tests that make operator new fail
  // switch to it here, so that the arenas fail too. Set before any buffer is allocated.
  static void use_operator_new(bool on);

 private:
  static void free_buffer(Buffer b);
  mutable std::mutex mutex_;
  std::vector<Buffer> idle_;
  size_t held_ = 0, in_use_ = 0;
};

}  // namespace minfer
