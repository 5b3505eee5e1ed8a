#include "runtime/output_buffers.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "minfer/error.h"

namespace minfer {

// Builds a tensor around a buffer it shares (Tensor keeps its storage private).
struct TensorAccess {
  static Tensor wrap(std::shared_ptr<void> storage, const Tensor& like) {
    Tensor t;
    t.dtype_ = like.dtype_;
    t.dtype_set_ = true;
    t.shape_ = like.shape_;
    t.numel_ = like.numel_;
    t.data_ = storage.get();
    t.storage_ = std::move(storage);
    t.quant = like.quant;
    return t;
  }
};

OutputBuffers::OutputBuffers() : shelf_(std::make_shared<Shelf>()) {}

Tensor OutputBuffers::copy(size_t index, const Tensor& from) {
  check(from.device().is_cpu(), ErrorCode::Internal, "OutputBuffers::copy: not a CPU tensor");
  const size_t bytes = from.nbytes();
  std::shared_ptr<void> memory;
  {
    std::lock_guard<std::mutex> lock(shelf_->mutex);
    if (shelf_->kept.size() <= index) shelf_->kept.resize(index + 1);
    Kept& k = shelf_->kept[index];
    if (!k.memory || k.lent || k.bytes != bytes) {
      k = Kept();  // the old buffer goes first where it is back (a batch of another size)
      void* p = ::operator new(std::max<size_t>(bytes, 1), std::align_val_t(64), std::nothrow);
      if (!p)
        throw Error(ErrorCode::OutOfMemory,
                    "cannot allocate " + std::to_string(bytes) + " bytes for an output");
      k.memory =
          std::shared_ptr<void>(p, [](void* q) { ::operator delete(q, std::align_val_t(64)); });
      k.bytes = bytes;
    }
    k.lent = true;
    memory = k.memory;
  }
  if (bytes) std::memcpy(memory.get(), from.raw(), bytes);
  // The caller's tensors share `lent`; the last one dropped marks the buffer back, if the shelf
  // still keeps it.
  void* const data = memory.get();
  std::shared_ptr<void> lent(data, [weak = std::weak_ptr<Shelf>(shelf_), index, memory](void*) {
    if (std::shared_ptr<Shelf> shelf = weak.lock()) {
      std::lock_guard<std::mutex> lock(shelf->mutex);
      if (index < shelf->kept.size() && shelf->kept[index].memory == memory)
        shelf->kept[index].lent = false;
    }
  });
  return TensorAccess::wrap(std::move(lent), from);
}

size_t OutputBuffers::bytes() const {
  std::lock_guard<std::mutex> lock(shelf_->mutex);
  size_t n = 0;
  for (const Kept& k : shelf_->kept) n += k.bytes;
  return n;
}

void OutputBuffers::clear() {
  std::lock_guard<std::mutex> lock(shelf_->mutex);
  shelf_->kept.clear();
}

}  // namespace minfer
