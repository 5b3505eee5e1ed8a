// --precision fp16 on CUDA: the fp16 kernels (HConv on the implicit GEMM, HMaxPool,
// HGlobalAveragePool, the layout changes) against their reference kernels, and whole
// ResNets in fp16 against fp32: top-1 agreement and the largest logit error, reported.
#include <algorithm>
#include <cstdio>
#include <optional>

#include "cuda/cuda_test_util.h"
#include "graph/pass.h"
#include "minfer/calibrate.h"
#include "ops/fp16/half_ops.h"
#include "repo_data.h"

namespace minfer::test {
namespace {

Attributes conv_attrs(std::vector<int64_t> kernel, std::vector<int64_t> strides,
                      std::vector<int64_t> pads) {
  Attributes a;
  a.set("kernel_shape", kernel);
  a.set("strides", strides);
  a.set("pads", pads);
  return a;
}

Tensor random_i8_tensor(const Shape& shape, std::mt19937& rng) {
  Tensor t(DType::i8, shape);
  std::uniform_int_distribution<int> d(-128, 127);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int8_t>()[i] = static_cast<int8_t>(d(rng));
  return t;
}

// An fp16 NHWC tensor of the NCHW shape `nchw`, values uniform in [lo, hi].
Tensor random_half_nhwc(const Shape& nchw, std::mt19937& rng, float lo = -1.f, float hi = 1.f) {
  return fp16::to_half_nhwc(random_tensor(nchw, rng, lo, hi));
}

// The CUDA kernel's output and the reference's, as float32 NCHW: normwise relative difference.
double fp16_difference(const NodeCase& c, DeviceContext& dc, const std::string& kernel) {
  const Tensor want = run_reference_case(c);
  const Tensor got = run_cuda_case(c, dc, kernel);
  REQUIRE(got.shape() == want.shape());
  REQUIRE(got.dtype() == want.dtype());
  if (got.dtype() == DType::f32) return relative_difference(got, want);
  return relative_difference(fp16::from_half_nhwc(got), fp16::from_half_nhwc(want));
}

TEST_CASE("CUDA HConv on the implicit GEMM matches the fp16 reference", "[cuda][fp16]") {
  if (!cuda_available()) {
    WARN("no GPU: skipping the CUDA fp16 HConv test");
    return;
  }
  auto dc = cuda_backend().create_context(0);
  std::mt19937 rng(16);
  struct Case {
    Shape x, w;
    Attributes attrs;
    const char* what;
  };
  const std::vector<Case> cases = {
      {{2, 3, 31, 29}, {64, 3, 7, 7}, conv_attrs({7, 7}, {2, 2}, {3, 3, 3, 3}), "stem, C=3 gather"},
      {{2, 5, 9, 9}, {7, 5, 3, 3}, conv_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}), "odd C and M"},
      {{2, 16, 12, 12}, {32, 16, 3, 3}, conv_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}), "3x3"},
      {{4, 64, 28, 28}, {256, 64, 1, 1}, conv_attrs({1, 1}, {1, 1}, {0, 0, 0, 0}), "large tiles"},
      {{2, 64, 14, 14}, {128, 64, 1, 1}, conv_attrs({1, 1}, {2, 2}, {0, 0, 0, 0}), "strided 1x1"},
      {{1, 256, 7, 7}, {256, 256, 3, 3}, conv_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}), "split K"},
      {{3, 8, 10, 6}, {24, 8, 3, 3}, conv_attrs({3, 3}, {2, 1}, {1, 0, 2, 1}), "C=8, asym pads"},
      {{2, 4, 31, 29}, {64, 4, 7, 7}, conv_attrs({7, 7}, {2, 2}, {3, 3, 3, 3}), "stem, 4 channels"},
      {{2, 2, 9, 9}, {8, 2, 3, 3}, conv_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}), "2-channel pixels"},
      {{16, 32, 48, 48}, {64, 32, 3, 3}, conv_attrs({3, 3}, {1, 1}, {1, 1, 1, 1}), "256x64 tile"},
  };
  for (const Case& cs : cases) {
    INFO(cs.what << ": x " << cs.x.to_string() << " w " << cs.w.to_string());
    // Weights scaled so that outputs stay near 1 whatever K (fp16 has 11 significant bits).
    const float ws = 1.f / std::sqrt(float(cs.w[1] * cs.w[2] * cs.w[3]));
    NodeCase c{"HConv", kMinferDomain, cs.attrs,
               {random_half_nhwc(cs.x, rng), random_tensor(cs.w, rng, -ws, ws),
                random_tensor(Shape{cs.w[0]}, rng)},
               {1, 2}};
    CHECK(fp16_difference(c, *dc, "cuda-fp16-igemm") <= 2e-3);
    // Residual and Relu, then Clip.
    const Tensor y = run_reference_case(c);
    c.inputs.push_back(fp16::to_half_nhwc(random_tensor(
        fp16::from_half_nhwc(y).shape(), rng)));
    c.attrs.set("activation", std::string("Relu"));
    CHECK(fp16_difference(c, *dc, "cuda-fp16-igemm") <= 2e-3);
    c.attrs.set("activation", std::string("Clip"));
    c.attrs.set("activation_min", -0.25f);
    c.attrs.set("activation_max", 0.5f);
    CHECK(fp16_difference(c, *dc, "cuda-fp16-igemm") <= 2e-3);
  }
}

