// Every int8 CUDA kernel equals its reference kernel bit for bit: QConv and QGemm on all three
// GEMM paths (the implicit GEMM in each of its plans, cuBLASLt and dp4a), QuantizeLinear,
// DequantizeLinear, QAdd, QMaxPool and QGlobalAveragePool.
#include "cuda/cuda_test_util.h"
#include "int8/int8_test_util.h"

#include <map>

namespace minfer::test {
namespace {

const std::vector<std::string> kQConvKernels = {"cuda-int8-dp4a", "cuda-int8-cublaslt",
                                                "cuda-int8-igemm"};

// Runs the case on each QConv kernel that accepts it and compares with the reference;
// counts the runs per kernel in `runs`.
void require_int8_equal(const NodeCase& c, DeviceContext& dc, std::map<std::string, int>& runs) {
  const Tensor want = run_reference_case(c);
  int ran = 0;
  for (const std::string& k : kQConvKernels) {
    if (!cuda_kernel_for(c, dc, k)) continue;
    INFO("kernel " << k);
    require_equal(run_cuda_case(c, dc, k), want);
    ++runs[k];
    ++ran;
  }
  REQUIRE(ran >= 1);
}

TEST_CASE("CUDA QConv and QGemm equal the reference bit for bit", "[cuda][int8]") {
  if (!cuda_available()) {
    WARN("no GPU: skipping the CUDA QConv test");
    return;
  }
  auto dc = cuda_backend().create_context(0);
  std::vector<QConvShape> cases(std::begin(kQConvShapes), std::end(kQConvShapes));
  cases.push_back({8, 14, 14, 64, 128, 3, 3, 2, 1, 1, 1});  // big enough for cuBLASLt tiles
  // Sizes that make the implicit GEMM pick each of its plans on a 132-multiprocessor GPU
  // (H100, H200): tiles 128x128, 128x64 (twice: 64 channels skip 128x128), 64x64 (k tiles
  // spanning taps: C = 48), 128x128 with the byte-gathered A of C = 3, and 32x64 with K split
  // over 8 blocks. The small cases above take 32x64, the QGemm ones below split K too.
  cases.push_back({8, 28, 28, 64, 512, 1, 1, 1, 0, 1, 1});
  cases.push_back({8, 28, 28, 64, 256, 3, 3, 1, 1, 1, 1});
  cases.push_back({8, 48, 48, 32, 64, 1, 1, 1, 0, 1, 1});
  cases.push_back({2, 28, 28, 48, 384, 3, 3, 1, 1, 1, 1});
  cases.push_back({32, 32, 32, 3, 128, 3, 3, 1, 1, 1, 1});
  cases.push_back({1, 7, 7, 512, 512, 3, 3, 1, 1, 1, 1});
  // Whole-pixel copies of 4 channels (the stem once padded to 4): 7x7 read as 7x8, 3x3 as 3x4.
  cases.push_back({2, 15, 15, 4, 16, 7, 7, 2, 3, 1, 1});
  cases.push_back({32, 32, 32, 4, 64, 3, 3, 1, 1, 1, 1});
  // 64 channels over enough pixels for the 256x64 tile.
  cases.push_back({16, 48, 48, 32, 64, 3, 3, 1, 1, 1, 1});
  std::mt19937 rng(42);
  std::map<std::string, int> runs;
  for (const QConvShape& cc : cases) {
    for (QConvVariant variant : kQConvVariants) {
      INFO(cc << " " << qconv_variant_name(variant));
      Attributes a;
      std::vector<Tensor> in = make_qconv(cc, variant, rng, a);
      NodeCase c{"QConv", kMinferDomain, a, in, {1, 2}};
      if (variant == QConvVariant::Residual)
        add_qconv_residual(c.inputs, run_reference_case(c).shape(), rng, c.attrs);
      require_int8_equal(c, *dc, runs);
    }
  }
  // QGemm: int8 and float outputs, odd sizes, batch > 1; the 8 rows of the last as [2, 4, K]
  // (A's rows of any rank: a transformer's Linear layers).
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
                 {random_i8(n == 8 ? Shape{2, 4, k} : Shape{n, k}, rng),
                  random_i8(Shape{m, k}, rng, -127, 127),
                  random_i32(Shape{m}, rng, -1000, 1000)},
                 {1, 2}};
      require_int8_equal(c, *dc, runs);
    }
  }
  // cuBLASLt and the implicit GEMM took most of the one-group cases (they must have been
  // tested, not skipped), dp4a every case.
  CHECK(runs["cuda-int8-cublaslt"] >= 40);
  CHECK(runs["cuda-int8-igemm"] >= 70);
  CHECK(runs["cuda-int8-dp4a"] == int(cases.size() * std::size(kQConvVariants)) + 10);
}

// The tuner (backends/cuda/igemm_tune.h) may pick any plan for a conv: every one must be exact.
TEST_CASE("CUDA QConv equals the reference on every implicit-GEMM plan", "[cuda][int8]") {
  if (!cuda_available()) {
    WARN("no GPU: skipping the CUDA implicit-GEMM plan test");
    return;
  }
  auto dc = cuda_backend().create_context(0);
  std::vector<QConvShape> cases(std::begin(kQConvShapes), std::end(kQConvShapes));
  cases.push_back({8, 28, 28, 64, 256, 3, 3, 1, 1, 1, 1});
  cases.push_back({2, 15, 15, 4, 16, 7, 7, 2, 3, 1, 1});
  cases.push_back({4, 14, 14, 256, 512, 1, 1, 2, 0, 1, 1});
  std::mt19937 rng(44);
  int runs = 0;
  for (const QConvShape& cc : cases)
    for (QConvVariant variant : kQConvVariants) {
      Attributes a;
      std::vector<Tensor> in = make_qconv(cc, variant, rng, a);
      NodeCase c{"QConv", kMinferDomain, a, in, {1, 2}};
      if (variant == QConvVariant::Residual)
        add_qconv_residual(c.inputs, run_reference_case(c).shape(), rng, c.attrs);
      if (!cuda_kernel_for(c, *dc, "cuda-int8-igemm")) continue;
      const Tensor want = run_reference_case(c);
      for (const std::string& plan : igemm_plan_names(3)) {
        INFO(cc << " " << qconv_variant_name(variant) << " plan " << plan);
        ScopedEnv force("MINFER_IGEMM_PLAN", plan);
        require_equal(run_cuda_case(c, *dc, "cuda-int8-igemm"), want);
        ++runs;
      }
    }
  CHECK(runs >= 400);
}

TEST_CASE("CUDA QuantizeLinear, DequantizeLinear and QAdd equal the reference", "[cuda][int8]") {
  if (!cuda_available()) {
    WARN("no GPU: skipping the CUDA Q/DQ test");
    return;
  }
  auto dc = cuda_backend().create_context(0);
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
  if (!cuda_available()) {
    WARN("no GPU: skipping the CUDA int8 pooling test");
    return;
  }
  auto dc = cuda_backend().create_context(0);
  std::mt19937 rng(44);
  Attributes mp;
  mp.set("layout", std::string("NHWC"));
  mp.set("kernel_shape", std::vector<int64_t>{3, 3});
  mp.set("strides", std::vector<int64_t>{2, 2});
  mp.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  // 19 channels: one byte per thread; 64: four per thread (SIMD byte max).
  for (int64_t c : {19, 64}) {
    const NodeCase pool{"QMaxPool", kMinferDomain, mp, {random_i8(Shape{2, 13, 12, c}, rng)}, {}};
    INFO(c << " channels");
    require_equal(run_cuda_case(pool, *dc), run_reference_case(pool));
  }
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
