// The int8 reference kernels against a float simulation of the same quantized computation
// (dequantize, compute in float, quantize): they agree to one quantization step, and exactly
// on the layout-only variations.
#include "int8/int8_test_util.h"
#include "ops/int8/int8_math.h"
#include "ops/int8/int8_ops.h"

using namespace minfer;
using namespace minfer::test;

namespace {

Tensor dequantize(const Tensor& q, float scale, int32_t zp) {
  Tensor y(DType::f32, q.shape());
  for (int64_t i = 0; i < q.numel(); ++i)
    y.data<float>()[i] = (float(q.data<int8_t>()[i]) - float(zp)) * scale;
  return y;
}

Tensor quantize(const Tensor& x, float scale, int32_t zp, int32_t lo = -128) {
  Tensor y(DType::i8, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i)
    y.data<int8_t>()[i] = static_cast<int8_t>(
        std::max(lo, int8::quantize_value(x.data<float>()[i], scale, zp, -128, 127)));
  return y;
}

float max_abs(const Tensor& t) {
  float m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::fabs(t.data<float>()[i]));
  return m;
}

struct ConvCase {
  int64_t n, c, h, w, m, k, stride, pad, group;
};

}  // namespace

TEST_CASE("QConv reference matches a float simulation to one step", "[int8]") {
  std::mt19937 rng(11);
  const ConvCase cases[] = {{1, 3, 9, 7, 5, 3, 1, 1, 1},
                            {2, 8, 6, 6, 16, 1, 1, 0, 1},
                            {1, 6, 8, 8, 6, 3, 2, 1, 6},
                            {1, 4, 7, 9, 6, 3, 2, 0, 2},
                            {2, 5, 5, 5, 7, 2, 1, 1, 1}};
  for (const ConvCase& cc : cases) {
    for (int variant = 0; variant < 3; ++variant) {  // 0 plain, 1 relu, 2 residual
      INFO("case c=" << cc.c << " m=" << cc.m << " k=" << cc.k << " group=" << cc.group
                     << " variant " << variant);
      const float sx = 0.05f;
      const int32_t zx = std::uniform_int_distribution<int>(-20, 20)(rng);
      Tensor x = random_i8(Shape{cc.n, cc.c, cc.h, cc.w}, rng);
      Tensor w = random_i8(Shape{cc.m, cc.c / cc.group, cc.k, cc.k}, rng, -127, 127);
      std::vector<float> sw(cc.m);
      for (auto& s : sw) s = std::uniform_real_distribution<float>(0.005f, 0.02f)(rng);
      Tensor b = random_i32(Shape{cc.m}, rng, -3000, 3000);
      Attributes conv_attrs;
      conv_attrs.set("kernel_shape", std::vector<int64_t>{cc.k, cc.k});
      conv_attrs.set("strides", std::vector<int64_t>{cc.stride, cc.stride});
      conv_attrs.set("pads", std::vector<int64_t>{cc.pad, cc.pad, cc.pad, cc.pad});
      conv_attrs.set("group", cc.group);

      // Float simulation.
      Tensor wf(DType::f32, w.shape()), bf(DType::f32, Shape{cc.m});
      const int64_t per = w.numel() / cc.m;
      for (int64_t i = 0; i < w.numel(); ++i)
        wf.data<float>()[i] = float(w.data<int8_t>()[i]) * sw[i / per];
      for (int64_t m = 0; m < cc.m; ++m)
        bf.data<float>()[m] = float(b.data<int32_t>()[m]) * (sx * sw[m]);
      Tensor yf = run_ref("Conv", "", {dequantize(x, sx, zx), wf, bf}, conv_attrs)[0];
      const float sy = max_abs(yf) / 100.f;
      const int32_t zy = variant == 1 ? -20 : 5;

      Attributes a = conv_attrs;
      a.set("x_scale", sx);
      a.set("x_zero_point", int64_t{zx});
      a.set("w_scale", sw);
      Tensor expect, got, z;
      if (variant < 2) {
        a.set("y_scale", sy);
        a.set("y_zero_point", int64_t{zy});
        if (variant == 1) a.set("y_min", int64_t{zy});
        expect = quantize(yf, sy, zy, variant == 1 ? zy : -128);
        got = run_ref("QConv", kMinferDomain, {x, w, b}, a)[0];
      } else {
        // Conv quantized to (sc, zc) with a Relu, then + z, requantized to (s2, z2).
        const float sc = sy, sz = 0.07f, s2 = sy * 1.5f;
        const int32_t zc = -30, zz = 3, z2 = -10;
        z = random_i8(yf.shape(), rng);
        a.set("conv_scale", sc);
        a.set("conv_zero_point", int64_t{zc});
        a.set("conv_min", int64_t{zc});
        a.set("z_scale", sz);
        a.set("z_zero_point", int64_t{zz});
        a.set("y_scale", s2);
        a.set("y_zero_point", int64_t{z2});
        Tensor t = dequantize(quantize(yf, sc, zc, zc), sc, zc);
        Tensor zf = dequantize(z, sz, zz);
        for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] += zf.data<float>()[i];
        expect = quantize(t, s2, z2);
        got = run_ref("QConv", kMinferDomain, {x, w, b, z}, a)[0];
      }
      Int8Diff d = int8_diff(got, expect);
      CHECK(d.max <= (variant == 2 ? 2 : 1));
      CHECK(d.count * 50 <= got.numel());

      // NHWC: the same integers, moved.
      Attributes an = a;
      an.set("layout", std::string("NHWC"));
      std::vector<Tensor> in{int8::nchw_to_nhwc(x), w, b};
      if (variant == 2) in.push_back(int8::nchw_to_nhwc(z));
      require_equal(run_ref("QConv", kMinferDomain, in, an)[0], int8::nchw_to_nhwc(got));
    }
  }
}

