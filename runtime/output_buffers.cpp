#include "runtime/output_buffers.h"

#include <cstring>

namespace minfer {

// Reads who else holds a tensor's buffer (Tensor keeps it private).
struct TensorAccess {
  static bool sole_owner(const Tensor& t) { return t.storage_ && t.storage_.use_count() == 1; }
};

Tensor OutputBuffers::copy(size_t index, const Tensor& from) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (kept_.size() <= index) kept_.resize(index + 1);
  Tensor& kept = kept_[index];
  // (The count cannot rise behind our back: only this object holds the buffer then.)
  const bool reuse = kept.defined() && TensorAccess::sole_owner(kept) &&
                     kept.dtype() == from.dtype() && kept.shape() == from.shape();
  if (!reuse) {
    kept = Tensor();  // the old buffer goes first (a batch of another size)
    kept = from.clone();
  } else if (from.nbytes()) {
    std::memcpy(kept.raw(), from.raw(), from.nbytes());
    kept.quant = from.quant;
  }
  return kept;
}

size_t OutputBuffers::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t n = 0;
  for (const Tensor& t : kept_) n += t.nbytes();
  return n;
}

void OutputBuffers::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  kept_.clear();
}

}  // namespace minfer
