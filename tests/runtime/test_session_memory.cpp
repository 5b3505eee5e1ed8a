// Memory a Session holds: weights packed once for every plan, the LRU plan cache, the outputs'
// buffers kept for reuse, trim(), and the memory limit refusing plans before allocating them.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <thread>

#include "runtime/memory_budget.h"
#include "test_util.h"

using namespace minfer;
using namespace minfer::test;

namespace {

// Two 3x3 convolutions (packed by the CPU Conv kernel) with a symbolic batch.
Graph small_cnn(uint32_t seed) {
  std::mt19937 rng(seed);
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", DType::f32, Shape{-1, 3, 16, 16});
  Value* h = b.relu("relu1", b.conv("conv1", x, b.constant("w1", random_tensor({8, 3, 3, 3}, rng)),
                                    b.constant("b1", random_tensor({8}, rng)), {1, 1},
                                    {1, 1, 1, 1}));
  Value* y = b.conv("conv2", h, b.constant("w2", random_tensor({4, 8, 3, 3}, rng)),
                    b.constant("b2", random_tensor({4}, rng)), {1, 1}, {1, 1, 1, 1});
  b.output(y);
  return g;
}

SessionOptions opts(int threads, int level = 2) {
  SessionOptions o;
  o.threads = threads;
  o.optimization_level = level;
  return o;
}

Tensor input(int64_t batch) {
  std::mt19937 rng(uint32_t(100 + batch));
  return random_tensor({batch, 3, 16, 16}, rng);
}

// A 1x1 input padded by `pad` on every side.
Graph huge_pad(int64_t pad) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", DType::f32, Shape{1, 1});
  Value* pads = b.constant("pads", Tensor::from_vector<int64_t>({pad, pad, pad, pad}, Shape{4}));
  b.output(b.op("Pad", "pad_huge", {x, pads}));
  return g;
}

// r = Relu(x); y = Conv2(Conv1(r)) + r, fused into Conv2 (its residual input), with r also a
// graph output if `keep_r`. With `conv_of_r`, y = Conv2(r) + r instead: the conv reads r as
// its input too.
Graph residual_block(bool keep_r, bool conv_of_r) {
  std::mt19937 rng(5);
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", DType::f32, Shape{1, 8, 16, 16});
  Value* r = b.relu("r", x);
  auto conv = [&](const std::string& name, Value* in) {
    return b.conv(name, in, b.constant(name + ".w", random_tensor({8, 8, 3, 3}, rng)),
                  b.constant(name + ".b", random_tensor({8}, rng)), {1, 1}, {1, 1, 1, 1});
  };
  Value* a = conv_of_r ? r : b.relu("a", conv("conv1", r));
  b.output(b.add("y", conv("conv2", a), r));
  if (keep_r) b.output(r);
  return g;
}

}  // namespace

TEST_CASE("session: a conv writes its output over a residual that dies there", "[memory]") {
  std::mt19937 rng(9);
  const NamedTensors in{{"x", random_tensor({1, 8, 16, 16}, rng)}};
  for (bool conv_of_r : {false, true}) {
    INFO("conv of the residual itself: " << conv_of_r);
    Session fused(residual_block(false, conv_of_r), opts(1));
    Session kept(residual_block(true, conv_of_r), opts(1));
    Session plain(residual_block(false, conv_of_r), opts(1, 0));
    // The same values as unfused steps, whether the output took the residual's buffer or not.
    require_close(fused.run(in).at("y"), plain.run(in).at("y"), 1e-5, 1e-5);
    require_close(kept.run(in).at("y"), plain.run(in).at("y"), 1e-5, 1e-5);
    // One 8 KiB activation less at the conv than where the residual stays live (a graph
    // output); none less where the conv reads it as its input as well.
    const size_t tensor = 8 * 16 * 16 * sizeof(float);
    const size_t saved = kept.plan_stats(in).arena_bytes - fused.plan_stats(in).arena_bytes;
    CHECK(saved == (conv_of_r ? 0 : tensor));
  }
}