TEST_CASE("QConv float output and QGemm match float math", "[int8]") {
  std::mt19937 rng(3);
  Tensor a = random_i8(Shape{3, 20}, rng);
  Tensor w = random_i8(Shape{7, 20}, rng, -127, 127);
  Tensor b = random_i32(Shape{7}, rng, -500, 500);
  std::vector<float> sw(7, 0.01f);
  Attributes at;
  at.set("x_scale", 0.1f);
  at.set("x_zero_point", int64_t{-3});
  at.set("w_scale", sw);
  at.set("activation", std::string("Relu"));
  Tensor y = run_ref("QGemm", kMinferDomain, {a, w, b}, at)[0];
  REQUIRE(y.dtype() == DType::f32);
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t m = 0; m < 7; ++m) {
      int32_t acc = b.data<int32_t>()[m];
      for (int64_t k = 0; k < 20; ++k)
        acc += (a.data<int8_t>()[n * 20 + k] + 3) * w.data<int8_t>()[m * 20 + k];
      float expect = std::max(0.f, float(acc) * (0.1f * 0.01f));
      CHECK(y.data<float>()[n * 7 + m] == expect);
    }
  // int8 output, per-tensor weight scale.
  at.erase("activation");
  at.set("w_scale", std::vector<float>{0.01f});
  at.set("y_scale", 0.2f);
  at.set("y_zero_point", int64_t{1});
  Tensor yq = run_ref("QGemm", kMinferDomain, {a, w, b}, at)[0];
  REQUIRE(yq.dtype() == DType::i8);
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t m = 0; m < 7; ++m) {
      int32_t acc = b.data<int32_t>()[m];
      for (int64_t k = 0; k < 20; ++k)
        acc += (a.data<int8_t>()[n * 20 + k] + 3) * w.data<int8_t>()[m * 20 + k];
      int expect = int8::quantize_value(float(double(acc) * 0.001), 0.2f, 1, -128, 127);
      CHECK(std::abs(int(yq.data<int8_t>()[n * 7 + m]) - expect) <= 1);
    }
}