// The tuner picks the tile by speed, so the tile must not change the result: with the same
// K split, every tile gives the same bits (and each is close to the reference).
TEST_CASE("CUDA HConv gives the same bits on every tile of a K split", "[cuda][fp16]") {
  if (!cuda_available()) {
    WARN("no GPU: skipping the CUDA fp16 tile test");
    return;
  }
  auto dc = cuda_backend().create_context(0);
  std::mt19937 rng(19);
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 16, 12, 12}, {32, 16, 3, 3}}, {{4, 64, 14, 14}, {256, 64, 1, 1}},
      {{1, 256, 7, 7}, {256, 256, 3, 3}}, {{3, 8, 10, 6}, {24, 8, 3, 3}}};
  for (const auto& [xs, wsh] : cases) {
    const float ws = 1.f / std::sqrt(float(wsh[1] * wsh[2] * wsh[3]));
    NodeCase c{"HConv", kMinferDomain, conv_attrs({wsh[2], wsh[3]}, {1, 1}, {1, 1, 1, 1}),
               {random_half_nhwc(xs, rng), random_tensor(wsh, rng, -ws, ws),
                random_tensor(Shape{wsh[0]}, rng)},
               {1, 2}};
    if (wsh[2] == 1) c.attrs = conv_attrs({1, 1}, {1, 1}, {0, 0, 0, 0});
    for (int splits : {1, 3}) {
      std::optional<Tensor> first;
      for (const char* tile : {"256x64", "128x128", "128x64", "64x64", "32x64"}) {
        const std::string plan = std::string(tile) + "/" + std::to_string(splits);
        INFO("x " << xs.to_string() << " w " << wsh.to_string() << " plan " << plan);
        ScopedEnv force("MINFER_IGEMM_PLAN", plan);
        CHECK(fp16_difference(c, *dc, "cuda-fp16-igemm") <= 2e-3);
        const Tensor got = run_cuda_case(c, *dc, "cuda-fp16-igemm");
        if (!first)
          first = got;
        else
          require_equal(got, *first);
      }
    }
  }
}

