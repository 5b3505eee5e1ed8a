// The host buffers of the outputs that Session::run returned, kept for the next run: a run
// copies its outputs into them again once the caller has dropped every tensor sharing one.
// A new buffer per run would cost a page fault per 4 KB wherever the allocator hands large
// blocks back to the system between runs (glibc: blocks above its mmap threshold, or a freed
// heap top past its trim threshold): an output of 800 KB took 0.3 ms a run that way on a Zen 5,
// two thirds of the time of the 1x1 conv that made it.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include "minfer/tensor.h"

namespace minfer {

class OutputBuffers {
 public:
  // A copy of `from` (a CPU tensor) as graph output `index`: in the buffer kept for that output
  // when nothing else shares it and it has from's dtype and shape, else in a new buffer, kept
  // in its place. A caller's tensor is never written again once returned while it holds it.
  Tensor copy(size_t index, const Tensor& from);
  size_t bytes() const;  // the buffers kept, shared with callers or not
  void clear();          // forgets them (those the callers still hold stay theirs)

 private:
  mutable std::mutex mutex_;
  std::vector<Tensor> kept_;  // one per graph output index (undefined: none yet)
};

}  // namespace minfer
