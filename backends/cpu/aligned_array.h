// A kernel's constant table (weights packed at plan time) on 64-byte boundaries, so that its
// vector loads never straddle two cache lines (a std::vector's 16-byte alignment made the int8
// depthwise group tiles, which read their weights as whole vectors, 1.35-1.5x slower; Zen 5).
#pragma once

#include <cstddef>
#include <memory>
#include <new>

namespace minfer::cpu {

template <typename T>
class AlignedArray {
 public:
  AlignedArray() = default;
  // n values of `fill`.
  explicit AlignedArray(size_t n, T fill = T{}) : AlignedArray(uninitialized(n)) {
    for (size_t i = 0; i < n; ++i) data_[i] = fill;
  }
  // n values for the caller to write, every one of them (weights packed once: no fill pass).
  static AlignedArray uninitialized(size_t n) {
    AlignedArray a;
    a.size_ = n;
    a.data_.reset(static_cast<T*>(::operator new[](n * sizeof(T), kAlign)));
    return a;
  }

  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  size_t size() const { return size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  static constexpr std::align_val_t kAlign{64};
  struct Free {
    void operator()(T* p) const { ::operator delete[](p, kAlign); }
  };
  size_t size_ = 0;
  std::unique_ptr<T[], Free> data_;
};

}  // namespace minfer::cpu