TEST_CASE("CUDA SpaceToDepthNhwc equals the reference", "[cuda][fp16][int8]") {
  if (!cuda_available()) {
    WARN("no GPU: skipping the CUDA SpaceToDepthNhwc test");
    return;
  }
  auto dc = cuda_backend().create_context(0);
  std::mt19937 rng(18);
  Attributes a;
  a.set("blocksize", int64_t{2});
  a.set("channels", int64_t{16});
  Tensor pad(DType::i8, Shape{});
  *pad.data<int8_t>() = -7;
  const Tensor x8 = random_i8_tensor(Shape{2, 3, 14, 10}, rng);
  require_equal(run_cuda_case({"SpaceToDepthNhwc", kMinferDomain, a, {x8, pad}, {1}}, *dc),
                run_reference_case({"SpaceToDepthNhwc", kMinferDomain, a, {x8, pad}, {1}}));
  // QuantizeLinear folded in: float in, int8 out.
  Tensor scale(DType::f32, Shape{}), zp(DType::i8, Shape{});
  *scale.data<float>() = 0.02f;
  *zp.data<int8_t>() = 3;
  const Tensor xf = random_tensor(Shape{2, 3, 14, 10}, rng, -3.f, 3.f);
  require_equal(
      run_cuda_case({"SpaceToDepthNhwc", kMinferDomain, a, {xf, zp, scale, zp}, {1, 2, 3}}, *dc),
      run_reference_case({"SpaceToDepthNhwc", kMinferDomain, a, {xf, zp, scale, zp}, {1, 2, 3}}));
  a.set("channels", int64_t{20});  // not the 16-channel vector path
  require_equal(run_cuda_case({"SpaceToDepthNhwc", kMinferDomain, a, {x8, pad}, {1}}, *dc),
                run_reference_case({"SpaceToDepthNhwc", kMinferDomain, a, {x8, pad}, {1}}));
  a.set("channels", int64_t{16});
  const Tensor x32 = random_tensor(Shape{1, 4, 6, 8}, rng);
  require_equal(run_cuda_case({"SpaceToDepthNhwc", kMinferDomain, a, {x32}, {}}, *dc),
                run_reference_case({"SpaceToDepthNhwc", kMinferDomain, a, {x32}, {}}));
  // RGB float input: the row-pair loads (float and fp16 out; int8 out above).
  const Tensor rgb = random_tensor(Shape{3, 3, 8, 12}, rng);
  require_equal(run_cuda_case({"SpaceToDepthNhwc", kMinferDomain, a, {rgb}, {}}, *dc),
                run_reference_case({"SpaceToDepthNhwc", kMinferDomain, a, {rgb}, {}}));
  a.set("half", int64_t{1});
  require_equal(run_cuda_case({"SpaceToDepthNhwc", kMinferDomain, a, {x32}, {}}, *dc),
                run_reference_case({"SpaceToDepthNhwc", kMinferDomain, a, {x32}, {}}));
  require_equal(run_cuda_case({"SpaceToDepthNhwc", kMinferDomain, a, {rgb}, {}}, *dc),
                run_reference_case({"SpaceToDepthNhwc", kMinferDomain, a, {rgb}, {}}));
}

TEST_CASE("CUDA fp16 pools and layout changes match the reference", "[cuda][fp16]") {
  if (!cuda_available()) {
    WARN("no GPU: skipping the CUDA fp16 pool test");
    return;
  }
  auto dc = cuda_backend().create_context(0);
  std::mt19937 rng(17);
  for (const Shape& x : {Shape{2, 64, 15, 15}, Shape{1, 5, 8, 9}}) {
    INFO("x " << x.to_string());
    Attributes pool = conv_attrs({3, 3}, {2, 2}, {1, 1, 1, 1});
    CHECK(fp16_difference({"HMaxPool", kMinferDomain, pool, {random_half_nhwc(x, rng)}, {}}, *dc,
                          "cuda-fp16-maxpool") == 0);
    CHECK(fp16_difference({"HGlobalAveragePool", kMinferDomain, {}, {random_half_nhwc(x, rng)},
                           {}},
                          *dc, "cuda-fp16-global-avgpool") <= 1e-5);
    CHECK(fp16_difference({"ToHalfNhwc", kMinferDomain, {}, {random_tensor(x, rng)}, {}}, *dc,
                          "cuda-to-fp16-nhwc") == 0);
    CHECK(fp16_difference({"FromHalfNhwc", kMinferDomain, {}, {random_half_nhwc(x, rng)}, {}},
                          *dc, "cuda-from-fp16-nhwc") == 0);
  }
}

// Top-1 agreement and the largest logit error (relative to the largest fp32 logit of the
// image) of fp16 against fp32, both on CUDA, over `images` run in batches of `batch`.
struct Agreement {
  int agree = 0, total = 0;
  double max_rel = 0;
};

Agreement compare_fp16(const Graph& g, const std::vector<Tensor>& images, size_t batch) {
  SessionOptions fp32, fp16;
  fp32.device = fp16.device = Device::cuda(0);
  fp16.precision = Precision::fp16;
  Session s32(clone_graph(g), fp32), s16(clone_graph(g), fp16);
  Agreement a;
  for (size_t b = 0; b < images.size(); b += batch) {
    const size_t n = std::min(batch, images.size() - b);
    const Tensor x =
        stack_batch(std::vector<Tensor>(images.begin() + b, images.begin() + b + n));
    const Tensor want = s32.run_one(x), got = s16.run_one(x);
    REQUIRE(got.shape() == want.shape());
    const int64_t classes = want.numel() / int64_t(n);
    for (size_t i = 0; i < n; ++i) {
      const float* w = want.data<float>() + i * classes;
      const float* h = got.data<float>() + i * classes;
      a.agree += std::max_element(w, w + classes) - w == std::max_element(h, h + classes) - h;
      ++a.total;
      double scale = 0, diff = 0;
      for (int64_t k = 0; k < classes; ++k) {
        scale = std::max(scale, std::abs(double(w[k])));
        diff = std::max(diff, std::abs(double(w[k]) - double(h[k])));
      }
      a.max_rel = std::max(a.max_rel, scale > 0 ? diff / scale : diff);
    }
  }
  return a;
}

