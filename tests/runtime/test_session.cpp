#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "test_util.h"

using namespace minfer;
using namespace minfer::test;

namespace {
// y = relu(x @ w^T + b) with a symbolic batch, then a second layer.
Graph mlp(std::mt19937& rng) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", DType::f32, Shape{-1, 8});
  Value* h = b.relu("relu1", b.linear("fc1", x, b.constant("w1", random_tensor({16, 8}, rng)),
                                      b.constant("b1", random_tensor({16}, rng))));
  Value* y = b.linear("fc2", h, b.constant("w2", random_tensor({4, 16}, rng)),
                      b.constant("b2", random_tensor({4}, rng)));
  b.output(y);
  return g;
}

// The same computation written out by hand, in double precision.
Tensor mlp_expected(const Graph& g, const Tensor& x) {
  auto w = [&](const char* n) { return g.find_value(n)->constant->data<float>(); };
  int64_t n = x.dim(0);
  Tensor y(DType::f32, Shape{n, 4});
  for (int64_t i = 0; i < n; ++i) {
    double h[16];
    for (int j = 0; j < 16; ++j) {
      double s = w("b1")[j];
      for (int k = 0; k < 8; ++k) s += double(x.data<float>()[i * 8 + k]) * w("w1")[j * 8 + k];
      h[j] = s > 0 ? s : 0;
    }
    for (int j = 0; j < 4; ++j) {
      double s = w("b2")[j];
      for (int k = 0; k < 16; ++k) s += h[k] * w("w2")[j * 16 + k];
      y.data<float>()[i * 4 + j] = float(s);
    }
  }
  return y;
}
}  // namespace

TEST_CASE("session runs any batch size of a symbolic batch dim", "[session]") {
  std::mt19937 rng(1);
  Graph g = mlp(rng);
  std::mt19937 same_seed(1);
  Graph reference = mlp(same_seed);  // the same weights, kept for the oracle
  Session s(std::move(g));
  for (int64_t n : {1, 3, 8}) {
    Tensor x = random_tensor({n, 8}, rng);
    Tensor y = s.run_one(x);
    require_close(y, mlp_expected(reference, x));
  }
  PlanStats stats = s.plan_stats({{"x", Shape{8, 8}}});
  REQUIRE(stats.arena_bytes > 0);
  REQUIRE(stats.arena_bytes <= stats.naive_bytes);
}

TEST_CASE("session: several threads calling run at once", "[session][concurrency]") {
  std::mt19937 rng(2);
  Session s(mlp(rng));
  std::vector<Tensor> xs, expected;
  for (int i = 0; i < 4; ++i) {
    xs.push_back(random_tensor({5, 8}, rng));
    expected.push_back(s.run_one(xs.back()));
  }
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 50; ++rep) {
        Tensor y = s.run_one(xs[t]);
        for (int64_t i = 0; i < y.numel(); ++i)
          if (y.data<float>()[i] != expected[t].data<float>()[i]) ++mismatches;
      }
    });
  for (auto& th : threads) th.join();
  REQUIRE(mismatches == 0);
}

TEST_CASE("session: bad inputs give clear errors", "[session][errors]") {
  std::mt19937 rng(3);
  Session s(mlp(rng));
  auto message_of = [&](const NamedTensors& in) -> std::string {
    try {
      s.run(in);
    } catch (const Error& e) {
      REQUIRE(e.code() == ErrorCode::InvalidArgument);
      return e.what();
    }
    FAIL("no error");
    return "";
  };
  REQUIRE(message_of({}).find("input 'x' is missing") != std::string::npos);
  REQUIRE(message_of({{"x", random_tensor({2, 8}, rng)}, {"z", random_tensor({1}, rng)}})
              .find("no input named 'z'") != std::string::npos);
  REQUIRE(message_of({{"x", random_tensor({2, 7}, rng)}}).find("[2,7]") != std::string::npos);
  REQUIRE(message_of({{"x", Tensor(DType::i32, Shape{2, 8})}}).find("i32") != std::string::npos);
}

