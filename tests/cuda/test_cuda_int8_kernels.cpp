// Every int8 CUDA kernel equals its reference kernel bit for bit: QConv and QGemm on both
// GEMM paths (cuBLASLt and dp4a), QuantizeLinear, DequantizeLinear, QAdd, QMaxPool and
// QGlobalAveragePool.
#include "cuda/cuda_test_util.h"
#include "int8/int8_test_util.h"

namespace minfer::test {
namespace {

struct ConvCase {
  int64_t n, h, w, c, m, kh, kw, stride, pad, group, dilation;
};

// Runs the case on each named kernel that accepts it and compares with the reference;
// returns how many kernels ran it.
int require_int8_equal(const NodeCase& c, DeviceContext& dc,
                       const std::vector<std::string>& kernels) {
  const Tensor want = run_reference_case(c);
  int ran = 0;
  for (const std::string& k : kernels) {
    if (!cuda_kernel_for(c, dc, k)) continue;
    INFO("kernel " << k);
    require_equal(run_cuda_case(c, dc, k), want);
    ++ran;
  }
  return ran;
}

TEST_CASE("CUDA QConv and QGemm equal the reference bit for bit", "[cuda][int8]") {
  if (!cuda::available()) {
    WARN("no GPU: skipping the CUDA QConv test");
    return;
  }
  auto dc = cuda::create_context(0);
  const std::vector<std::string> kernels = {"cuda-int8-dp4a", "cuda-int8-cublaslt"};
  const ConvCase cases[] = {
      {1, 8, 8, 16, 16, 3, 3, 1, 1, 1, 1},   {2, 7, 9, 3, 5, 3, 3, 1, 1, 1, 1},
      {1, 9, 9, 17, 33, 3, 3, 2, 1, 1, 1},   {3, 6, 5, 32, 24, 1, 1, 1, 0, 1, 1},
      {1, 11, 11, 16, 7, 1, 1, 2, 0, 1, 1},  {1, 10, 10, 12, 12, 3, 3, 1, 1, 12, 1},
      {2, 8, 8, 12, 18, 3, 3, 2, 1, 3, 1},   {1, 12, 12, 5, 6, 5, 5, 1, 2, 1, 1},
      {1, 9, 9, 8, 8, 3, 3, 1, 2, 1, 2},     {1, 5, 6, 64, 40, 3, 3, 1, 1, 1, 1},
      {2, 15, 15, 3, 16, 7, 7, 2, 3, 1, 1},  {4, 3, 3, 130, 67, 1, 1, 1, 0, 1, 1},
      {1, 4, 4, 10, 10, 2, 3, 1, 0, 2, 1},   {1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1},
      {8, 14, 14, 64, 128, 3, 3, 2, 1, 1, 1}};
  std::mt19937 rng(42);
  int lt_runs = 0;
  for (const ConvCase& cc : cases) {
    for (int variant = 0; variant < 4; ++variant) {  // plain, relu + pre-shift, residual, float
      INFO("n" << cc.n << " h" << cc.h << " w" << cc.w << " c" << cc.c << " m" << cc.m << " k"
               << cc.kh << "x" << cc.kw << " s" << cc.stride << " p" << cc.pad << " g" << cc.group
               << " d" << cc.dilation << " variant " << variant);
      Tensor x = random_i8(Shape{cc.n, cc.h, cc.w, cc.c}, rng);
      Tensor w = random_i8(Shape{cc.m, cc.c / cc.group, cc.kh, cc.kw}, rng, -127, 127);
      Tensor b = random_i32(Shape{cc.m}, rng, -20000, 20000);
      std::vector<float> sw(cc.m);
      for (auto& s : sw) s = std::uniform_real_distribution<float>(0.002f, 0.02f)(rng);
      Attributes a;
      a.set("layout", std::string("NHWC"));
      a.set("kernel_shape", std::vector<int64_t>{cc.kh, cc.kw});
      a.set("strides", std::vector<int64_t>{cc.stride, cc.stride});
      a.set("pads", std::vector<int64_t>{cc.pad, cc.pad, cc.pad, cc.pad});
      a.set("dilations", std::vector<int64_t>{cc.dilation, cc.dilation});
      a.set("group", cc.group);
      a.set("x_scale", 0.04f);
      a.set("x_zero_point", int64_t{std::uniform_int_distribution<int>(-128, 127)(rng)});
      a.set("w_scale", sw);
      NodeCase c{"QConv", kMinferDomain, a, {x, w, b}, {1, 2}};
      if (variant != 3) {
        c.attrs.set("y_scale", variant == 1 ? 0.0001f : 0.5f);  // 0.0001: multipliers >= 0.25
        c.attrs.set("y_zero_point", int64_t{-7});
      }
      if (variant == 1) c.attrs.set("y_min", int64_t{-7});
      if (variant == 2) {
        const Tensor y0 = run_reference_case(c);
        c.inputs.push_back(random_i8(y0.shape(), rng));
        c.attrs.set("conv_scale", 0.5f);
        c.attrs.set("conv_zero_point", int64_t{-7});
        c.attrs.set("conv_min", int64_t{-7});
        c.attrs.set("z_scale", 0.3f);
        c.attrs.set("z_zero_point", int64_t{12});
        c.attrs.set("y_scale", 0.6f);
        c.attrs.set("y_zero_point", int64_t{3});
        c.attrs.set("y_max", int64_t{100});
      }
      if (variant == 3) c.attrs.set("activation", std::string("Relu"));
      const int ran = require_int8_equal(c, *dc, kernels);
      REQUIRE(ran >= 1);
      lt_runs += ran - 1;
    }
  }
  // QGemm: int8 and float outputs, odd sizes, batch > 1.
  for (auto [n, k, m] : {std::tuple<int64_t, int64_t, int64_t>{1, 64, 10},
                         {7, 33, 17},
                         {13, 200, 40},
                         {2, 1, 3},
                         {8, 512, 1000}}) {
    for (int variant = 0; variant < 2; ++variant) {
      INFO("gemm " << n << "x" << k << "x" << m << " variant " << variant);
      Attributes a;
      a.set("x_scale", 0.05f);
      a.set("x_zero_point", int64_t{-100});
      a.set("w_scale", std::vector<float>{0.01f});
      if (variant == 0) {
        a.set("y_scale", 0.3f);
        a.set("y_zero_point", int64_t{1});
      } else {
        a.set("activation", std::string("Relu"));
      }
      NodeCase c{"QGemm",
                 kMinferDomain,
                 a,
                 {random_i8(Shape{n, k}, rng), random_i8(Shape{m, k}, rng, -127, 127),
                  random_i32(Shape{m}, rng, -1000, 1000)},
                 {1, 2}};
      const int ran = require_int8_equal(c, *dc, kernels);
      REQUIRE(ran >= 1);
      lt_runs += ran - 1;
    }
  }
  // cuBLASLt took most of the one-group cases (it must have been tested, not skipped).
  CHECK(lt_runs >= 40);
}

TEST_CASE("CUDA QuantizeLinear, DequantizeLinear and QAdd equal the reference", "[cuda][int8]") {
  if (!cuda::available()) {
    WARN("no GPU: skipping the CUDA Q/DQ test");
    return;
  }
  auto dc = cuda::create_context(0);
  std::mt19937 rng(43);
  // Values on and next to the rounding ties of the scale, plus extremes.
  Tensor x = random_tensor(Shape{2, 3, 7, 5}, rng, -6.f, 6.f);
  float* xp = x.data<float>();
  for (int i = 0; i < 40; ++i) xp[i] = 0.05f * float(i - 20) + (i % 3 == 0 ? 0.025f : 0.f);
  xp[41] = 1e30f;
  xp[42] = -1e30f;
  xp[43] = NAN;
  const Tensor scale = Tensor::scalar<float>(0.05f);
  const Tensor axis_scale = Tensor::from_vector<float>({0.05f, 0.031f, 0.2f}, Shape{3});
  for (DType t : {DType::i8, DType::u8}) {
    const Tensor zp = t == DType::i8 ? Tensor::scalar<int8_t>(-3) : Tensor::scalar<uint8_t>(130);
    const Tensor axis_zp = t == DType::i8 ? Tensor::from_vector<int8_t>({-3, 0, 7}, Shape{3})
                                          : Tensor::from_vector<uint8_t>({100, 128, 7}, Shape{3});
    const NodeCase q{"QuantizeLinear", "", {}, {x, scale, zp}, {1, 2}};
    const NodeCase qa{"QuantizeLinear", "", {}, {x, axis_scale, axis_zp}, {1, 2}};
    for (const NodeCase* c : {&q, &qa}) {
      const Tensor want = run_reference_case(*c);
      require_equal(run_cuda_case(*c, *dc), want);
      NodeCase dq{"DequantizeLinear", "", {}, {want, c->inputs[1], c->inputs[2]}, {1, 2}};
      require_equal(run_cuda_case(dq, *dc), run_reference_case(dq));
    }
  }
  const Tensor i32 = random_i32(Shape{4, 9}, rng, -100000, 100000);
  const NodeCase dq32{"DequantizeLinear", "", {}, {i32, scale, Tensor()}, {1}};
  require_equal(run_cuda_case(dq32, *dc), run_reference_case(dq32));

  Attributes a;
  a.set("a_scale", 0.04f);
  a.set("a_zero_point", int64_t{-5});
  a.set("b_scale", 0.07f);
  a.set("b_zero_point", int64_t{20});
  a.set("y_scale", 0.09f);
  a.set("y_zero_point", int64_t{-2});
  a.set("y_min", int64_t{-2});
  const NodeCase add{"QAdd",
                     kMinferDomain,
                     a,
                     {random_i8(Shape{3, 5, 7, 11}, rng), random_i8(Shape{3, 5, 7, 11}, rng)},
                     {}};
  require_equal(run_cuda_case(add, *dc), run_reference_case(add));
}

TEST_CASE("CUDA QMaxPool and QGlobalAveragePool equal the reference", "[cuda][int8]") {
  if (!cuda::available()) {
    WARN("no GPU: skipping the CUDA int8 pooling test");
    return;
  }
  auto dc = cuda::create_context(0);
  std::mt19937 rng(44);
  Attributes mp;
  mp.set("layout", std::string("NHWC"));
  mp.set("kernel_shape", std::vector<int64_t>{3, 3});
  mp.set("strides", std::vector<int64_t>{2, 2});
  mp.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  const NodeCase pool{"QMaxPool", kMinferDomain, mp, {random_i8(Shape{2, 13, 12, 19}, rng)}, {}};
  require_equal(run_cuda_case(pool, *dc), run_reference_case(pool));
  for (const char* layout : {"NHWC", "NCHW"}) {
    Attributes a;
    a.set("layout", std::string(layout));
    a.set("x_scale", 0.05f);
    a.set("x_zero_point", int64_t{-9});
    a.set("y_scale", 0.02f);
    a.set("y_zero_point", int64_t{4});
    const NodeCase gap{
        "QGlobalAveragePool", kMinferDomain, a, {random_i8(Shape{3, 7, 6, 33}, rng)}, {}};
    INFO(layout);
    require_equal(run_cuda_case(gap, *dc), run_reference_case(gap));
  }
}

}  // namespace
}  // namespace minfer::test
