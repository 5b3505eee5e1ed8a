// Control of the failing operator new of the fault-injection test binary.
#pragma once

namespace minfer::test {
// The n-th C++ allocation from now on this thread fails (std::bad_alloc, or null for the
// nothrow forms); 0 disarms.
void fail_allocation(long n);
// The allocation that failed was a nothrow one (std::nothrow): its caller may do without.
bool failed_allocation_was_nothrow();
long allocations_on_this_thread();  // since the program started
long live_allocations();            // all threads: allocated and not yet freed
}  // namespace minfer::test
