// The channels-last pass (graph/passes/channels_last.cpp) and com.minfer:NhwcConv's CPU kernel
// (backends/cpu/conv_nhwc.h): which convs go to NHWC, where the transposes go, and that the
// converted graph computes what the plain one does, at every ISA level this CPU has.
#include <catch2/catch.hpp>

#include <map>

#include "isa/for_each_isa.h"
#include "minfer/builder.h"
#include "minfer/calibrate.h"
#include "minfer/registry.h"
#include "test_util.h"

using namespace minfer;
using namespace minfer::test;

namespace {

Attributes clip_attrs(float lo, float hi) {
  Attributes a;
  a.set("activation", std::string("Clip"));
  a.set("activation_min", lo);
  a.set("activation_max", hi);
  return a;
}

// A FusedConv of a k x k kernel (depthwise when `depthwise`), K / 2 * dilation padding, bias,
// optional residual and attributes `attrs` (activation, dilations).
Value* fused_conv(GraphBuilder& b, const std::string& name, Value* x, int64_t c, int64_t m,
                  int64_t k, int64_t stride, bool depthwise, std::mt19937& rng,
                  Attributes attrs = {}, Value* residual = nullptr) {
  attrs.set("group", depthwise ? c : int64_t{1});
  attrs.set("strides", std::vector<int64_t>{stride, stride});
  const int64_t p = k / 2 * attrs.get_ints("dilations", {1, 1})[0];
  attrs.set("pads", std::vector<int64_t>{p, p, p, p});
  Value* w = b.constant(name + ".w", random_tensor({m, depthwise ? 1 : c, k, k}, rng, -0.3f, 0.3f));
  Value* bias = b.constant(name + ".b", random_tensor({m}, rng));
  std::vector<Value*> in{x, w, bias};
  if (residual) in.push_back(residual);
  return b.op("FusedConv", name, in, std::move(attrs), kMinferDomain);
}

// Two MobileNet v2 blocks on a small plane: expand 1x1 + Clip, depthwise 3x3 + Clip (the
// second at stride 2, 5x5 with SiLU, then an EfficientNet squeeze-and-excitation gate),
// project 1x1 (+ the block's input), then a pooled head; the last projection is also a graph
// output.
Graph mobile_blocks(int64_t plane, int64_t c, std::mt19937& rng) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", DType::f32, Shape{2, c, plane, plane});
  Value* h = fused_conv(b, "expand1", x, c, 4 * c, 1, 1, false, rng, clip_attrs(0, 6));
  h = fused_conv(b, "dw1", h, 4 * c, 4 * c, 3, 1, true, rng, clip_attrs(0, 6));
  Value* y1 = fused_conv(b, "project1", h, 4 * c, c, 1, 1, false, rng, {}, x);
  h = fused_conv(b, "expand2", y1, c, 6 * c, 1, 1, false, rng, clip_attrs(0, 6));
  Attributes silu;
  silu.set("activation", std::string("Silu"));
  h = fused_conv(b, "dw2", h, 6 * c, 6 * c, 5, 2, true, rng, silu);
  Value* gate = b.global_average_pool("se.pool", h);
  gate = fused_conv(b, "se.reduce", gate, 6 * c, 2, 1, 1, false, rng, silu);
  Attributes sigmoid;
  sigmoid.set("activation", std::string("Sigmoid"));
  gate = fused_conv(b, "se.expand", gate, 2, 6 * c, 1, 1, false, rng, sigmoid);
  h = b.op("Mul", "se.scale", {h, gate});
  Value* y2 = fused_conv(b, "project2", h, 6 * c, 2 * c, 1, 1, false, rng);
  b.output(b.flatten("flatten", b.global_average_pool("gap", y2)));
  b.output(y2);
  return g;
}

NamedTensors run(Graph g, int level, int threads, const Tensor& x, Graph* optimized = nullptr) {
  SessionOptions o;
  o.optimization_level = level;
  o.threads = threads;
  Session s(std::move(g), o);
  if (optimized) *optimized = clone_graph(s.graph());
  return s.run({{"x", x}});
}

}  // namespace

