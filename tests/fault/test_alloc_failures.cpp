// Every allocation along a ResNet run fails in turn: each failure must come out as
// Error(OutOfMemory), free what the run had allocated, and leave the session usable.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "fault/failing_allocator.h"
#include "minfer/minfer.h"
#include "runtime/buffer_pool.h"

using namespace minfer;
using namespace minfer::test;

TEST_CASE("fault: the N-th allocation of a ResNet run fails, for every N", "[fault]") {
  BufferPool::use_operator_new(true);  // run arenas fail too
  SessionOptions o;
  o.threads = 1;  // failures only on this thread, in a fixed order
  Session s(build_model("cifar-resnet20"), o);
  Tensor x(DType::f32, Shape{2, 3, 32, 32});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = float(i % 17) / 17.f - 0.5f;
  const Tensor expected = s.run_one(x);  // also sets up what lives for the whole program
  s.trim();
  s.run_one(x);
  s.trim();
  const long baseline = live_allocations();
  const long before = allocations_on_this_thread();
  s.run_one(x);  // plan (weights packed), run, copy out
  const long per_run = allocations_on_this_thread() - before;
  s.trim();
  REQUIRE(live_allocations() == baseline);
  REQUIRE(per_run > 100);  // planning, packing and running: not a trivial path

  std::vector<long> survived;  // runs that succeeded although an allocation failed
  for (long n = 1; n <= per_run; ++n) {
    INFO("allocation " << n << " of " << per_run << " fails");
    const long live_before = live_allocations();  // (Catch's own bookkeeping included)
    bool out_of_memory = false, other_error = false;
    fail_allocation(n);
    try {
      s.run_one(x);
    } catch (const Error& e) {
      (e.code() == ErrorCode::OutOfMemory ? out_of_memory : other_error) = true;
    }
    const bool nothrow = failed_allocation_was_nothrow();
    fail_allocation(0);
    s.trim();
    REQUIRE(live_allocations() == live_before);  // nothing leaked
    REQUIRE_FALSE(other_error);
    // A run may succeed only where the failed allocation was a nothrow one that its caller
    // does without (std::stable_sort's scratch buffer in the memory planner).
    if (!out_of_memory && !nothrow) survived.push_back(n);
    const Tensor y = s.run_one(x);  // and the session still works
    REQUIRE(y.nbytes() == expected.nbytes());
    REQUIRE(std::memcmp(y.raw(), expected.raw(), y.nbytes()) == 0);
    s.trim();
  }
  std::string list;
  for (long n : survived) list += " " + std::to_string(n);
  INFO("runs that succeeded although their allocation failed:" << list);
  CHECK(survived.empty());  // every failure was reported
}
