// Models whose output shapes depend on the values of small integer inputs, such as a Reshape
// whose target shape is a graph input: the session plans them per value.
#include <catch2/catch.hpp>

#include "runtime/plan.h"
#include "test_util.h"

using namespace minfer;
using namespace minfer::test;

namespace {
// y = Relu(Reshape(x, shape)): the Relu makes sure later nodes see the run-time shape.
Graph reshape_by_input() {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", DType::f32, Shape{2, 3, 4});
  Value* shape = b.input("shape", DType::i64, Shape{-1});
  b.output(b.relu("relu", b.op("Reshape", "reshape", {x, shape})));
  return g;
}

Tensor shape_tensor(std::vector<int64_t> dims) {
  return Tensor::from_vector(dims, Shape{static_cast<int64_t>(dims.size())});
}

Tensor relu_of(const Tensor& x, Shape shape) {
  Tensor y(DType::f32, std::move(shape));
  for (int64_t i = 0; i < x.numel(); ++i) y.data<float>()[i] = std::max(0.f, x.data<float>()[i]);
  return y;
}
}  // namespace

TEST_CASE("session: a Reshape target given as an input is planned per value",
          "[session][shape-values]") {
  std::mt19937 rng(11);
  Tensor x = random_tensor({2, 3, 4}, rng);
  for (int level : {0, 2}) {
    SessionOptions opts;
    opts.optimization_level = level;
    Session s(reshape_by_input(), opts);
    // Each target shape, and back to the first one (a cached plan must not leak across values).
    std::vector<std::pair<std::vector<int64_t>, Shape>> cases = {
        {{6, 4}, Shape{6, 4}},       {{-1}, Shape{24}},        {{0, 12}, Shape{2, 12}},
        {{4, -1, 3}, Shape{4, 2, 3}}, {{6, 4}, Shape{6, 4}}};
    for (const auto& [dims, expected] : cases) {
      Tensor y = s.run({{"x", x}, {"shape", shape_tensor(dims)}}).at("relu");
      require_equal(y, relu_of(x, expected));
    }
  }
}

TEST_CASE("session: many distinct shape values", "[session][shape-values]") {
  std::mt19937 rng(12);
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", DType::f32, Shape{-1});
  Value* shape = b.input("shape", DType::i64, Shape{2});
  b.output(b.relu("relu", b.op("Reshape", "reshape", {x, shape})));
  Session s(std::move(g));
  // More distinct values than the plan cache keeps: old plans are dropped, results stay right.
  for (int64_t n = 1; n <= 80; ++n) {
    Tensor xin = random_tensor({2 * n}, rng);
    Tensor y = s.run({{"x", xin}, {"shape", shape_tensor({n, 2})}}).at("relu");
    require_equal(y, relu_of(xin, Shape{n, 2}));
  }
}

TEST_CASE("session: bad shape values are clear errors", "[session][shape-values][errors]") {
  std::mt19937 rng(13);
  Session s(reshape_by_input());
  Tensor x = random_tensor({2, 3, 4}, rng);
  auto message_of = [&](std::vector<int64_t> dims) -> std::string {
    try {
      s.run({{"x", x}, {"shape", shape_tensor(dims)}});
    } catch (const Error& e) {
      return e.what();
    }
    FAIL("no error for a bad target shape");
    return "";
  };
  // 24 elements cannot become 5x5, nor have two inferred dims.
  for (auto dims : {std::vector<int64_t>{5, 5}, {-1, -1}, {7, -1}, {-3, 8}}) {
    std::string msg = message_of(dims);
    INFO(msg);
    REQUIRE(msg.find("reshape") != std::string::npos);
  }
  // The session still works afterwards.
  REQUIRE(s.run({{"x", x}, {"shape", shape_tensor({24})}}).at("relu").shape() == Shape{24});
  // With the inputs themselves there is.
  REQUIRE(s.plan_stats(NamedTensors{{"x", x}, {"shape", shape_tensor({4, 6})}}).arena_bytes > 0);
  // Without values there is no plan to describe.
  try {
    s.plan_stats({{"x", Shape{2, 3, 4}}, {"shape", Shape{2}}});
    FAIL("plan_stats planned a shape it cannot know");
  } catch (const Error& e) {
    REQUIRE(e.code() == ErrorCode::Unsupported);
    REQUIRE(std::string(e.what()).find("values of its integer inputs") != std::string::npos);
  }
}

TEST_CASE("session: only small integer inputs are baked into plans", "[session][shape-values]") {
  REQUIRE(is_shape_like_input(DType::i64, Shape{4}));
  REQUIRE(is_shape_like_input(DType::i32, Shape{}));
  REQUIRE_FALSE(is_shape_like_input(DType::i64, Shape{1000}));
  REQUIRE_FALSE(is_shape_like_input(DType::f32, Shape{4}));
  REQUIRE_FALSE(is_shape_like_input(DType::i64, Shape{-1}));
}