TEST_CASE("channels-last: small-plane MobileNet blocks run NHWC and compute the same",
          "[passes][cpu][nhwc]") {
  // On at every level (by default only where it pays: AVX-512), so that each level's kernels
  // run.
  ScopedEnv on("MINFER_CPU_CHANNELS_LAST", "1");
  for_each_isa([](cpu::Isa) {
    for (int64_t c : {8, 12}) {  // 12: channel counts that are not whole vectors
      INFO("channels " << c);
      std::mt19937 rng(5);
      const Graph g = mobile_blocks(9, c, rng);
      const Tensor x = random_tensor({2, c, 9, 9}, rng);
      for (int threads : {1, 2, 3}) {
        INFO("threads " << threads);
        Graph optimized;
        const NamedTensors want = run(clone_graph(g), 0, 1, x);
        const NamedTensors got = run(clone_graph(g), 2, threads, x, &optimized);
        std::map<std::string, int> ops = op_histogram(optimized);
        // The SE gate's convs (on a 1x1 plane, no depthwise among them) stay NCHW: their
        // [N, C, 1, 1] is the pooled NHWC's bytes, reshaped for the Mul.
        CHECK(ops["NhwcConv"] == 6);
        CHECK(ops["NhwcGlobalAveragePool"] == 2);
        CHECK(ops["Reshape"] == 1);
        // In: x (read by expand1 and as project1's residual) once; out: the graph output.
        CHECK(ops["Transpose"] == 2);
        REQUIRE(got.size() == want.size());
        for (const auto& [name, t] : want) {
          INFO(name);
          REQUIRE(got.at(name).shape() == t.shape());
          require_close(got.at(name), t, 1e-5, 1e-5);
        }
      }
    }
  });
}

TEST_CASE("channels-last: a group that begins with a depthwise conv reads NCHW there",
          "[passes][cpu][nhwc]") {
  // A MobileNet v2 block entered from a larger plane: its stride-2 depthwise conv reads the
  // NCHW input itself (nchw_input), so no transpose goes in; one comes out for the output.
  ScopedEnv on("MINFER_CPU_CHANNELS_LAST", "1");
  for_each_isa([](cpu::Isa) {
    std::mt19937 rng(8);
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("x", DType::f32, Shape{2, 24, 30, 30});
    Value* h = fused_conv(b, "dw1", x, 24, 24, 3, 2, true, rng, clip_attrs(0, 6));
    Value* y = fused_conv(b, "project1", h, 24, 8, 1, 1, false, rng);
    h = fused_conv(b, "expand2", y, 8, 24, 1, 1, false, rng, clip_attrs(0, 6));
    h = fused_conv(b, "dw2", h, 24, 24, 3, 1, true, rng, clip_attrs(0, 6));
    b.output(fused_conv(b, "project2", h, 24, 8, 1, 1, false, rng, {}, y));
    const Tensor xt = random_tensor({2, 24, 30, 30}, rng);
    for (int threads : {1, 3}) {
      Graph optimized;
      const NamedTensors want = run(clone_graph(g), 0, 1, xt);
      const NamedTensors got = run(clone_graph(g), 2, threads, xt, &optimized);
      std::map<std::string, int> ops = op_histogram(optimized);
      CHECK(ops["NhwcConv"] == 5);
      CHECK(ops["Transpose"] == 1);
      CHECK(optimized.find_node("dw1")->attrs.get_int("nchw_input", 0) == 1);
      require_close(got.begin()->second, want.begin()->second, 1e-5, 1e-5);
    }
  });
}

namespace {
// DeepLabv3's last MobileNet v3 blocks (5x5 and 3x3 depthwise, dilation `d`) on an h x w plane.
Graph dilated_blocks(int64_t h, int64_t w, int64_t d, std::mt19937& rng) {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", DType::f32, Shape{2, 24, h, w});
  Attributes dilated = clip_attrs(0, 6);
  dilated.set("dilations", std::vector<int64_t>{d, d});
  Value* t = fused_conv(b, "dw1", x, 24, 24, 5, 1, true, rng, dilated);
  Value* y = fused_conv(b, "project1", t, 24, 8, 1, 1, false, rng);
  t = fused_conv(b, "expand2", y, 8, 24, 1, 1, false, rng, clip_attrs(0, 6));
  t = fused_conv(b, "dw2", t, 24, 24, 3, 1, true, rng, dilated);
  b.output(fused_conv(b, "project2", t, 24, 8, 1, 1, false, rng, {}, y));
  return g;
}
}  // namespace