std::vector<Tensor> images_in(const std::filesystem::path& dir, const std::string& model,
                              const std::string& extension) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == extension) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  REQUIRE(!files.empty());
  return load_calibration_samples(files, builtin_model_info(model).preprocess);
}

TEST_CASE("fp16 ResNets on CUDA agree with fp32", "[cuda][fp16][resnet]") {
  if (!cuda_available()) {
    WARN("no GPU: skipping the CUDA fp16 ResNet test");
    return;
  }
  {
    // Real CIFAR weights (ResNet-20 from the repo, ResNet-32 from the shared data) on the 500
    // CIFAR test images. Their option-A shortcuts (Slice, Pad) stay in fp32 between fp16 convs.
    const std::vector<Tensor> images =
        images_in(data_dir() / "images" / "cifar10-jpeg", "cifar-resnet20", ".jpg");
    REQUIRE(images.size() == 500);
    const std::pair<const char*, std::filesystem::path> models[] = {
        {"cifar-resnet20", repo_data_dir() / "models" / "resnet20.safetensors"},
        {"cifar-resnet32", data_dir() / "models" / "resnet32.safetensors"}};
    for (const auto& [name, weights] : models) {
      const Agreement a = compare_fp16(build_model(name, weights.string()), images, 100);
      std::printf("fp16 vs fp32 %s, 500 CIFAR images: top-1 %d/%d agree, max logit error %.2e\n",
                  name, a.agree, a.total, a.max_rel);
      INFO(name << ": " << a.agree << "/" << a.total << " agree, max error " << a.max_rel);
      CHECK(a.agree >= a.total - 2);
      CHECK(a.max_rel <= 1e-2);
    }
  }
  {
    // ResNet-50 (seeded weights) on the shared ImageNet photos.
    const std::vector<Tensor> images =
        images_in(data_dir() / "images" / "imagenet", "resnet50", ".jpg");
    const Agreement a = compare_fp16(build_model("resnet50"), images, 8);
    std::printf("fp16 vs fp32 resnet50, %d ImageNet photos: top-1 %d/%d agree, max logit error "
                "%.2e\n",
                a.total, a.agree, a.total, a.max_rel);
    INFO(a.agree << "/" << a.total << " agree, max error " << a.max_rel);
    CHECK(a.agree >= a.total - 1);
    CHECK(a.max_rel <= 2e-2);
  }
}

TEST_CASE("precision fp16 lowers the convs and pools and is refused on the CPU", "[fp16]") {
  SessionOptions cpu;
  cpu.precision = Precision::fp16;
  try {
    Session s(build_model("resnet18"), cpu);
    FAIL("fp16 on the CPU was accepted");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::Unsupported);
    CHECK(std::string(e.what()).find("CUDA only") != std::string::npos);
  }
  // The pass alone (no GPU needed): every conv becomes HConv, the stem's input is converted
  // once and the pooled features come back as float32.
  Graph g = build_model("resnet18");
  g.infer_shapes();
  SessionOptions o;
  o.precision = Precision::fp16;
  optimize(g, o);
  int hconv = 0, to_half = 0, from_half = 0, fp32_conv = 0;
  for (const Node* n : g.topo_order()) {
    hconv += n->op_type == "HConv";
    to_half += n->op_type == "ToHalfNhwc";
    from_half += n->op_type == "FromHalfNhwc";
    fp32_conv += n->op_type == "FusedConv" || n->op_type == "Conv";
  }
  CHECK(hconv == 20);
  CHECK(to_half == 1);
  CHECK(from_half == 0);  // HGlobalAveragePool writes float32 itself
  CHECK(fp32_conv == 0);
}

}  // namespace
}  // namespace minfer::test
