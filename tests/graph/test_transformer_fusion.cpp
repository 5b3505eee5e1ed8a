// layernorm-fusion and gelu-fusion: the decomposed forms of torch's exports become one node,
// the result is unchanged, and near-misses are left alone.
#include <catch2/catch.hpp>
#include <map>

#include "graph/passes/passes.h"
#include "minfer/registry.h"
#include "test_util.h"

using namespace minfer;
using namespace minfer::test;

namespace {

Tensor scalar(float v) {
  Tensor t(DType::f32, Shape{});
  t.data<float>()[0] = v;
  return t;
}

Value* op(Graph& g, const std::string& type, const std::string& name, std::vector<Value*> in,
          Attributes attrs = {}) {
  return g.add_node(type, name, std::move(in), 1, std::move(attrs))->outputs[0];
}

struct LnOptions {
  std::vector<int64_t> axes{-1};
  bool affine = true;
  bool expose_variance = false;  // the variance is also a graph output: no fusion
  float eps = 1e-5f;
};

// x [2,5,8] -> torch's opset-13 LayerNorm over `axes`.
Graph decomposed_layer_norm(const LnOptions& o) {
  std::mt19937 rng(3);
  Graph g;
  g.opset_imports[""] = 13;
  Value* x = g.add_input("x", DType::f32, Shape{2, 5, 8});
  Attributes axes;
  axes.set("axes", o.axes);
  Value* mu = op(g, "ReduceMean", "mean", {x}, axes);
  Value* xc = op(g, "Sub", "sub", {x, mu});
  Value* sq = op(g, "Pow", "pow", {xc, g.add_constant("two", scalar(2.f))});
  Value* var = op(g, "ReduceMean", "var", {sq}, axes);
  Value* sd =
      op(g, "Sqrt", "sqrt", {op(g, "Add", "add_eps", {var, g.add_constant("eps", scalar(o.eps))})});
  Value* y = op(g, "Div", "div", {xc, sd});
  if (o.affine) {
    y = op(g, "Mul", "mul", {y, g.add_constant("gamma", random_tensor({8}, rng, 0.5f, 1.5f))});
    y = op(g, "Add", "add", {g.add_constant("beta", random_tensor({8}, rng)), y});
  }
  g.add_output(y);
  if (o.expose_variance) g.add_output(var);
  return g;
}

// x [3,10] -> Gelu as x * 0.5 * (1 + erf(x / sqrt 2)); `half_first`: (x * 0.5) * (1 + erf).
Graph decomposed_gelu(bool half_first, float half = 0.5f) {
  Graph g;
  g.opset_imports[""] = 13;
  Value* x = g.add_input("x", DType::f32, Shape{3, 10});
  Value* e =
      op(g, "Erf", "erf", {op(g, "Div", "div", {x, g.add_constant("r2", scalar(1.4142135f))})});
  Value* e1 = op(g, "Add", "add", {e, g.add_constant("one", scalar(1.f))});
  Value* y;
  if (half_first) {
    y = op(g, "Mul", "mul", {op(g, "Mul", "half", {x, g.add_constant("h", scalar(half))}), e1});
  } else {
    y = op(g, "Mul", "mul2", {op(g, "Mul", "mul", {x, e1}), g.add_constant("h", scalar(half))});
  }
  g.add_output(y);
  return g;
}

// Optimizes at level 2; the outputs must equal level 0's on a random input.
Graph optimized_and_checked(const std::function<Graph()>& make, Shape input) {
  std::mt19937 rng(5);
  Tensor x = random_tensor(input, rng, -3.f, 3.f);
  SessionOptions o0, o2;
  o0.optimization_level = 0;
  Session plain(make(), o0), fused(make(), o2);
  NamedTensors a = plain.run({{"x", x}}), b = fused.run({{"x", x}});
  for (auto& [name, t] : a) require_close(b.at(name), t, 1e-5, 1e-5);
  Graph g = make();
  g.infer_shapes();
  optimize(g, o2);
  return g;
}

}  // namespace

TEST_CASE("layernorm-fusion: torch's decomposed LayerNorm becomes one node", "[passes]") {
  for (const auto& axes :
       {std::vector<int64_t>{-1}, std::vector<int64_t>{1, 2}, std::vector<int64_t>{-1, -2}}) {
    for (bool affine : {true, false}) {
      INFO("axes " << axes.size() << " affine " << affine);
      LnOptions o;
      o.axes = axes;
      o.affine = affine;
      Graph g = optimized_and_checked([&] { return decomposed_layer_norm(o); }, Shape{2, 5, 8});
      INFO(g.dump());
      auto h = op_histogram(g);
      REQUIRE(g.node_count() == 1);
      const Node* ln = g.nodes()[0];
      CHECK(ln->op_type == "LayerNormalization");
      CHECK(ln->domain == kMinferDomain);
      CHECK(ln->attrs.get_int("axis", -99) == 3 - int64_t(axes.size()));
      CHECK(ln->attrs.get_float("epsilon", -1.f) == 1e-5f);
      CHECK(ln->inputs.size() == (affine ? 3u : 2u));
      CHECK(g.outputs()[0]->name == (affine ? "add" : "div"));
    }
  }
}

TEST_CASE("layernorm-fusion leaves near-misses alone", "[passes]") {
  SECTION("a leading axis is not a layer norm over trailing dims") {
    LnOptions o;
    o.axes = {1};
    Graph g = optimized_and_checked([&] { return decomposed_layer_norm(o); }, Shape{2, 5, 8});
    CHECK(op_histogram(g).count("LayerNormalization") == 0);
  }
  SECTION("an intermediate value that is a graph output") {
    LnOptions o;
    o.expose_variance = true;
    Graph g = optimized_and_checked([&] { return decomposed_layer_norm(o); }, Shape{2, 5, 8});
    CHECK(op_histogram(g).count("LayerNormalization") == 0);
    CHECK(op_histogram(g)["ReduceMean"] == 2);
  }
}

TEST_CASE("gelu-fusion: x * 0.5 * (1 + erf(x / sqrt 2)) becomes Gelu", "[passes]") {
  for (bool half_first : {false, true}) {
    INFO("half first " << half_first);
    Graph g = optimized_and_checked([&] { return decomposed_gelu(half_first); }, Shape{3, 10});
    INFO(g.dump());
    REQUIRE(g.node_count() == 1);
    CHECK(g.nodes()[0]->op_type == "Gelu");
    CHECK(g.nodes()[0]->domain == kMinferDomain);
    CHECK(g.nodes()[0]->inputs[0]->name == "x");
  }
  // 0.4 instead of 0.5 is not a Gelu.
  Graph g = optimized_and_checked([] { return decomposed_gelu(false, 0.4f); }, Shape{3, 10});
  CHECK(op_histogram(g).count("Gelu") == 0);
  CHECK(op_histogram(g)["Erf"] == 1);
}