TEST_CASE("session: run_into writes the outputs into the caller's memory", "[session]") {
  std::mt19937 rng(5);
  Session s(mlp(rng));
  const std::string out = s.output_names()[0];
  const Tensor x = random_tensor({3, 8}, rng);
  const Tensor want = s.run_one(x);
  std::vector<float> memory(3 * 4, -1.0f);
  s.run_into({{"x", x}}, {{out, Tensor::view(memory.data(), DType::f32, Shape{3, 4})}});
  require_equal(Tensor::view(memory.data(), DType::f32, Shape{3, 4}), want);
  Tensor owned(DType::f32, Shape{3, 4});  // a copy of a Tensor shares its buffer
  s.run_into({{"x", x}}, {{out, owned}});
  require_equal(owned, want);

  auto message_of = [&](const NamedTensors& outputs, RunOptions options = {}) -> std::string {
    try {
      s.run_into({{"x", x}}, outputs, options);
    } catch (const Error& e) {
      REQUIRE(e.code() == ErrorCode::InvalidArgument);
      return e.what();
    }
    FAIL("no error");
    return "";
  };
  CHECK_THAT(message_of({}),
             Catch::Contains("output '" + out + "' is missing (expected f32[3,4])"));
  CHECK_THAT(message_of({{out, owned}, {"nope", owned}}),
             Catch::Contains("no output named 'nope'"));
  CHECK_THAT(message_of({{out, Tensor(DType::f32, Shape{2, 4})}}),
             Catch::Contains("is f32[2,4], the model makes f32[3,4]"));
  CHECK_THAT(message_of({{out, Tensor(DType::i32, Shape{3, 4})}}), Catch::Contains("is i32[3,4]"));
  CHECK_THAT(
      message_of({{out, Tensor::view(memory.data(), DType::f32, Shape{3, 4}, Device::cuda(0))}}),
      Catch::Contains("is on cuda:0"));
  int stream_stand_in = 0;
  CHECK_THAT(message_of({{out, owned}}, RunOptions{&stream_stand_in}),
             Catch::Contains("this session runs on the CPU"));
}

TEST_CASE("session: a moved-from Session throws a clear error from every method",
          "[session][errors]") {
  std::mt19937 rng(4);
  std::mt19937 same_seed(4);
  const Graph reference = mlp(same_seed);
  Session a(mlp(rng));
  Session b(std::move(a));
  const Tensor x = random_tensor({2, 8}, rng);
  auto require_moved_error = [](const char* method, auto call) {
    INFO(method);
    try {
      call();
      FAIL("no error from " << method << " on a moved-from Session");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::InvalidArgument);
      CHECK_THAT(e.what(), Catch::Contains(std::string("Session::") + method) &&
                               Catch::Contains("moved from"));
    }
  };
  require_moved_error("input_names", [&] { (void)a.input_names(); });
  require_moved_error("output_names", [&] { (void)a.output_names(); });
  require_moved_error("graph", [&] { (void)a.graph(); });
  require_moved_error("options", [&] { (void)a.options(); });
  require_moved_error("run", [&] { a.run({{"x", x}}); });
  require_moved_error("run_one", [&] { a.run_one(x); });
  require_moved_error("run_into", [&] { a.run_into({{"x", x}}, {}); });
  require_moved_error("plan_stats", [&] { a.plan_stats({{"x", Shape{2, 8}}}); });
  require_moved_error("plan_stats", [&] { a.plan_stats(NamedTensors{{"x", x}}); });
  // The Session it was moved to has the model; move-assigning back revives the source.
  require_close(b.run_one(x), mlp_expected(reference, x));
  a = std::move(b);
  CHECK(a.input_names() == std::vector<std::string>{"x"});
  require_close(a.run_one(x), mlp_expected(reference, x));
  require_moved_error("run_one", [&] { b.run_one(x); });
}

TEST_CASE("session: asking for CUDA without a usable GPU is a clear error", "[session][errors]") {
  std::mt19937 rng(4);
  SessionOptions opts;
  opts.device = Device::cuda(0);
  try {
    Session s(mlp(rng), opts);
    // A machine with a GPU gets here: the session must then work.
    Tensor x = random_tensor({2, 8}, rng);
    REQUIRE(s.run_one(x).shape() == Shape{2, 4});
  } catch (const Error& e) {
    REQUIRE(e.code() == ErrorCode::Device);
    REQUIRE(std::string(e.what()).size() > 10);
  }
}