TEST_CASE("session: weights are packed once and shared by the plans of every batch",
          "[session][memory]") {
  Session s(small_cnn(1));
  Session oracle(small_cnn(1), opts(0, 0));
  s.run_one(input(1));
  const MemoryStats one = s.memory_stats();
  CHECK(one.plans == 1);
  CHECK(one.packed_bytes > 0);
  for (int64_t n : {2, 3, 5}) require_close(s.run_one(input(n)), oracle.run_one(input(n)));
  const MemoryStats four = s.memory_stats();
  CHECK(four.plans == 4);
  CHECK(four.packed_bytes == one.packed_bytes);  // no copy per plan
  // Runs one after the other reuse one working buffer, the largest one.
  CHECK(four.buffer_bytes >= s.plan_stats({{"x", Shape{5, 3, 16, 16}}}).arena_bytes);
  CHECK(four.buffer_bytes < 2 * s.plan_stats({{"x", Shape{5, 3, 16, 16}}}).arena_bytes);
}

TEST_CASE("session: the plan cache drops the least recently used plan beyond its bound",
          "[session][memory]") {
  SessionOptions o;
  o.plan_cache_plans = 2;
  Session s(small_cnn(2), o);
  const Tensor y1 = s.run_one(input(1));
  s.run_one(input(2));
  s.run_one(input(1));  // batch 1 is now the most recently used
  s.run_one(input(3));  // drops batch 2
  CHECK(s.memory_stats().plans == 2);
  require_equal(s.run_one(input(1)), y1);
  CHECK(s.memory_stats().plans == 2);
  s.run_one(input(2));  // planned again
  CHECK(s.memory_stats().plans == 2);
  SessionOptions none;
  none.plan_cache_plans = 0;
  CHECK_THROWS_AS(Session(small_cnn(2), none), Error);
}

TEST_CASE("session: trim gives plans, packed weights and buffers back; runs go on",
          "[session][memory]") {
  Session s(small_cnn(3));
  const Tensor y2 = s.run_one(input(2));
  s.run_one(input(4));
  s.trim();
  const MemoryStats m = s.memory_stats();
  CHECK(m.plans == 0);
  CHECK(m.packed_bytes == 0);
  CHECK(m.buffer_bytes == 0);
  CHECK(m.graph_constant_bytes > 0);  // the model itself stays
  require_equal(s.run_one(input(2)), y2);
  CHECK(s.memory_stats().packed_bytes > 0);
}

TEST_CASE("session: run writes into an output buffer the caller dropped, never one it holds",
          "[session][memory]") {
  Session s(small_cnn(6), opts(1));
  const Tensor want1 = s.run_one(input(1)).clone(), want2 = s.run_one(input(2)).clone();
  const void* dropped = s.run_one(input(1)).raw();  // (the tensor is gone after this line)
  const Tensor held = s.run_one(input(1));
  CHECK(held.raw() == dropped);  // the same buffer again, no new allocation
  require_equal(held, want1);
  CHECK(s.memory_stats().output_bytes == held.nbytes());
  // Held, it stays as returned: the next run of the same shape writes elsewhere.
  const Tensor other = s.run_one(input(1));
  CHECK(other.raw() != held.raw());
  require_equal(held, want1);
  // Another shape takes a buffer of its own, and the kept one follows it.
  require_equal(s.run_one(input(2)), want2);
  CHECK(s.memory_stats().output_bytes == want2.nbytes());
  s.trim();
  CHECK(s.memory_stats().output_bytes == 0);
  require_equal(held, want1);
  require_equal(other, want1);
  // An output outlives its session (and a copy of it, the last one dropped, frees it).
  Tensor kept;
  {
    Session brief(small_cnn(6), opts(1));
    kept = brief.run_one(input(2));
  }
  const Tensor copy = kept;
  kept = Tensor();
  require_equal(copy, want2);
}

