// Reshape-like steps (Reshape, Flatten, Squeeze...) take their input's buffer when nothing reads
// that input afterwards, and then copy nothing; where something does, they copy.
#include <catch2/catch.hpp>

#include <algorithm>

#include "runtime/plan.h"
#include "test_util.h"

using namespace minfer;
using namespace minfer::test;

namespace {

const Slot& slot_named(const Plan& plan, const std::string& name) {
  for (const Slot& s : plan.slots)
    if (s.name == name) return s;
  FAIL("no slot named " << name);
  return plan.slots.front();
}

size_t step_of(const Plan& plan, const std::string& node) {
  for (size_t i = 0; i < plan.steps.size(); ++i)
    if (plan.steps[i].node && plan.steps[i].node->name == node) return i;
  FAIL("no step for node " << node);
  return 0;
}

Value* reshape(GraphBuilder& b, const std::string& name, Value* x, std::vector<int64_t> dims) {
  const auto rank = static_cast<int64_t>(dims.size());
  return b.op("Reshape", name, {x, b.constant(name + "_shape", Tensor::from_vector(dims, {rank}))});
}

}  // namespace

TEST_CASE("plans: a Reshape takes its input's buffer only where nothing reads it afterwards",
          "[session][memory]") {
  std::mt19937 rng(3);
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", DType::f32, Shape{2, 4, 8, 8});
  // r dies at its Reshape (then Flatten): one buffer for the three.
  Value* r = b.relu("r", x);
  Value* f = b.flatten("f", reshape(b, "a", r, {8, 64}), 1);
  Value* y1 = b.relu("y1", f);
  // r2 is read after its Reshape (by the Add): the Reshape copies it.
  Value* r2 = b.relu("r2", x);
  Value* y2 = b.relu("y2", reshape(b, "a2", r2, {8, 64}));
  Value* s = b.add("s", r2, r2);
  // r3 is a graph output: its buffer is copied out after the run, so its Reshape copies too.
  Value* r3 = b.relu("r3", x);
  Value* y3 = reshape(b, "a3", r3, {512});
  for (Value* v : {y1, y2, s, r3, y3}) b.output(v);

  SessionOptions options;
  options.optimization_level = 0;
  const auto plan = build_plan(g, {Shape{2, 4, 8, 8}}, {}, options, 1, nullptr);
  REQUIRE(step_of(*plan, "a2") < step_of(*plan, "s"));
  CHECK(slot_named(*plan, "a").offset == slot_named(*plan, "r").offset);
  CHECK(slot_named(*plan, "f").offset == slot_named(*plan, "r").offset);
  CHECK(slot_named(*plan, "a2").offset != slot_named(*plan, "r2").offset);
  CHECK(slot_named(*plan, "a3").offset != slot_named(*plan, "r3").offset);

  // The values are those of plain copies.
  const Tensor in = random_tensor({2, 4, 8, 8}, rng);
  const std::vector<Tensor> out = execute_plan(*plan, {&in}, 1);
  REQUIRE(out.size() == 5);
  for (int64_t i = 0; i < in.numel(); ++i) {
    const float v = in.data<float>()[i];
    INFO("element " << i);
    REQUIRE(out[0].data<float>()[i] == std::max(v, 0.f));
    REQUIRE(out[1].data<float>()[i] == std::max(v, 0.f));
    REQUIRE(out[2].data<float>()[i] == 2 * std::max(v, 0.f));
    REQUIRE(out[3].data<float>()[i] == std::max(v, 0.f));
    REQUIRE(out[4].data<float>()[i] == std::max(v, 0.f));
  }
  CHECK(out[0].shape() == Shape{8, 64});
  CHECK(out[4].shape() == Shape{512});
}
