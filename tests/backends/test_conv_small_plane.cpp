// The CPU Conv kernel's paths with the output channels in the vector lanes, against the Conv
// reference plus the residual and the activation: the small-plane path
// (backends/cpu/conv_small_plane.h, for 7x7-like output planes; 3x3 stride 1 as Winograd
// F(2x2, 3x3)) and the rule that picks it, the strided path (backends/cpu/conv_strided.h,
// an implicit GEMM for stride-2 convs) and the vector path of 1x1 convs on 1x1 planes
// (squeeze-and-excitation blocks).
#include <cmath>

#include "backends/conv_test_run.h"
#include "backends/cpu/conv.h"
#include "backends/cpu/isa.h"
#include "isa/for_each_isa.h"
#include "minfer/registry.h"
#include "test_util.h"

namespace minfer {
namespace {

struct SmallCase {
  const char* what;
  Shape x, w;
  std::vector<int64_t> strides, pads;  // pads: top, left, bottom, right
  bool bias, residual;
  int act;  // 0 none, 1 Relu, 2 Clip [-0.5, 0.75], 3 Silu
  int64_t group = 1;
};

// Large enough for pays() (the products per moved value: see conv_small_plane.h).
const SmallCase kCases[] = {
    {"3x3 on 7x7, batch 2, residual and Relu (ResNet's last stage)",
     {2, 128, 7, 7}, {96, 128, 3, 3}, {1, 1}, {1, 1, 1, 1}, true, true, 1},
    {"1x1 on 7x7: the channels-last input is the operand", {1, 2048, 7, 7},
     {512, 2048, 1, 1}, {1, 1}, {0, 0, 0, 0}, true, false, 2},
    {"3x3 stride 2, 14x14 -> 7x7, no bias", {1, 256, 14, 14}, {512, 256, 3, 3}, {2, 2},
     {1, 1, 1, 1}, false, false, 0},
    {"3x3 stride 2 on an odd plane, uneven pads, residual", {1, 128, 11, 9}, {384, 128, 3, 3},
     {2, 2}, {1, 0, 1, 1}, true, true, 0},
    // Winograd F(2x2, 3x3) (3x3 stride 1): a partial vector of input channels, Clip, no bias;
    // a 5x4 output (half tiles at the edges) from uneven pads.
    {"3x3 on 7x7, 136 input channels, Clip", {1, 136, 7, 7}, {96, 136, 3, 3}, {1, 1},
     {1, 1, 1, 1}, false, false, 2},
    {"3x3 on 6x5, pads 0/1/1/0 -> 5x4, residual", {1, 256, 6, 5}, {128, 256, 3, 3}, {1, 1},
     {0, 1, 1, 0}, true, true, 1},
    // 64 positions, which the position tiles fill: F(2x2, 3x3) still takes it.
    {"3x3 on 8x8 (a 256x256 input's last stage), residual and Relu", {1, 128, 8, 8},
     {64, 128, 3, 3}, {1, 1}, {1, 1, 1, 1}, true, true, 1},
    // Fewer channels on smaller planes (DenseNet-121 at a 64x64 input), taken for what they
    // save against the position tiles.
    {"3x3 on 8x8, 128 -> 32 channels", {1, 128, 8, 8}, {32, 128, 3, 3}, {1, 1}, {1, 1, 1, 1},
     true, false, 1},
    {"3x3 on 2x2, 32 channels, batch 2, residual and Clip", {2, 128, 2, 2}, {32, 128, 3, 3},
     {1, 1}, {1, 1, 1, 1}, true, true, 2},
    // One F(2x2, 3x3) tile in each of 4 images: enough tiles; in one image: the direct product.
    {"3x3 on 2x2, batch 4", {4, 128, 2, 2}, {32, 128, 3, 3}, {1, 1}, {1, 1, 1, 1}, true, false, 1},
    {"3x3 on 2x2, batch 1 (GoogLeNet's last stage at 64x64)", {1, 192, 2, 2}, {96, 192, 3, 3},
     {1, 1}, {1, 1, 1, 1}, true, false, 1},
    // Output channels that are not whole vectors: the direct product only.
    {"1x1 on 3x3 to 1000 channels (SqueezeNet's classifier)", {1, 512, 3, 3},
     {1000, 512, 1, 1}, {1, 1}, {0, 0, 0, 0}, true, false, 1},
    {"3x3 on 7x7 to 40 channels", {2, 320, 7, 7}, {40, 320, 3, 3}, {1, 1}, {1, 1, 1, 1}, true,
     true, 3},
    {"5x5 on 3x3 (9 of 16 lanes), 16 channels (one vector), no bias", {1, 64, 3, 3},
     {16, 64, 5, 5}, {1, 1}, {2, 2, 2, 2}, false, false, 0},
    {"1x1 on 2x2 (4 of 16 lanes) to 128 channels, residual and Relu", {1, 672, 2, 2},
     {128, 672, 1, 1}, {1, 1}, {0, 0, 0, 0}, true, true, 1},
};

bool is_3x3_stride_1(const SmallCase& c) {
  return c.w[2] == 3 && c.w[3] == 3 && c.strides[0] == 1 && c.strides[1] == 1;
}

// F(2x2, 3x3) where it has enough tiles (2x2 outputs, in all images) to reuse its weights.
bool takes_winograd(const SmallCase& c, const Shape& ys) {
  return is_3x3_stride_1(c) && c.w[0] % 16 == 0 &&
         c.x[0] * ((ys[2] + 1) / 2) * ((ys[3] + 1) / 2) >= cpu::SmallPlaneConv::kMinWinogradTiles;
}

Attributes conv_attrs(const SmallCase& c) {
  Attributes a;
  a.set("strides", c.strides);
  a.set("pads", c.pads);
  if (c.group > 1) a.set("group", c.group);
  return a;
}

Node fused_conv(const SmallCase& c) {
  Node node;
  node.name = "conv";
  node.op_type = "FusedConv";
  node.domain = kMinferDomain;
  node.attrs = conv_attrs(c);
  node.attrs.set("kernel_shape", std::vector<int64_t>{c.w[2], c.w[3]});
  test::set_activation(node.attrs, c.act);
  return node;
}

// The reference: plain Conv, plus the residual, then the activation.
Tensor expected(const SmallCase& c, const std::vector<Tensor>& in) {
  return test::conv_reference(conv_attrs(c), in, c.bias, c.residual, c.act);
}

using Result = test::ConvRun;

// cpu::ConvKernel on the case's inputs (weights and bias constant, a poisoned workspace).
Result run_case(const SmallCase& c, const std::vector<Tensor>& in, const Shape& ys, int threads) {
  Node node = fused_conv(c);
  return test::run_fused_conv(node, in, ys, threads);
}

std::vector<Tensor> make_inputs(const SmallCase& c, const Shape& ys, std::mt19937& rng) {
  std::vector<Tensor> in{test::random_tensor(c.x, rng), test::random_tensor(c.w, rng)};
  in.push_back(c.bias ? test::random_tensor(Shape{c.w[0]}, rng) : Tensor());
  if (c.residual) in.push_back(test::random_tensor(ys, rng));
  return in;
}

Shape output_shape(const SmallCase& c) {
  auto out = [&](int64_t in, int64_t k, int64_t s, int64_t p0, int64_t p1) {
    return (in + p0 + p1 - k) / s + 1;
  };
  return Shape{c.x[0], c.w[0], out(c.x[2], c.w[2], c.strides[0], c.pads[0], c.pads[2]),
               out(c.x[3], c.w[3], c.strides[1], c.pads[1], c.pads[3])};
}

// With the environment switch `off` set to 0, the case takes another path and still matches.
void check_off(const SmallCase& c, const std::vector<Tensor>& in, const Shape& ys,
               const Tensor& want, const char* off, const std::string& path) {
  INFO(c.what << ", " << off << "=0");
  test::ScopedEnv unset(off, "0");
  const Result other = run_case(c, in, ys, 2);
  CHECK(other.variant.rfind(path, 0) != 0);
  test::require_close(other.y, want, 1e-4, 1e-4);
}

// The case on 1-3 threads takes the path whose variant() starts with `path` and matches want.
void check_path(const SmallCase& c, const std::vector<Tensor>& in, const Shape& ys,
                const Tensor& want, const std::string& path) {
  for (int threads : {1, 2, 3}) {
    INFO(c.what << ", threads " << threads);
    const Result got = run_case(c, in, ys, threads);
    INFO("variant " << got.variant);
    CHECK(got.variant.rfind(path, 0) == 0);
    test::require_close(got.y, want, 1e-4, 1e-4);
  }
}

// Each case at every ISA level takes the strided path and matches the reference; with the
// switch `off` set to 0 it takes another path.
template <size_t N>
void check_strided_path(const SmallCase (&cases)[N], const char* off, std::mt19937& rng,
                        cpu::Isa lowest = cpu::Isa::avx2) {
  test::for_each_isa([&](cpu::Isa isa) {
    if (isa < lowest) return;
    for (const SmallCase& c : cases) {
      const Shape ys = output_shape(c);
      const std::vector<Tensor> in = make_inputs(c, ys, rng);
      const Tensor want = expected(c, in);
      check_path(c, in, ys, want, "strided ");
      check_off(c, in, ys, want, off, "strided");
    }
  });
}

}  // namespace

TEST_CASE("cpu Conv puts the channels in the lanes on small planes", "[cpu]") {
  if (!cpu::has_any_isa()) {
    WARN("no SIMD level on this CPU: the path is not offered");
    return;
  }
  // The path replaces ConvGemm's tiles, which take these convs on AVX-512 only: forced here so
  // that every level's tiles are checked. (The strided path, which would take the stride-2
  // ones there, is tested below.)
  test::ScopedEnv wide("MINFER_CPU_CONV_GEMM_ALL", "1");
  test::ScopedEnv no_strided("MINFER_CPU_STRIDED", "0");
  std::mt19937 rng(3);
  test::for_each_isa([&](cpu::Isa) {
    for (const SmallCase& c : kCases) {
      const Shape ys = output_shape(c);
      const std::vector<Tensor> in = make_inputs(c, ys, rng);
      const Tensor want = expected(c, in);
      const bool winograd = takes_winograd(c, ys);
      check_path(c, in, ys, want, winograd ? "small-plane winograd " : "small-plane ");
      if (winograd) {
        INFO(c.what << ", where ConvGemm's tiles would not take it (Eigen's on AVX2)");
        test::ScopedEnv eigen("MINFER_CPU_CONV_GEMM_ALL", "0");
        check_path(c, in, ys, want, "small-plane winograd ");
      }
      if (winograd) {
        // (A plane that the position tiles fill goes back to them.)
        INFO(c.what << ", MINFER_CPU_WINOGRAD=0: the direct product");
        test::ScopedEnv direct("MINFER_CPU_WINOGRAD", "0");
        const Result got = run_case(c, in, ys, 2);
        const bool filled = ys[2] * ys[3] % 16 == 0;
        CHECK((got.variant.rfind("small-plane ", 0) == 0) != filled);
        CHECK(got.variant.find("winograd") == std::string::npos);
        test::require_close(got.y, want, 1e-4, 1e-4);
      }
      check_off(c, in, ys, want, "MINFER_CPU_SMALL_PLANE", "small-plane");
    }
  });
}

TEST_CASE("cpu Conv runs stride-2 convs as an implicit GEMM", "[cpu]") {
  if (!cpu::has_any_isa()) {
    WARN("no SIMD level on this CPU: the path is not offered");
    return;
  }
  const SmallCase cases[] = {
      {"3x3 on 28x28 -> 14x14, 3 blocks of 32 channels, batch 2, residual and Relu",
       {2, 64, 28, 28}, {96, 64, 3, 3}, {2, 2}, {1, 1, 1, 1}, true, true, 1},
      {"a 7x7 stem on 3 channels of an odd plane, 40 channels (a part block), Clip",
       {1, 3, 37, 30}, {40, 3, 7, 7}, {2, 2}, {3, 3, 3, 3}, false, false, 2},
      {"3x3, pads 0/1/1/0 on 23x19, 16 channels (one vector), residual", {1, 24, 23, 19},
       {16, 24, 3, 3}, {2, 2}, {0, 1, 1, 0}, true, true, 0},
      {"5x5, stride 1 down the rows and 2 along them, Silu", {1, 20, 13, 17}, {48, 20, 5, 5},
       {1, 2}, {2, 2, 2, 2}, true, false, 3},
      {"rows of 9 and 30 positions (9 or 5 + 4; 4 of 7 or 8, or 5 of 6)", {1, 8, 18, 60},
       {32, 8, 3, 3}, {2, 2}, {1, 1, 1, 1}, true, true, 1},
      {"a 9x9 output, 7 channels", {1, 16, 17, 17}, {7, 16, 3, 3}, {2, 2}, {1, 1, 1, 1}, true,
       false, 2},
      {"64 KB of input rows an output row: 10 rows in bands of 4 (the last of 2), residual",
       {1, 256, 19, 30}, {40, 256, 3, 3}, {2, 2}, {1, 1, 1, 1}, true, true, 1},
      // On 16 registers, tiles of 6 across rows: spans of 3 rows of 14, in bands of 6 rows
      // (from 4) and 2.
      {"rows of 14 in spans of 3, 14 rows in bands of 6, residual, Clip", {1, 282, 28, 28},
       {24, 282, 3, 3}, {2, 2}, {1, 1, 1, 1}, true, true, 2},
  };
  std::mt19937 rng(7);
  test::ScopedEnv on("MINFER_CPU_STRIDED", "1");  // (by default on AMD's CPUs only)
  check_strided_path(cases, "MINFER_CPU_STRIDED", rng);
  // At stride 1, on the 512-bit levels: the kernels Winograd does not take (Inception v3's).
  const SmallCase stride1[] = {
      {"1x7 on 17x17, 80 channels (2 blocks and a half), residual and Relu", {1, 24, 17, 17},
       {80, 24, 1, 7}, {1, 1}, {0, 3, 0, 3}, true, true, 1},
      {"7x1 on 17x13, batch 2, Clip", {2, 20, 17, 13}, {32, 20, 7, 1}, {1, 1}, {3, 0, 3, 0},
       true, false, 2},
      {"5x5 on 35x35, K = 1200: rows of 35 in 3 deep tiles, residual", {1, 48, 35, 35},
       {40, 48, 5, 5}, {1, 1}, {2, 2, 2, 2}, false, true, 0},
      {"3x3 on an 11-row plane (not Winograd's), Silu", {1, 16, 11, 30}, {32, 16, 3, 3},
       {1, 1}, {1, 1, 1, 1}, true, false, 3},
  };
  if (cpu::isa_supported(cpu::Isa::avx512))
    check_strided_path(stride1, "MINFER_CPU_STRIDED", rng, cpu::Isa::avx512);
}

TEST_CASE("cpu Conv runs grouped convs with each group's output channels in the lanes", "[cpu]") {
  if (!cpu::has_any_isa()) {
    WARN("no SIMD level on this CPU: the path is not offered");
    return;
  }
  // ResNeXt's 3x3 convs (4-32 channels a group), and the edges of the lanes' layout: groups of
  // fewer channels than a vector's lanes go 2 or 4 to a vector where they divide the lanes
  // (4 and 8 channels on AVX-512, 2 and 4 on AVX2), else one group to a partly filled vector.
  const SmallCase cases[] = {
      {"32 groups of 4 on 20x20, residual and Relu (ResNeXt's first stage)", {1, 128, 20, 20},
       {128, 4, 3, 3}, {1, 1}, {1, 1, 1, 1}, true, true, 1, 32},
      {"16 groups of 8, stride 2 on an odd plane, batch 2, Clip", {2, 128, 15, 13},
       {128, 8, 3, 3}, {2, 2}, {1, 1, 1, 1}, true, false, 2, 16},
      {"8 groups of 16 on 14x14, no bias, residual", {1, 128, 14, 14}, {128, 16, 3, 3}, {1, 1},
       {1, 1, 1, 1}, false, true, 0, 8},
      {"4 groups of 32 on 7x7 (two vectors a group), Relu", {1, 128, 7, 7}, {128, 32, 3, 3},
       {1, 1}, {1, 1, 1, 1}, true, false, 1, 4},
      {"6 groups of 4 channels (4 groups to a vector, then 2), Silu", {1, 24, 9, 11},
       {24, 4, 3, 3}, {1, 1}, {1, 1, 1, 1}, true, false, 3, 6},
      {"3 groups of 8 -> 2 channels (a vector's few lanes), uneven pads", {1, 24, 10, 9},
       {6, 8, 3, 3}, {1, 1}, {0, 1, 1, 0}, true, true, 1, 3},
      {"4 groups of 6 -> 12 channels (not a divisor of the lanes), 5x5", {1, 24, 12, 12},
       {48, 6, 5, 5}, {1, 1}, {2, 2, 2, 2}, true, false, 2, 4},
      {"5 groups of 8 (the last block one group), rows of 30 in 3 tiles, residual and Relu",
       {1, 40, 9, 30}, {40, 8, 3, 3}, {1, 1}, {1, 1, 1, 1}, true, true, 1, 5},
      {"3 groups of 24 (RegNet-X's), rows of 30 in tiles of at most 9, stride 2, Relu",
       {1, 72, 21, 60}, {72, 24, 3, 3}, {2, 2}, {1, 1, 1, 1}, true, false, 1, 3},
      {"2 groups of 56 (32 + 24 channels), no bias, residual", {1, 112, 10, 12},
       {112, 56, 3, 3}, {1, 1}, {1, 1, 1, 1}, false, true, 0, 2},
  };
  std::mt19937 rng(11);
  // On AVX-512 two groups of 8 channels, or 17-24 channels, go to 512-bit vectors or to 256-bit
  // ones (the default where the CPU splits 512-bit operations): both checked.
  for (const char* halves : {"0", "1"}) {
    INFO("MINFER_CPU_STRIDED_HALVES=" << halves);
    test::ScopedEnv env("MINFER_CPU_STRIDED_HALVES", halves);
    check_strided_path(cases, "MINFER_CPU_GROUPED", rng);
  }
}

TEST_CASE("the strided path takes deep enough kernels larger than 1x1 at a stride of 2, or of 1 "
          "on large planes at 512 bits, on AMD",
          "[cpu]") {
  {
    const test::ScopedEnv unset("MINFER_CPU_STRIDED", "");
    CHECK(cpu::strided_conv_enabled() == cpu::cpu_is_amd());
  }
  const test::ScopedEnv on("MINFER_CPU_STRIDED", "1");
  using S = cpu::StridedConv::Shape;
  const S resnet{1, 128, 56, 56, 128, 28, 28, 3, 3, 2, 2, 1, 1, 1, 1};
  CHECK(cpu::StridedConv::pays(resnet, cpu::Isa::avx512));
  CHECK(cpu::StridedConv::pays(resnet, cpu::Isa::avx512_vnni));
  CHECK(cpu::StridedConv::pays(resnet, cpu::Isa::avx2));  // 6-position tiles on 16 registers
  S stride1 = resnet;  // (a 3x3 one Winograd takes first, where it applies)
  stride1.sh = stride1.sw = 1;
  CHECK(cpu::StridedConv::pays(stride1, cpu::Isa::avx512));
  CHECK_FALSE(cpu::StridedConv::pays(stride1, cpu::Isa::avx2));  // no gain measured there
  S small1 = stride1;  // 11x11: SmallPlaneConv's range
  small1.oh = small1.ow = 11;
  CHECK_FALSE(cpu::StridedConv::pays(small1, cpu::Isa::avx512));
  S dilated = resnet;
  dilated.dh = dilated.dw = 2;
  CHECK_FALSE(cpu::StridedConv::pays(dilated, cpu::Isa::avx512));
  S pointwise = resnet;  // a downsampling 1x1: one step per channel, no gain measured
  pointwise.kh = pointwise.kw = 1;
  CHECK_FALSE(cpu::StridedConv::pays(pointwise, cpu::Isa::avx512));
  const S stem7{1, 3, 224, 224, 64, 112, 112, 7, 7, 2, 2, 1, 1, 3, 3};  // K = 147
  CHECK(cpu::StridedConv::pays(stem7, cpu::Isa::avx512));
  S stem3 = stem7;  // K = 27: ConvGemm's implicit path
  stem3.kh = stem3.kw = 3;
  CHECK_FALSE(cpu::StridedConv::pays(stem3, cpu::Isa::avx512));
  const S last{1, 512, 14, 14, 512, 7, 7, 3, 3, 2, 2, 1, 1, 1, 1};  // a 7x7 output
  CHECK_FALSE(cpu::StridedConv::pays(last, cpu::Isa::avx512));
}

TEST_CASE("the strided path takes grouped convs larger than 1x1 at strides 1 and 2, on any CPU",
          "[cpu]") {
  const test::ScopedEnv off("MINFER_CPU_STRIDED", "0");  // (the dense convs' switch)
  using S = cpu::StridedConv::Shape;
  const S resnext{1, 512, 14, 14, 512, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 32};  // 16 a group
  CHECK(cpu::StridedConv::pays(resnext, cpu::Isa::avx512));
  CHECK(cpu::StridedConv::pays(resnext, cpu::Isa::avx2));
  S strided = resnext;
  strided.sh = strided.sw = 2;
  strided.oh = strided.ow = 7;
  CHECK(cpu::StridedConv::pays(strided, cpu::Isa::avx512));  // (7x7 planes too)
  S shallow = resnext;  // 4 channels a group, 2x2 kernels: 16 steps
  shallow.group = 128;
  shallow.kh = shallow.kw = 2;
  CHECK_FALSE(cpu::StridedConv::pays(shallow, cpu::Isa::avx512));
  S pointwise = resnext;
  pointwise.kh = pointwise.kw = 1;
  CHECK_FALSE(cpu::StridedConv::pays(pointwise, cpu::Isa::avx512));
  S dilated = resnext;
  dilated.dh = dilated.dw = 2;
  CHECK_FALSE(cpu::StridedConv::pays(dilated, cpu::Isa::avx512));
  S stride3 = resnext;
  stride3.sw = 3;
  CHECK_FALSE(cpu::StridedConv::pays(stride3, cpu::Isa::avx512));
  const test::ScopedEnv grouped_off("MINFER_CPU_GROUPED", "0");
  CHECK_FALSE(cpu::StridedConv::pays(resnext, cpu::Isa::avx512));
}

TEST_CASE("cpu Conv runs 1x1 convs on 1x1 planes as vector products", "[cpu]") {
  if (!cpu::has_any_isa()) {
    WARN("no SIMD level on this CPU: the path is not offered");
    return;
  }
  const SmallCase cases[] = {
      {"an SE block's squeeze, 1152 -> 48, batch 2, Relu", {2, 1152, 1, 1}, {48, 1152, 1, 1},
       {1, 1}, {0, 0, 0, 0}, true, false, 1},
      {"its excitation, 48 -> 1152, Clip, no bias", {1, 48, 1, 1}, {1152, 48, 1, 1}, {1, 1},
       {0, 0, 0, 0}, false, false, 2},
      {"uneven channels, batch 3", {3, 20, 1, 1}, {37, 20, 1, 1}, {1, 1}, {0, 0, 0, 0}, true,
       false, 0},
  };
  std::mt19937 rng(5);
  test::for_each_isa([&](cpu::Isa) {
    for (const SmallCase& c : cases) {
      const Shape ys = output_shape(c);
      const std::vector<Tensor> in = make_inputs(c, ys, rng);
      check_path(c, in, ys, expected(c, in), "vector ");
    }
  });
  // A residual input keeps the conv on ConvGemm's (or Eigen's) path, which adds it.
  SmallCase residual = cases[2];
  residual.residual = true;
  const Shape ys = output_shape(residual);
  const std::vector<Tensor> in = make_inputs(residual, ys, rng);
  const Result got = run_case(residual, in, ys, 2);
  CHECK(got.variant.rfind("vector", 0) != 0);
  test::require_close(got.y, expected(residual, in), 1e-4, 1e-4);
}

TEST_CASE("the small-plane path is kept to planes whose tiles would leave lanes empty, or to "
          "F(2x2, 3x3), and to what it saves", "[cpu]") {
  using S = cpu::SmallPlaneConv::Shape;
  auto shape = [](int64_t m, int64_t oh, int64_t ow) {
    return S{1, 64, oh, ow, m, oh, ow, 3, 3, 1, 1, 1, 1, 1, 1};
  };
  CHECK(cpu::SmallPlaneConv::pays(shape(512, 7, 7), 32));
  CHECK(cpu::SmallPlaneConv::pays(shape(512, 7, 7), 16));
  CHECK_FALSE(cpu::SmallPlaneConv::pays(shape(512, 14, 14), 32));  // 196 positions
  // Whole tiles already: only F(2x2, 3x3) (3x3 stride 1) pays there.
  CHECK(cpu::SmallPlaneConv::pays(shape(512, 8, 8), 32) == cpu::winograd_enabled());
  S strided = shape(512, 8, 8);
  strided.sh = strided.sw = 2;
  strided.h = strided.w = 16;
  CHECK_FALSE(cpu::SmallPlaneConv::pays(strided, 32));
  CHECK_FALSE(cpu::SmallPlaneConv::pays(shape(40, 7, 7), 32));     // channels: not whole vectors
  // 1x1 convs: enough multiply-adds per moved value (see pays()), or not.
  auto pointwise = [&](int64_t c, int64_t m, int64_t side) {
    S s = shape(m, side, side);
    s.c = c;
    s.h = s.w = side;
    s.kh = s.kw = 1;
    return cpu::SmallPlaneConv::pays(s, 32);
  };
  CHECK(pointwise(512, 2048, 7));        // ResNet-50's expansions: 410
  CHECK(pointwise(2048, 512, 7));        // and reductions: 410
  CHECK_FALSE(pointwise(1152, 192, 7));  // EfficientNet-B0's projection: 165
  CHECK_FALSE(pointwise(320, 1280, 7));  // MobileNet v2's last conv: 256
  // What the small planes save against tiles with few lanes filled (DenseNet-121 at 64x64).
  CHECK(pointwise(992, 128, 2));         // 4 of 16 lanes: 3 x 113 saved per moved value
  CHECK_FALSE(pointwise(992, 128, 4));   // 16 of 16 lanes: nothing saved (and 113 < 300)
  CHECK_FALSE(pointwise(16, 128, 2));    // 3 x 14
  auto dense_3x3 = [&](int64_t side) {  // 128 -> 32 channels, padded: F(2x2, 3x3)
    S s = shape(32, side, side);
    s.c = 128;
    return cpu::SmallPlaneConv::pays(s, 32);
  };
  for (int64_t side : {2, 4, 8}) CHECK(dense_3x3(side) == cpu::winograd_enabled());
}

}  // namespace minfer
