// The CUDA stem rewrites (stem-space-to-depth, stem-channel-padding) checked on the CPU: the
// rewritten graph, run through the CPU kernels and references, gives the same int8 outputs
// bit for bit and the same fp16 outputs (up to one rounding) as the graph before.
#include <random>

#include "graph/passes/passes.h"
#include "minfer/calibrate.h"
#include "minfer/models.h"
#include "minfer/session.h"
#include "ops/fp16/half_ops.h"
#include "test_util.h"

namespace minfer::test {
namespace {

// The graph as a CPU session optimizes it, rewritten by `pass`; both then run unoptimized.
// `gone_op`, if given, must no longer be in the rewritten graph.
std::pair<Tensor, Tensor> before_and_after(Graph g, bool (*pass)(Graph&, PassLog&),
                                           const Tensor& x, const std::string& expect_op,
                                           const std::string& gone_op = "") {
  g.infer_shapes();
  optimize(g, SessionOptions{});
  Graph rewritten = clone_graph(g);
  PassLog log;
  REQUIRE(pass(rewritten, log));
  passes::eliminate_dead_code(rewritten, log);
  bool found = false, gone = true;
  for (const Node* n : rewritten.topo_order()) {
    found |= n->op_type == expect_op;
    gone &= n->op_type != gone_op;
  }
  CHECK(found);
  CHECK(gone);
  SessionOptions plain;
  plain.optimization_level = 0;
  Session before(std::move(g), plain), after(std::move(rewritten), plain);
  return {before.run_one(x), after.run_one(x)};
}

TEST_CASE("space-to-depth and channel padding keep int8 stems bit-exact", "[passes][int8]") {
  std::mt19937 rng(5);
  const Tensor x = random_tensor(Shape{1, 3, 224, 224}, rng, -2.f, 2.f);
  CalibrationOptions co;
  co.progress = false;
  Graph g = build_model("resnet18");
  Calibrator cal(g, co);
  cal.add(random_tensor(Shape{1, 3, 224, 224}, rng, -2.f, 2.f));
  quantize_graph(g, cal.table(CalibrationMethod::minmax));
  {
    // The input's QuantizeLinear moves into SpaceToDepthNhwc.
    auto [want, got] =
        before_and_after(clone_graph(g), passes::space_to_depth_stems, x, "SpaceToDepthNhwc",
                         "QuantizeLinear");
    require_equal(got, want);
  }
  {
    auto [want, got] = before_and_after(clone_graph(g), passes::pad_stem_channels, x, "Pad");
    require_equal(got, want);
  }
}

TEST_CASE("space-to-depth keeps fp16 stems within one rounding", "[passes][fp16]") {
  std::mt19937 rng(6);
  // x -> ToHalfNhwc -> HConv (7x7, stride 2, pad 3, odd sizes) -> FromHalfNhwc.
  for (auto [h, w, pad] : {std::tuple<int64_t, int64_t, int64_t>{30, 22, 3}, {16, 16, 2},
                           {12, 20, 0}}) {
    INFO("input " << h << "x" << w << " pad " << pad);
    Graph g;
    Value* in = g.add_input("x", DType::f32, Shape{2, 3, h, w});
    Node* to = g.add_node("ToHalfNhwc", "to", {in}, 1, {}, kMinferDomain);
    Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{7, 7});
    a.set("strides", std::vector<int64_t>{2, 2});
    a.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
    a.set("activation", std::string("Relu"));
    Value* wv = g.add_constant("w", random_tensor(Shape{8, 3, 7, 7}, rng, -0.1f, 0.1f));
    Value* bv = g.add_constant("b", random_tensor(Shape{8}, rng));
    Node* conv = g.add_node("HConv", "stem", {to->outputs[0], wv, bv}, 1, a, kMinferDomain);
    Node* from = g.add_node("FromHalfNhwc", "from", {conv->outputs[0]}, 1, {}, kMinferDomain);
    g.add_output(from->outputs[0]);
    const Tensor x = random_tensor(Shape{2, 3, h, w}, rng);
    auto [want, got] = before_and_after(std::move(g), passes::space_to_depth_stems, x,
                                        "SpaceToDepthNhwc");
    require_close(got, want, 2e-3, 2e-3);
  }
}

}  // namespace
}  // namespace minfer::test