TEST_CASE("channels-last: dilated depthwise convs run NHWC, on planes up to 64x64",
          "[passes][cpu][nhwc]") {
  // The group's first conv is dilated: it reads a transposed input (the transposing NCHW
  // kernels are undilated). On 33x33 (a 520x520 DeepLabv3's) only a dilated group converts.
  ScopedEnv on("MINFER_CPU_CHANNELS_LAST", "1");
  for_each_isa([](cpu::Isa) {
    for (const auto& [h, w] : {std::pair<int64_t, int64_t>{9, 8}, {33, 33}}) {
      std::mt19937 rng(9);
      const Graph g = dilated_blocks(h, w, 2, rng);
      const Tensor xt = random_tensor({2, 24, h, w}, rng);
      for (int threads : {1, 3}) {
        INFO("plane " << h << "x" << w << ", threads " << threads);
        Graph optimized;
        const NamedTensors want = run(clone_graph(g), 0, 1, xt);
        const NamedTensors got = run(clone_graph(g), 2, threads, xt, &optimized);
        std::map<std::string, int> ops = op_histogram(optimized);
        CHECK(ops["NhwcConv"] == 5);
        CHECK(ops["Transpose"] == 2);
        CHECK(optimized.find_node("dw1")->attrs.get_int("nchw_input", 0) == 0);
        require_close(got.begin()->second, want.begin()->second, 1e-5, 1e-5);
      }
    }
    std::mt19937 rng(9);
    Graph optimized;
    run(dilated_blocks(33, 33, 1, rng), 2, 1, random_tensor({2, 24, 33, 33}, rng), &optimized);
    CHECK(op_histogram(optimized)["NhwcConv"] == 0);
  });
}

TEST_CASE("channels-last: what stays NCHW", "[passes][cpu][nhwc]") {
  std::mt19937 rng(6);
  const Tensor x8 = random_tensor({2, 8, 9, 9}, rng);
  auto nhwc_convs = [&](Graph g, const Tensor& x) {
    Graph optimized;
    run(std::move(g), 2, 1, x, &optimized);
    return op_histogram(optimized)["NhwcConv"];
  };
  SECTION("MINFER_CPU_CHANNELS_LAST=0 turns the pass off") {
    ScopedEnv off("MINFER_CPU_CHANNELS_LAST", "0");
    CHECK(nhwc_convs(mobile_blocks(9, 8, rng), x8) == 0);
  }
  SECTION("by default at every ISA level") {
    for_each_isa([&](cpu::Isa) { CHECK(nhwc_convs(mobile_blocks(9, 8, rng), x8) == 6); });
  }
  SECTION("planes above 28x28") {
    ScopedEnv on("MINFER_CPU_CHANNELS_LAST", "1");
    // (The stride-2 block's convs on 15x15 are two, too few to convert.)
    CHECK(nhwc_convs(mobile_blocks(30, 8, rng), random_tensor({2, 8, 30, 30}, rng)) == 0);
  }
  SECTION("pointwise convs with no depthwise conv among them (a ResNet's 1x1s)") {
    ScopedEnv on("MINFER_CPU_CHANNELS_LAST", "1");
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("x", DType::f32, Shape{2, 8, 9, 9});
    Value* h = fused_conv(b, "a", x, 8, 16, 1, 1, false, rng, clip_attrs(0, 6));
    h = fused_conv(b, "b", h, 16, 16, 1, 1, false, rng, clip_attrs(0, 6));
    b.output(fused_conv(b, "c", h, 16, 8, 1, 1, false, rng, {}, x));
    CHECK(nhwc_convs(std::move(g), x8) == 0);
  }
  SECTION("a lone depthwise conv") {
    ScopedEnv on("MINFER_CPU_CHANNELS_LAST", "1");
    Graph g;
    GraphBuilder b(g);
    Value* x = b.input("x", DType::f32, Shape{2, 8, 9, 9});
    b.output(fused_conv(b, "dw", x, 8, 8, 3, 1, true, rng));
    CHECK(nhwc_convs(std::move(g), x8) == 0);
  }
}