TEST_CASE("session: a plan over the memory limit is refused, naming what it needs",
          "[session][memory]") {
  SessionOptions o;
  o.memory_limit = 256 * 1024;  // the weights (~1.5 KiB) and batch 1 fit, batch 64 does not
  o.threads = 2;  // (each thread's conv workspace counts: 16 of them took batch 1 past it)
  Session s(small_cnn(4), o);
  const Tensor y1 = s.run_one(input(1));
  try {
    s.run_one(input(64));
    FAIL("batch 64 was not refused");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::OutOfMemory);
    const std::string msg = e.what();
    CHECK_THAT(msg, Catch::Contains("needs") && Catch::Contains("memory limit") &&
                        Catch::Contains("256.00 KiB") && Catch::Contains("[64,3,16,16]") &&
                        Catch::Contains("largest tensor"));
  }
  // From the shapes alone, without inputs: refused before anything is allocated.
  CHECK_THROWS_MATCHES(s.plan_stats({{"x", Shape{64, 3, 16, 16}}}), Error,
                       Catch::Matchers::Predicate<Error>(
                           [](const Error& e) { return e.code() == ErrorCode::OutOfMemory; }));
  require_equal(s.run_one(input(1)), y1);  // the session stays usable
  CHECK(s.memory_stats().plans == 1);
}

TEST_CASE("session: a tensor larger than the machine is refused while planning",
          "[session][memory]") {
  auto is_oom = Catch::Matchers::Predicate<Error>(
      [](const Error& e) { return e.code() == ErrorCode::OutOfMemory; }, "OutOfMemory");
  // Beyond any tensor (16 TiB): refused by shape inference already.
  CHECK_THROWS_MATCHES(Session(huge_pad(int64_t{1} << 20)), Error, is_oom);
  // Beyond this machine's memory (1.25x) but a valid tensor: refused by the planner's default
  // limit, naming the node, before anything is allocated.
  const double side = std::sqrt(1.25 * double(physical_memory_bytes()) / 4);
  if (side * side * 4 < double(uint64_t{1} << 36)) {
    Session s(huge_pad(int64_t(side / 2) + 1));
    try {
      s.run_one(Tensor(DType::f32, Shape{1, 1}));
      FAIL("the Pad was not refused");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::OutOfMemory);
      CHECK_THAT(std::string(e.what()),
                 Catch::Contains("pad_huge") && Catch::Contains("physical memory"));
    }
  } else {
    WARN("this machine has more memory than a tensor may take: the default limit is not hit");
  }
  // A small pad of the same model runs.
  Session small(huge_pad(2));
  CHECK(small.run_one(Tensor(DType::f32, Shape{1, 1})).shape() == Shape{5, 5});
}

TEST_CASE("memory sizes parse as the command line takes them", "[memory]") {
  CHECK(parse_memory_size("123") == 123);
  CHECK(parse_memory_size("64MB") == 64u << 20);
  CHECK(parse_memory_size("64MiB") == 64u << 20);
  CHECK(parse_memory_size("1.5G") == size_t(1.5 * (1u << 30)));
  CHECK(parse_memory_size("2 gb") == size_t(2) << 30);
  for (const char* bad : {"", "MB", "-1", "1.2.3", "12XB", "0", "1e30"})
    CHECK_THROWS_AS(parse_memory_size(bad), Error);
}

TEST_CASE("session: threads running many batch sizes while plans are evicted and trimmed",
          "[session][memory][concurrency]") {
  SessionOptions o;
  o.plan_cache_plans = 2;  // fewer than the batch sizes in flight: plans drop while they run
  o.threads = 1;
  Session s(small_cnn(5), o);
  Session oracle(small_cnn(5), opts(1, 0));
  std::vector<Tensor> expected;
  for (int64_t n = 1; n <= 4; ++n) expected.push_back(oracle.run_one(input(n)));
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        const int64_t n = (t + i) % 4 + 1;
        const Tensor y = s.run_one(input(n));
        const Tensor& e = expected[size_t(n - 1)];  // (no Catch2 assertions off the main thread)
        bool same = y.shape() == e.shape();
        for (int64_t k = 0; same && k < y.numel(); ++k)
          same = std::abs(y.data<float>()[k] - e.data<float>()[k]) <=
                 1e-5f + 1e-4f * std::abs(e.data<float>()[k]);
        mismatches += !same;
        if (t == 0 && i % 5 == 0) s.trim();
      }
    });
  for (auto& th : threads) th.join();
  CHECK(mismatches == 0);
  CHECK(s.memory_stats().plans <= 2);
}
