// The Winograd F(4x4, 3x3) path of the CPU Conv kernel (backends/cpu/winograd.h) against a
// float64 direct convolution, and its switch (MINFER_CPU_WINOGRAD=0 falls back to im2col).
//
// Error bound: Winograd's transforms multiply inputs by up to 5 and products by up to 8 before
// the cancellations of the inverse transform, so its rounding error follows the output's scale
// rather than each output's magnitude: the measure is max |y - exact| / max |exact| (exact:
// float64, the same bias, residual and clamp). Measured on these cases (inputs and weights
// uniform in [-1, 1], 32 to 300 input channels, 1-3 threads, every ISA level of a Zen 4):
// 2.6e-6 to 1.2e-5 for Winograd, 2.8e-7 to 5.7e-7 for im2col. kRelBound leaves 1.7x over the
// worst Winograd case; one wrong coefficient in the inverse transform (8 -> 7) fails most cases.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "backends/cpu/conv.h"
#include "backends/conv_test_run.h"
#include "isa/for_each_isa.h"
#include "test_util.h"

namespace minfer {
namespace {

constexpr double kRelBound = 2e-5;

struct WinoCase {
  const char* what;
  Shape x;
  int64_t m;
  std::vector<int64_t> pads;  // top, left, bottom, right
  bool bias, residual;
  int act;  // 0 none, 1 Relu, 2 Clip [-0.5, 0.75] * the output's scale
  int64_t d = 1;  // the dilation (winograd_dilated.h: d * d phase planes)
};

using Result = test::ConvRun;

// Runs a FusedConv node (Conv + bias + residual + activation) through cpu::ConvKernel.
Result run_conv(const WinoCase& c, const std::vector<Tensor>& inputs, const Shape& ys,
                float lo, float hi, int threads) {
  Node node;
  node.name = "conv";
  node.op_type = "FusedConv";
  node.domain = kMinferDomain;
  node.attrs.set("strides", std::vector<int64_t>{1, 1});
  node.attrs.set("pads", c.pads);
  if (c.d != 1) node.attrs.set("dilations", std::vector<int64_t>{c.d, c.d});
  if (c.act == 1) node.attrs.set("activation", std::string("Relu"));
  if (c.act == 2) {
    node.attrs.set("activation", std::string("Clip"));
    node.attrs.set("activation_min", lo);
    node.attrs.set("activation_max", hi);
  }
  return test::run_fused_conv(node, inputs, ys, threads);
}

// The exact (float64) pre-activation output conv(x, w) + b + z.
std::vector<double> exact_conv(const WinoCase& c, const std::vector<Tensor>& in, const Shape& ys) {
  const int64_t n = c.x[0], ch = c.x[1], h = c.x[2], w = c.x[3];
  const int64_t m = ys[1], oh = ys[2], ow = ys[3];
  const float* x = in[0].data<float>();
  const float* wt = in[1].data<float>();
  std::vector<double> y(size_t(n * m * oh * ow));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < m; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double s = c.bias ? double(in[2].data<float>()[o]) : 0.0;
          for (int64_t k = 0; k < ch; ++k)
            for (int64_t di = 0; di < 3; ++di) {
              const int64_t ih = i + di * c.d - c.pads[0];
              if (ih < 0 || ih >= h) continue;
              for (int64_t dj = 0; dj < 3; ++dj) {
                const int64_t iw = j + dj * c.d - c.pads[1];
                if (iw < 0 || iw >= w) continue;
                s += double(x[((b * ch + k) * h + ih) * w + iw]) *
                     double(wt[((o * ch + k) * 3 + di) * 3 + dj]);
              }
            }
          const size_t at = size_t(((b * m + o) * oh + i) * ow + j);
          if (c.residual) s += double(in[3].data<float>()[at]);
          y[at] = s;
        }
  return y;
}

const WinoCase kCases[] = {
    {"the smallest plane and channel counts that take Winograd", {1, 8, 12, 12}, 1, {1, 1, 1, 1}, false, false, 0},
    {"16 input channels, 5 output channels, residual and Relu", {1, 16, 20, 21}, 5, {1, 1, 1, 1}, true, true, 1},
    {"9 input channels to 64, batch 2", {2, 9, 14, 17}, 64, {1, 1, 1, 1}, true, false, 0},
    {"32x32, 16 channels: one block of tiles, cut into one per thread", {1, 16, 32, 32}, 16, {1, 1, 1, 1}, true, true, 1},
    {"odd sizes, batch 2, channels not multiples of 8",
     {2, 35, 17, 15},
     37,
     {1, 1, 1, 1},
     true,
     false,
     0},
    {"unpadded: partial edge tiles from the plane's size", {1, 40, 18, 23}, 33, {0, 0, 0, 0}, true, false, 1},
    {"asymmetric padding", {1, 33, 15, 16}, 36, {0, 1, 2, 1}, true, true, 0},
    {"residual and Relu, batch 2", {2, 32, 29, 30}, 40, {1, 1, 1, 1}, true, true, 1},
    {"residual and Clip, several tile blocks", {1, 64, 28, 28}, 64, {1, 1, 1, 1}, true, true, 2},
    {"deep input (300 channels), few output channels", {1, 300, 14, 15}, 32, {1, 1, 1, 1}, false, false, 0},
    {"a wide plane: tile rows of 18 tiles, more than a vector's lanes", {1, 32, 70, 69}, 32, {1, 1, 1, 1}, true, true, 1},
    {"a 13x12 plane (4 and 3 tiles a side), residual and Relu", {1, 48, 13, 12}, 64, {1, 1, 1, 1}, true, true, 1},
};

// Runs one case; returns the error relative to the output's scale, and checks the method.
double check_case(const WinoCase& c, int threads, bool expect_winograd, std::mt19937& rng) {
  std::vector<Tensor> in;
  in.push_back(test::random_tensor(c.x, rng));
  in.push_back(test::random_tensor(Shape{c.m, c.x[1], 3, 3}, rng));
  in.push_back(c.bias ? test::random_tensor(Shape{c.m}, rng) : Tensor());
  const Shape ys{c.x[0], c.m, c.x[2] + c.pads[0] + c.pads[2] - 2 * c.d,
                 c.x[3] + c.pads[1] + c.pads[3] - 2 * c.d};
  if (c.residual) in.push_back(test::random_tensor(ys, rng));
  const std::vector<double> exact = exact_conv(c, in, ys);
  double scale = 0;
  for (double v : exact) scale = std::max(scale, std::abs(v));
  const float lo = c.act == 2 ? float(-0.5 * scale) : c.act == 1 ? 0.f : -INFINITY;
  const float hi = c.act == 2 ? float(0.75 * scale) : INFINITY;
  Result r = run_conv(c, in, ys, lo, hi, threads);
  // "winograd <isa>" (its transforms' level); else im2col, or ConvGemm's "direct".
  CHECK((r.variant.rfind("winograd", 0) == 0) == expect_winograd);
  double err = 0;
  const float* y = r.y.data<float>();
  for (size_t i = 0; i < exact.size(); ++i) {
    const double want = std::min(std::max(exact[i], double(lo)), double(hi));
    const double e = std::abs(double(y[i]) - want);
    if (!(e <= err)) err = std::isnan(e) ? INFINITY : e;
  }
  return err / scale;
}

TEST_CASE("cpu Conv Winograd F(4x4,3x3) matches a float64 convolution", "[cpu][winograd]") {
  std::mt19937 rng(2026);
  double worst = 0;
  // The 36 products on Eigen's GEMM or on ConvGemm's tiles (the default where those are
  // AVX-512; MINFER_CPU_CONV_GEMM_ALL forces either), whose rows split at multiples of 6.
  // The transforms run per ISA level (backends/cpu/isa/winograd_rows.cpp: 8 or 16 tiles to a
  // vector, whole tile rows of narrow planes together), so every level the CPU has.
  test::for_each_isa([&](cpu::Isa) {
    for (const char* all : {"0", "1"}) {
      test::ScopedEnv env("MINFER_CPU_CONV_GEMM_ALL", all);
      for (int threads : {1, 2, 3})
        for (const WinoCase& c : kCases) {
          INFO(c.what << ", threads " << threads << ", MINFER_CPU_CONV_GEMM_ALL=" << all);
          const double rel = check_case(c, threads, true, rng);
          CHECK(rel <= kRelBound);
          worst = std::max(worst, rel);
        }
    }
  });
  CAPTURE(worst);  // shown with -s: the measured bound
  CHECK(worst > 0);
}

TEST_CASE("cpu Conv runs dilated 3x3 convs as Winograd on their phase planes",
          "[cpu][winograd]") {
  // FCN's and DeepLabv3's ResNet stages: dilation 2 and 4 with as much padding; planes that are
  // not multiples of the dilation (phases of different sizes, extended with zeros).
  const WinoCase cases[] = {
      {"dilation 2 on 30x30, residual and Relu", {1, 32, 30, 30}, 32, {2, 2, 2, 2}, true, true, 1,
       2},
      {"dilation 2 on 29x31, batch 2, Clip", {2, 33, 29, 31}, 40, {2, 2, 2, 2}, true, false, 2,
       2},
      {"dilation 4 on 57x60, no bias", {1, 32, 57, 60}, 36, {4, 4, 4, 4}, false, false, 0, 4},
      {"dilation 3 on 45x44, residual", {1, 40, 45, 44}, 32, {3, 3, 3, 3}, true, true, 0, 3},
  };
  std::mt19937 rng(65);
  test::for_each_isa([&](cpu::Isa) {
    for (int threads : {1, 2, 3})
      for (const WinoCase& c : cases) {
        INFO(c.what << ", threads " << threads);
        CHECK(check_case(c, threads, true, rng) <= kRelBound);
      }
    // Phase planes below Winograd's 12x12 stay on the direct product.
    const WinoCase small{"dilation 2 on 20x20", {1, 32, 20, 20}, 32, {2, 2, 2, 2},
                         true, false, 0, 2};
    CHECK(check_case(small, 2, false, rng) <= kRelBound);
  });
}

TEST_CASE("MINFER_CPU_WINOGRAD=0 falls back to im2col with the same results", "[cpu][winograd]") {
  for (const WinoCase& c : kCases) {
    INFO(c.what);
    // The same inputs (same seed) through both methods.
    std::mt19937 a(11), b(11);
    const double wino = check_case(c, 2, true, a);
    double im2col = 0;
    {
      test::ScopedEnv off("MINFER_CPU_WINOGRAD", "0");
      im2col = check_case(c, 2, false, b);
    }
    CAPTURE(wino, im2col);
    CHECK(wino <= kRelBound);
    CHECK(im2col <= kRelBound / 10);  // im2col rounds once per product: well below it
  }
}

TEST_CASE("cpu Conv keeps im2col where Winograd does not pay", "[cpu][winograd]") {
  std::mt19937 rng(5);
  const WinoCase small[] = {
      {"7x7 output plane (ResNet's last stage)", {1, 32, 7, 7}, 32, {1, 1, 1, 1}, true, false, 0},
      {"11 output rows", {1, 32, 11, 20}, 32, {1, 1, 1, 1}, false, false, 0},
      {"7 input channels", {1, 7, 20, 20}, 32, {1, 1, 1, 1}, false, false, 0},
      {"3 input channels (an RGB image)", {1, 3, 30, 30}, 16, {1, 1, 1, 1}, true, false, 1},
  };
  for (const WinoCase& c : small) {
    INFO(c.what);
    CHECK(check_case(c, 1, false, rng) <= kRelBound);
  }
}

}  // namespace
}  // namespace minfer
