// The CPU Conv kernel's region path (backends/cpu/conv_regions.h: dilated convs whose taps read
// mostly padding, summed only over the taps that read the input, rectangle by rectangle),
// against the Conv reference plus the activation, at every ISA level and on 1-3 threads.
#include "backends/conv_test_run.h"
#include "backends/cpu/conv_regions.h"
#include "backends/cpu/isa.h"
#include "isa/for_each_isa.h"
#include "minfer/registry.h"
#include "test_util.h"

namespace minfer {
namespace {

struct DilatedCase {
  const char* what;
  Shape x, w;
  std::vector<int64_t> strides, dilations, pads;  // pads: top, left, bottom, right
  bool bias;
  int act;       // 0 none, 1 Relu, 2 Clip [-0.5, 0.75], 3 Silu
  bool regions;  // whether the region path takes it
};

const DilatedCase kCases[] = {
    {"ASPP rate 24 on 33x33 (a 520x520 DeepLabv3's), 20 channels out, Relu",
     {1, 40, 33, 33},
     {20, 40, 3, 3},
     {1, 1},
     {24, 24},
     {24, 24, 24, 24},
     true,
     1,
     true},
    {"rate 12 on 33x33, batch 2, Silu after the last tap, no bias",
     {2, 24, 33, 33},
     {30, 24, 3, 3},
     {1, 1},
     {12, 12},
     {12, 12, 12, 12},
     false,
     3,
     true},
    {"rate 6 on 9x13: other bands per dim, Clip",
     {1, 16, 9, 13},
     {12, 16, 3, 3},
     {1, 1},
     {6, 6},
     {6, 6, 6, 6},
     true,
     2,
     true},
    {"stride 2, dilation 4 on 15x15",
     {1, 32, 15, 15},
     {18, 32, 3, 3},
     {2, 2},
     {4, 4},
     {4, 4, 4, 4},
     true,
     0,
     true},
    {"5x5, dilation 3 on 10x10",
     {1, 8, 10, 10},
     {7, 8, 5, 5},
     {1, 1},
     {3, 3},
     {6, 6, 6, 6},
     true,
     1,
     true},
    {"rows of taps all in the padding (pads 6 above a 5-row plane): the bias alone there",
     {1, 8, 5, 7},
     {6, 8, 3, 3},
     {1, 1},
     {2, 2},
     {6, 2, 6, 2},
     true,
     2,
     true},
    {"dilation 2 on 40x40: padding only at the borders, not taken",
     {1, 16, 40, 40},
     {16, 16, 3, 3},
     {1, 1},
     {2, 2},
     {2, 2, 2, 2},
     true,
     1,
     false},
};

Attributes conv_attrs(const DilatedCase& c) {
  Attributes a;
  a.set("strides", c.strides);
  a.set("dilations", c.dilations);
  a.set("pads", c.pads);
  return a;
}

Node fused_conv(const DilatedCase& c) {
  Node node;
  node.name = "conv";
  node.op_type = "FusedConv";
  node.domain = kMinferDomain;
  node.attrs = conv_attrs(c);
  test::set_activation(node.attrs, c.act);
  return node;
}

// The reference: plain Conv, then the activation.
Tensor expected(const DilatedCase& c, const std::vector<Tensor>& in) {
  return test::conv_reference(conv_attrs(c), in, c.bias, false, c.act);
}

}  // namespace

TEST_CASE("cpu Conv sums a dilated conv over the taps that read the input only", "[cpu]") {
  if (!cpu::has_any_isa()) {
    WARN("no SIMD level on this CPU: the path is not offered");
    return;
  }
  std::mt19937 rng(12);
  test::for_each_isa([&](cpu::Isa) {
    for (const DilatedCase& c : kCases) {
      std::vector<Tensor> in{test::random_tensor(c.x, rng), test::random_tensor(c.w, rng)};
      in.push_back(c.bias ? test::random_tensor(Shape{c.w[0]}, rng) : Tensor());
      const Tensor want = expected(c, in);
      for (int threads : {1, 2, 3}) {
        INFO(c.what << ", threads " << threads);
        const test::ConvRun got = test::run_fused_conv(fused_conv(c), in, want.shape(), threads);
        INFO("variant " << got.variant);
        CHECK((got.variant.rfind("regions ", 0) == 0) == c.regions);
        test::require_close(got.y, want, 1e-4, 1e-4);
      }
    }
  });
}

}  // namespace minfer