TEST_CASE("NhwcConv: the CPU kernel matches the reference", "[cpu][nhwc]") {
  // One node on NHWC tensors at opt level 0 (no pass runs): the kernel against the schema's
  // reference (FusedConv's on the NCHW transposes), pointwise and depthwise, with and without
  // bias, residual and activations, uneven channel counts and both strides.
  struct Case {
    int64_t c, m, k, stride, plane;
    bool bias, residual;
    std::string act;
    bool nchw_input = false;  // depthwise: X NCHW, Y NHWC
    bool planes = false;      // on AVX-512: by the plane kernel, transposed (14x14 and more)
    int64_t batch = 2;        // 1: the threads split a plane's rows (depthwise)
  };
  const std::vector<Case> cases{
      {8, 24, 1, 1, 7, true, false, "Clip"},   {24, 8, 1, 1, 7, true, true, ""},
      {19, 33, 1, 1, 5, false, true, "Relu"},  {40, 40, 3, 1, 7, true, false, "Clip"},
      {33, 33, 3, 2, 9, true, true, "Silu"},   {17, 17, 5, 1, 6, false, false, "Silu"},
      {48, 48, 5, 2, 14, true, false, "Clip"}, {3, 3, 3, 2, 4, true, true, ""},
      {40, 40, 3, 2, 15, true, false, "Clip", true}, {21, 21, 5, 1, 7, false, true, "Silu", true},
      {40, 40, 3, 2, 29, true, false, "Clip", true, true},
      {35, 35, 3, 1, 16, false, false, "Silu", true, true},  // a last block of 3 channels
      {24, 24, 3, 1, 14, true, true, "Relu", true},          // (a residual: not the planes)
      {24, 24, 3, 1, 14, true, false, "Clip", false, false, 1},
      {20, 20, 5, 2, 29, false, true, "Silu", false, false, 1},
      {40, 40, 3, 2, 29, true, false, "Clip", true, true, 1},
  };
  const OpSchema& schema = OpRegistry::global().get_op(kMinferDomain, "NhwcConv");
  for_each_isa([&](cpu::Isa isa) {
    for (const Case& t : cases) {
      INFO("C " << t.c << " M " << t.m << " K " << t.k << " stride " << t.stride << " plane "
                << t.plane << " act '" << t.act << "'" << (t.residual ? " residual" : "")
                << (t.nchw_input ? " nchw_input" : "") << " batch " << t.batch);
      std::mt19937 rng(7);
      const bool depthwise = t.k > 1;
      const int64_t out = (t.plane + 2 * (t.k / 2) - t.k) / t.stride + 1;
      Graph g;
      GraphBuilder b(g);
      const Shape xs = t.nchw_input ? Shape{t.batch, t.c, t.plane, t.plane}
                                    : Shape{t.batch, t.plane, t.plane, t.c};
      Value* x = b.input("x", DType::f32, xs);
      Attributes attrs = t.act == "Clip" ? clip_attrs(-0.5f, 0.5f) : Attributes{};
      if (!t.act.empty() && t.act != "Clip") attrs.set("activation", t.act);
      attrs.set("group", depthwise ? t.c : int64_t{1});
      attrs.set("strides", std::vector<int64_t>{t.stride, t.stride});
      attrs.set("pads", std::vector<int64_t>(4, t.k / 2));
      if (t.nchw_input) attrs.set("nchw_input", int64_t{1});
      const Tensor w = random_tensor({t.m, depthwise ? 1 : t.c, t.k, t.k}, rng, -0.3f, 0.3f);
      const Tensor bias = random_tensor({t.m}, rng);
      const Tensor z = random_tensor({t.batch, out, out, t.m}, rng);
      std::vector<Value*> in{x, b.constant("w", w), t.bias ? b.constant("b", bias) : nullptr};
      if (t.residual) in.push_back(b.constant("z", z));
      Node* node = g.add_node("NhwcConv", "conv", in, 1, attrs, kMinferDomain);
      b.output(node->outputs[0]);
      const Tensor xt = random_tensor(xs, rng);
      const Tensor want =
          schema.reference(*node, {xt, w, t.bias ? bias : Tensor(), t.residual ? z : Tensor()})[0];
      for (int threads : {1, 3}) {
        INFO("threads " << threads);
        SessionOptions o;
        o.optimization_level = 0;
        o.threads = threads;
        Session s(clone_graph(g), o);
        bool on_kernel = false, on_planes = false;
        for (const auto& [kernel, steps] : s.plan_stats({{"x", xt.shape()}}).kernels) {
          on_kernel = on_kernel || kernel.rfind("cpu-nhwc-conv", 0) == 0;
          on_planes = on_planes || kernel.find("depthwise-planes-to-nhwc") != std::string::npos;
        }
        REQUIRE(on_kernel);
        CHECK(on_planes == (t.planes && isa >= cpu::Isa::avx512));
        const Tensor got = s.run({{"x", xt}}).begin()->second;
        REQUIRE(got.shape() == Shape({t.batch, out, out, t.m}));
        require_close(got, want, 1e-5, 1e-5);
      }
    }
  });
}