TEST_CASE("QAdd and the int8 pools match a float simulation", "[int8]") {
  std::mt19937 rng(5);
  Tensor a = random_i8(Shape{2, 5, 6, 7}, rng);
  Tensor b = random_i8(Shape{2, 5, 6, 7}, rng);
  const float sa = 0.03f, sb = 0.05f, sy = 0.06f;
  Attributes at;
  at.set("a_scale", sa);
  at.set("a_zero_point", int64_t{4});
  at.set("b_scale", sb);
  at.set("b_zero_point", int64_t{-7});
  at.set("y_scale", sy);
  at.set("y_zero_point", int64_t{-2});
  at.set("y_min", int64_t{-2});  // Relu
  Tensor got = run_ref("QAdd", kMinferDomain, {a, b}, at)[0];
  Tensor sum = dequantize(a, sa, 4);
  Tensor bf = dequantize(b, sb, -7);
  for (int64_t i = 0; i < sum.numel(); ++i) sum.data<float>()[i] += bf.data<float>()[i];
  Int8Diff d = int8_diff(got, quantize(sum, sy, -2, -2));
  CHECK(d.max <= 1);
  CHECK(d.count * 20 <= got.numel());  // exact ties round up here, to even in the simulation

  // GlobalAveragePool (NCHW and NHWC).
  Attributes ap;
  ap.set("x_scale", sa);
  ap.set("x_zero_point", int64_t{4});
  ap.set("y_scale", 0.01f);
  ap.set("y_zero_point", int64_t{0});
  Tensor gap = run_ref("QGlobalAveragePool", kMinferDomain, {a}, ap)[0];
  Tensor gf = run_ref("GlobalAveragePool", "", {dequantize(a, sa, 4)}, {})[0];
  CHECK(int8_diff(gap, quantize(gf, 0.01f, 0)).max <= 1);
  Attributes apn = ap;
  apn.set("layout", std::string("NHWC"));
  require_equal(run_ref("QGlobalAveragePool", kMinferDomain, {int8::nchw_to_nhwc(a)}, apn)[0],
                int8::nchw_to_nhwc(gap));

  // AveragePool with padding, both count_include_pad settings.
  for (int64_t include : {0, 1}) {
    Attributes av = ap;
    av.set("kernel_shape", std::vector<int64_t>{3, 3});
    av.set("strides", std::vector<int64_t>{2, 2});
    av.set("pads", std::vector<int64_t>{1, 1, 1, 1});
    av.set("count_include_pad", include);
    Tensor q = run_ref("QAveragePool", kMinferDomain, {a}, av)[0];
    Attributes fa;
    for (const char* k : {"kernel_shape", "strides", "pads", "count_include_pad"})
      fa.set(k, av.all().at(k));
    Tensor f = run_ref("AveragePool", "", {dequantize(a, sa, 4)}, fa)[0];
    CHECK(int8_diff(q, quantize(f, 0.01f, 0)).max <= 1);
  }

  // MaxPool on int8 is exact.
  Attributes am;
  am.set("kernel_shape", std::vector<int64_t>{3, 3});
  am.set("strides", std::vector<int64_t>{2, 2});
  am.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  Tensor mp = run_ref("QMaxPool", kMinferDomain, {a}, am)[0];
  require_equal(mp, run_ref("MaxPool", "", {a}, am)[0]);
  Attributes amn = am;
  amn.set("layout", std::string("NHWC"));
  require_equal(run_ref("QMaxPool", kMinferDomain, {int8::nchw_to_nhwc(a)}, amn)[0],
                int8::nchw_to_nhwc(mp));
}

TEST_CASE("int8 ops reject bad attributes with the node's name", "[int8]") {
  std::mt19937 rng(1);
  Tensor x = random_i8(Shape{1, 2, 4, 4}, rng);
  Tensor w = random_i8(Shape{3, 2, 1, 1}, rng);
  Attributes a;
  a.set("x_scale", 0.1f);
  a.set("w_scale", std::vector<float>{0.1f, 0.1f});  // 2 scales for 3 channels
  a.set("y_scale", 0.1f);
  try {
    run_ref("QConv", kMinferDomain, {x, w}, a);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("w_scale") != std::string::npos);
    CHECK(std::string(e.what()).find("node") != std::string::npos);
  }
  a.set("w_scale", std::vector<float>{0.1f});
  a.set("y_zero_point", int64_t{300});
  CHECK_THROWS_AS(run_ref("QConv", kMinferDomain, {x, w}, a), Error);
}
