// Observing plans (calibration): element-wise steps write their output over an input that
// dies there, and every observed value is still the one a plain run computes.
#include <catch2/catch.hpp>

#include <cstring>
#include <map>

#include "runtime/session_observe.h"
#include "test_util.h"

using namespace minfer;
using namespace minfer::test;

namespace {

// x -> Relu -> MaxPool, then Add of the two -> Mul(per-channel scale) -> Relu, every value an
// output. The Add may write over the Relu's output (read last there), the Mul and the last
// Relu over the Add's; the MaxPool may not: the Add reads the Relu's output after it.
Graph elementwise_chain(std::mt19937& rng) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", DType::f32, Shape{2, 4, 8, 8});
  Value* r = b.relu("r", x);
  Value* p = b.max_pool("p", r, {3, 3}, {1, 1}, {1, 1, 1, 1});
  Value* s = b.add("s", r, p);
  Value* m = b.op("Mul", "m", {s, b.constant("scale", random_tensor({1, 4, 1, 1}, rng))});
  Value* y = b.relu("y", m);
  for (Value* v : {r, p, s, m}) b.output(v);
  b.output(y);
  return g;
}

}  // namespace

TEST_CASE("observing plans: in-place element-wise steps observe what a plain run computes",
          "[session][memory]") {
  std::mt19937 rng(7);
  const Graph g = elementwise_chain(rng);
  SessionOptions o;
  o.optimization_level = 1;
  o.threads = 1;
  Session plain(clone_graph(g), o), observed(clone_graph(g), o);
  observe_outputs(observed);
  const NamedTensors inputs{{"x", random_tensor({2, 4, 8, 8}, rng)}};
  const NamedTensors expected = plain.run(inputs);
  std::map<std::string, Tensor> seen;
  run_observing(observed, inputs,
                [&](const std::string& name, const Tensor& t) { seen[name] = t.clone(); });
  REQUIRE(seen.size() == expected.size());
  for (const auto& [name, t] : expected) {
    INFO(name);
    REQUIRE(seen.count(name) == 1);
    REQUIRE(seen[name].nbytes() == t.nbytes());
    CHECK(std::memcmp(seen[name].raw(), t.raw(), t.nbytes()) == 0);
  }
  // Two 2 KiB tensors live at once (the Relu's or its successors', and the MaxPool's); three
  // at the Add without in-place steps.
  const size_t tensor = 2 * 4 * 8 * 8 * sizeof(float);
  const PlanStats stats = observed.plan_stats(inputs);
  CHECK(stats.arena_bytes == 2 * tensor);
}
