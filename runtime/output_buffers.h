// The host buffers of the outputs that Session::run returned, kept for the next run: a run
// copies its outputs into them again once the caller has dropped every tensor sharing one.
// A new buffer per run would cost a page fault per 4 KB wherever the allocator hands large
// blocks back to the system between runs (glibc: blocks above its mmap threshold, or a freed
// heap top past its trim threshold): an output of 800 KB took 0.3 ms a run that way on a Zen 5,
// two thirds of the time of the 1x1 conv that made it.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "minfer/tensor.h"

namespace minfer {

class OutputBuffers {
 public:
  OutputBuffers();

  // A copy of `from` (a CPU tensor) as graph output `index`: in the buffer kept for that output
  // when it is back (the tensors lent with it dropped) and has from's size, else in a new buffer,
  // kept in its place. A caller's tensor is never written again while it holds it.
  Tensor copy(size_t index, const Tensor& from);
  size_t bytes() const;  // the buffers kept, lent or back
  void clear();          // forgets them (those lent stay the callers' until dropped)

 private:
  struct Kept {
    std::shared_ptr<void> memory;
    size_t bytes = 0;
    bool lent = false;
  };
  // Shared with the lent tensors' deleters, which mark their buffer back (the mutex orders the
  // caller's last reads before the next run's writes) and may outlive the session.
  struct Shelf {
    std::mutex mutex;
    std::vector<Kept> kept;  // one per graph output index
  };
  std::shared_ptr<Shelf> shelf_;
};

}  // namespace minfer
