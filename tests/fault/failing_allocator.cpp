// A global operator new that fails on request: this binary's every C++ allocation (minfer's
// host memory included: tensors, arenas, packed weights) goes through it.
#include "fault/failing_allocator.h"

#include <execinfo.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace minfer::test {
namespace {
std::atomic<long> g_live{0};
thread_local long t_countdown = 0;  // > 0: the allocation that brings it to 0 fails
thread_local long t_count = 0;
thread_local bool t_failed_nothrow = false;

bool fail_now() {
  ++t_count;
  if (!(t_countdown > 0 && --t_countdown == 0)) return false;
  if (std::getenv("MINFER_FAULT_TRACE")) {  // where the failing allocation comes from
    void* frames[32];
    backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
  }
  return true;
}

void* allocate(size_t n, size_t align, bool nothrow) {
  if (fail_now()) {
    t_failed_nothrow = nothrow;
    if (nothrow) return nullptr;
    throw std::bad_alloc();
  }
  if (n == 0) n = 1;
  void* p = align <= alignof(std::max_align_t)
                ? std::malloc(n)
                : std::aligned_alloc(align, (n + align - 1) / align * align);
  if (!p) {
    if (nothrow) return nullptr;
    throw std::bad_alloc();
  }
  g_live.fetch_add(1, std::memory_order_relaxed);
  return p;
}

void release(void* p) {
  if (!p) return;
  g_live.fetch_sub(1, std::memory_order_relaxed);
  std::free(p);
}
}  // namespace

void fail_allocation(long n) {
  t_countdown = n;
  t_failed_nothrow = false;
}
bool failed_allocation_was_nothrow() { return t_failed_nothrow; }
long allocations_on_this_thread() { return t_count; }
long live_allocations() { return g_live.load(); }

}  // namespace minfer::test

using minfer::test::allocate;
using minfer::test::release;
constexpr size_t kDefault = alignof(std::max_align_t);

void* operator new(size_t n) { return allocate(n, kDefault, false); }
void* operator new[](size_t n) { return allocate(n, kDefault, false); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return allocate(n, kDefault, true); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept {
  return allocate(n, kDefault, true);
}
void* operator new(size_t n, std::align_val_t a) { return allocate(n, size_t(a), false); }
void* operator new[](size_t n, std::align_val_t a) { return allocate(n, size_t(a), false); }
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, size_t(a), true);
}
void* operator new[](size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, size_t(a), true);
}
void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, size_t) noexcept { release(p); }
void operator delete[](void* p, size_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
