// ConvGemm (backends/cpu/conv_gemm.h), the CPU Conv's product with the epilogue in registers,
// against float64: called directly on every tail of its 6 x 16 tile, and through
// cpu::ConvKernel on the convolutions that take it (1x1 and small-depth im2col, grouped,
// batched, 1-3 threads). Outputs start as NaN, so an unwritten element fails; a row's padding
// past its columns must stay NaN, so a store past the tile's edge fails too.
//
// Error measure: max |y - exact| / max |exact| <= 1e-5 (fp32 sums of up to 147 products).
#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <sstream>
#include <string>

#include "backends/cpu/conv.h"
#include "backends/cpu/conv_gemm.h"
#include "backends/cpu/isa.h"
#include "isa/for_each_isa.h"
#include "test_util.h"

namespace minfer {
namespace {

using Kind = cpu::Activation::Kind;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// The activations of epilogue.h by name, as FusedConv spells them (Clip on [-0.5, 0.75]).
const char* const kActivations[] = {"", "Relu", "Clip", "Silu", "HardSwish", "Sigmoid"};

double activate(const std::string& act, double x) {
  if (act == "Relu") return std::max(x, 0.0);
  if (act == "Clip") return std::min(std::max(x, -0.5), 0.75);
  if (act == "Silu") return x / (1 + std::exp(-x));
  if (act == "Sigmoid") return 1 / (1 + std::exp(-x));
  if (act == "HardSwish") return x * std::min(std::max(x / 6 + 0.5, 0.0), 1.0);
  return x;
}

Attributes activation_attrs(const std::string& act) {
  Attributes a;
  if (act.empty()) return a;
  a.set("activation", act);
  if (act == "Clip") a.set("activation_min", -0.5f), a.set("activation_max", 0.75f);
  return a;
}

std::vector<float> random_floats(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// max |got - want| / max |want| over the pairs add() saw; a NaN (an unwritten output) makes it
// infinite.
struct RelativeError {
  double err = 0, scale = 1e-30;
  void add(double got, double want) {
    scale = std::max(scale, std::abs(want));
    const double e = std::abs(got - want);
    err = std::isnan(e) ? INFINITY : std::max(err, e);
  }
  double value() const { return err / scale; }
};

TEST_CASE("ConvGemm matches float64 on every tail of its tile, writing nothing else",
          "[cpu][conv-gemm]") {
  if (!cpu::has_any_isa()) {
    WARN("no AVX2 on this CPU: ConvGemm is never used");
    return;
  }
  std::mt19937 rng(42);
  int cases = 0;
  test::for_each_isa([&](cpu::Isa isa) {
    const cpu::f32::MicroKernels& tiles = cpu::fp32_micro_kernels(isa);
    struct Sizes {
      std::vector<int64_t> m, k, cols;
    };
    // X read in place (k <= 192), and deep products packed by blocks of 256 x 128 (a depth
    // tail past one block, two blocks and a tail, columns past one block) or read in place
    // (rows of X 64-byte aligned at 27 columns, else copied aligned first);
    // then weights on either side of kPrefetchBytes (the tiles prefetching the next panel).
    // Last blocks of 1-4 columns (4, 33, 36, 130, 196, 516): the zmm levels' narrow tail,
    // joined to the block before it where there is one (516 = a block of 512 and 4).
    const Sizes sizes[] = {
        {{1, 5, 6, 7, 13, 40}, {1, 3, 16, 27}, {1, 4, 9, 16, 17, 31, 32, 33, 36, 40, 516, 700}},
        {{7, 13}, {257, 520}, {1, 27, 33, 130, 196, 300}},
        {{130, 200}, {180, 300}, {33}}};
    // One product against float64; `pack`: the deep ones packed, or read in place (as on
    // AMD's cores).
    auto check = [&](int64_t m, int64_t k, int64_t cols, bool pack, int64_t ldx = 0) {
      const std::string act = kActivations[cases % 6];
      const bool bias = cases % 2 == 0, residual = cases % 3 != 0;
      ++cases;
      INFO("m " << m << " k " << k << " cols " << cols << " act '" << act << "'"
                << (bias ? " bias" : "") << (residual ? " residual" : "")
                << (pack ? " packed" : " in place") << " ldx " << ldx);
      if (ldx == 0) ldx = cols + 5;  // rows with padding between them
      const int64_t ldy = cols + 3;
      const std::vector<float> w = random_floats(size_t(m * k), rng);
      const std::vector<float> x = random_floats(size_t(k * ldx), rng);
      const std::vector<float> b = random_floats(size_t(m), rng);
      const std::vector<float> z = random_floats(size_t(m * ldy), rng);
      std::vector<float> y(size_t(m * ldy), kNaN);

      Node node;
      node.attrs = activation_attrs(act);
      const cpu::Activation activation = cpu::parse_activation(node);
      const test::ScopedEnv env("MINFER_CPU_CONV_GEMM_PACK", pack ? "1" : "0");
      cpu::ConvGemm gemm(w.data(), m, k, tiles);
      REQUIRE(gemm.packs() == (pack && k > cpu::ConvGemm::kMaxDepth));
      std::vector<float> scratch(gemm.scratch_floats(), kNaN);
      gemm.run(x.data(), ldx, cols, bias ? b.data() : nullptr, residual ? z.data() : nullptr,
               y.data(), ldy, activation, scratch.data());

      RelativeError err;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < ldy; ++j) {
          const float got = y[size_t(i * ldy + j)];
          if (j >= cols) {  // padding: untouched
            REQUIRE(std::isnan(got));
            continue;
          }
          double s = bias ? double(b[size_t(i)]) : 0.0;
          if (residual) s += double(z[size_t(i * ldy + j)]);
          for (int64_t q = 0; q < k; ++q)
            s += double(w[size_t(i * k + q)]) * double(x[size_t(q * ldx + j)]);
          err.add(got, activate(act, s));
        }
      // float32 sums: their rounding grows with the depth (520 terms: ~1e-5 of the scale).
      CHECK(err.value() <= (k <= cpu::ConvGemm::kMaxDepth ? 1e-5 : 5e-5));
    };
    for (bool pack : {true, false})
      for (const Sizes& sz : sizes)
        for (int64_t m : sz.m)
          for (int64_t k : sz.k)
            for (int64_t cols : sz.cols) check(m, k, cols, pack);  // tiles of 16 and 32 columns
    // Rows 4 KB apart (a 32x32 plane's), which alias in the caches: each block copied first,
    // one block and more, with a joined tail (516).
    for (int64_t k : {64, 300})
      for (int64_t cols : {40, 516, 1024}) check(13, k, cols, false, 1024);
  });
}

TEST_CASE("ConvGemm copies the blocks whose rows alias in the caches", "[cpu][conv-gemm]") {
  if (!cpu::has_any_isa()) {
    WARN("no AVX2 on this CPU: ConvGemm is never used");
    return;
  }
  const std::vector<float> w(64 * 256, 1.f);
  test::for_each_isa([&](cpu::Isa isa) {
    const test::ScopedEnv env("MINFER_CPU_CONV_GEMM_PACK", "0");
    const cpu::ConvGemm gemm(w.data(), 64, 256, cpu::fp32_micro_kernels(isa));
    // Planes of 32x32, 64x64, 96x96 and 128x128: rows 4, 16, 36 and 64 KB apart.
    for (int64_t plane : {1024, 4096, 9216, 16384}) CHECK(gemm.rows_alias(plane));
    // 16x16, 28x28, 56x56, 80x80, 112x112, and rows not a line apart.
    for (int64_t plane : {256, 784, 3136, 6400, 12544, 1029}) CHECK_FALSE(gemm.rows_alias(plane));
    // 8 rows fit one L1 set's ways.
    const cpu::ConvGemm shallow(w.data(), 16, 8, cpu::fp32_micro_kernels(isa));
    CHECK_FALSE(shallow.rows_alias(4096));
  });
}

TEST_CASE("ConvGemm reads deep products in place on AMD's cores and packs them on others",
          "[cpu][conv-gemm]") {
  // The vendor from CPUID against the kernel's own report of it, /proc/cpuinfo.
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, vendor;
  while (vendor.empty() && std::getline(cpuinfo, line))
    if (line.rfind("vendor_id", 0) == 0) vendor = line.substr(line.find(':') + 2);
  if (vendor.empty()) {
    WARN("no vendor_id in /proc/cpuinfo: nothing to compare with");
    return;
  }
  const bool amd = vendor == "AuthenticAMD" || vendor == "HygonGenuine";
  CHECK(cpu::cpu_is_amd() == amd);
  const test::ScopedEnv unset("MINFER_CPU_CONV_GEMM_PACK", "");
  CHECK(cpu::ConvGemm::packs_deep() == !amd);
  {
    const test::ScopedEnv pack("MINFER_CPU_CONV_GEMM_PACK", "1");
    CHECK(cpu::ConvGemm::packs_deep());
  }
  const test::ScopedEnv in_place("MINFER_CPU_CONV_GEMM_PACK", "0");
  CHECK_FALSE(cpu::ConvGemm::packs_deep());
}

struct ConvCase {
  const char* what;
  Shape x, w;
  int64_t stride, pad, group;
  bool all = false;  // MINFER_CPU_CONV_GEMM_ALL=1: ConvGemm even where Eigen's AVX2 wins
};

// Y = act(conv(X, W) + B + Z) in float64, NCHW, square kernels.
std::vector<double> conv_f64(const ConvCase& c, const std::vector<Tensor>& t, const Shape& ys,
                             const std::string& act) {
  const int64_t n = c.x[0], ci = c.x[1], h = c.x[2], wd = c.x[3];
  const int64_t m = c.w[0], cg = c.w[1], kk = c.w[2], mg = m / c.group;
  const int64_t oh = ys[2], ow = ys[3];
  const float *x = t[0].data<float>(), *w = t[1].data<float>();
  const float *b = t[2].data<float>(), *z = t[3].data<float>();
  std::vector<double> y(size_t(ys.numel()));
  for (int64_t in = 0; in < n; ++in)
    for (int64_t o = 0; o < m; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          const size_t at = size_t(((in * m + o) * oh + i) * ow + j);
          double s = double(b[o]) + double(z[at]);
          for (int64_t q = 0; q < cg; ++q)
            for (int64_t di = 0; di < kk; ++di)
              for (int64_t dj = 0; dj < kk; ++dj) {
                const int64_t ih = i * c.stride + di - c.pad, iw = j * c.stride + dj - c.pad;
                if (ih < 0 || ih >= h || iw < 0 || iw >= wd) continue;
                const int64_t chan = o / mg * cg + q;
                s += double(x[((in * ci + chan) * h + ih) * wd + iw]) *
                     double(w[((o * cg + q) * kk + di) * kk + dj]);
              }
          y[at] = activate(act, s);
        }
  return y;
}

TEST_CASE("cpu Conv takes ConvGemm where it pays, matching float64", "[cpu][conv-gemm]") {
  // (and the Eigen path beside it on AVX2, for a 1x1 conv whose threads split its channels)
  if (!cpu::has_any_isa()) {
    WARN("no AVX2 on this CPU: ConvGemm is never used");
    return;
  }
  const ConvCase cases[] = {
      {"1x1, 16 -> 13 channels, 30x30 (a column tail)", {2, 16, 30, 30}, {13, 16, 1, 1}, 1, 0, 1},
      {"grouped 1x1 (2 groups of 24 -> 20)", {1, 48, 32, 28}, {40, 24, 1, 1}, 1, 0, 2},
      {"stem 3x3 stride 2 (K = 27)", {1, 3, 64, 66}, {32, 3, 3, 3}, 2, 1, 1},
      {"ResNet stem 7x7 stride 2 (K = 147)", {1, 3, 60, 60}, {8, 3, 7, 7}, 2, 3, 1},
      // Rows of 14 and 13 outputs: a vector, then the last 8 overlapping it.
      {"3x3 stride 2, 28x26 -> 14x13", {1, 8, 28, 26}, {16, 8, 3, 3}, 2, 1, 1},
      // Output rows of 32 or more: the implicit GEMM on the input's column phases (the 3x3
      // stem above too), batch 2, an odd input width.
      {"7x7 stride 2, rows of 35, batch 2", {2, 3, 30, 69}, {10, 3, 7, 7}, 2, 3, 1},
      // On AVX2 the Eigen path, whose threads split the output channels here; ConvGemm on
      // AVX-512, likewise.
      {"1x1 on 7x7, 160 -> 202 channels", {1, 160, 7, 7}, {202, 160, 1, 1}, 1, 0, 1},
      // Deep convs, X packed (forced where the tiles are AVX2): a depth tail, more channels
      // than positions (the threads split the channels, 6 rows at a time), an im2col tile.
      {"deep 1x1, 300 -> 20 channels, 10x12", {1, 300, 10, 12}, {20, 300, 1, 1}, 1, 0, 1, true},
      {"deep 1x1 on 7x7, 260 -> 100", {2, 260, 7, 7}, {100, 260, 1, 1}, 1, 0, 1, true},
      {"deep 1x1 on 7x7, 260 -> 100, batch 1", {1, 260, 7, 7}, {100, 260, 1, 1}, 1, 0, 1, true},
      {"deep 3x3 stride 2 (K = 576)", {1, 64, 15, 15}, {24, 64, 3, 3}, 2, 1, 1, true},
      {"deep 3x3 on 4x4, channels split", {1, 32, 4, 4}, {64, 32, 3, 3}, 1, 1, 1, true},
      // The 1x1 convs that ConvGemm takes on AMD's cores at AVX2 (offered on every CPU here).
      {"1x1 stride 2, 40 -> 24, 15x15", {1, 40, 15, 15}, {24, 40, 1, 1}, 2, 0, 1},
      {"1x1 stride 2 on rows of 32 (the column phases)", {1, 40, 6, 64}, {24, 40, 1, 1}, 2, 0, 1},
      {"1x1 of 1024 channels on 5x6", {1, 1024, 5, 6}, {14, 1024, 1, 1}, 1, 0, 1},
  };
  const test::ScopedEnv deep_1x1("MINFER_CPU_CONV_GEMM_1X1", "1");
  // The strided path would take the stride-2 cases on AVX-512, the small-plane path the 3x3 on
  // 4x4 (test_conv_small_plane.cpp).
  test::ScopedEnv no_strided("MINFER_CPU_STRIDED", "0");
  test::ScopedEnv no_small_plane("MINFER_CPU_SMALL_PLANE", "0");
  std::mt19937 rng(7);
  int i = 0;
  test::for_each_isa([&](cpu::Isa isa) {
    const cpu::Isa tiles = cpu::fp32_micro_kernels(isa).isa;
    const std::string direct = std::string("direct ") + cpu::isa_name(tiles);
    for (const ConvCase& c : cases)
      for (int threads : {1, 2, 3}) {
        std::optional<test::ScopedEnv> all;
        if (c.all) all.emplace("MINFER_CPU_CONV_GEMM_ALL", "1");
        const int64_t k = c.w[1] * c.w[2] * c.w[3];
        const std::string act = kActivations[i++ % 6];
        INFO(c.what << ", " << threads << " threads, act '" << act << "'");
        const int64_t oh = (c.x[2] + 2 * c.pad - c.w[2]) / c.stride + 1;
        const int64_t ow = (c.x[3] + 2 * c.pad - c.w[3]) / c.stride + 1;
        const Shape ys{c.x[0], c.w[0], oh, ow};
        std::vector<Tensor> t{test::random_tensor(c.x, rng), test::random_tensor(c.w, rng),
                              test::random_tensor(Shape{c.w[0]}, rng),
                              test::random_tensor(ys, rng)};
        Node node;
        node.name = "conv";
        node.op_type = "FusedConv";
        node.domain = kMinferDomain;
        node.attrs = activation_attrs(act);
        node.attrs.set("group", c.group);
        node.attrs.set("strides", std::vector<int64_t>{c.stride, c.stride});
        node.attrs.set("pads", std::vector<int64_t>(4, c.pad));
        std::vector<TensorInfo> infos{{true, DType::f32, c.x, nullptr},
                                      {true, DType::f32, c.w, &t[1]},
                                      {true, DType::f32, Shape{c.w[0]}, &t[2]},
                                      {true, DType::f32, ys, nullptr}};
        PrepareContext pctx{node, infos, {{true, DType::f32, ys, nullptr}}};
        pctx.threads = threads;
        cpu::ConvKernel kernel;
        kernel.prepare(pctx);
        const bool takes = c.w[2] * c.w[3] == 1 && c.group == 1
                               ? cpu::ConvGemm::pays_1x1(k, ys[2] * ys[3], c.stride > 1, tiles)
                               : cpu::ConvGemm::pays(k, ys[2] * ys[3], tiles);
        REQUIRE(kernel.variant() == (takes ? direct : ""));
        Tensor y(DType::f32, ys);
        std::fill(y.data<float>(), y.data<float>() + y.numel(), kNaN);
        // The workspace as the runtime's arena gives it: 64-byte aligned, holding anything.
        const size_t floats = pctx.workspace_bytes / sizeof(float) + 16;
        std::unique_ptr<float[], void (*)(float*)> workspace(
            static_cast<float*>(::operator new[](floats * sizeof(float), std::align_val_t(64))),
            [](float* p) { ::operator delete[](p, std::align_val_t(64)); });
        std::fill(workspace.get(), workspace.get() + floats, kNaN);
        RunContext rc;
        for (const Tensor& in : t) rc.inputs.push_back(&in);
        rc.outputs.push_back(&y);
        rc.workspace = workspace.get();
        rc.threads = threads;
        kernel.run(rc);

        const std::vector<double> want = conv_f64(c, t, ys, act);
        RelativeError err;
        for (size_t e = 0; e < want.size(); ++e) err.add(y.data<float>()[e], want[e]);
        INFO("error " << err.value() << " of the output's scale");
        CHECK(err.value() <= (k <= cpu::ConvGemm::kMaxDepth ? 1e-5 : 5e-5));  // deeper sums
      }
  });
}

TEST_CASE("ConvGemm takes the convs it wins, MINFER_CPU_CONV_GEMM=0 none, _ALL=1 every one",
          "[cpu][conv-gemm]") {
  using cpu::Isa;
  const test::ScopedEnv no_all("MINFER_CPU_CONV_GEMM_ALL", ""), no_off("MINFER_CPU_CONV_GEMM", "");
  CHECK(cpu::ConvGemm::pays(16, 12544, Isa::avx2));
  CHECK_FALSE(cpu::ConvGemm::pays(256, 12544, Isa::avx2));  // deep: Eigen's packed GEMM wins
  CHECK_FALSE(cpu::ConvGemm::pays(16, 196, Isa::avx2));     // small planes: likewise
  CHECK(cpu::ConvGemm::pays(256, 12544, Isa::avx512));      // tiles wider than Eigen's AVX2
  CHECK(cpu::ConvGemm::pays(16, 196, Isa::avx512_vnni));
  // Products whose callers found the tiles faster from a depth (Winograd's, small planes').
  CHECK(cpu::ConvGemm::pays_deep(256, 256, Isa::avx2));
  CHECK_FALSE(cpu::ConvGemm::pays_deep(128, 256, Isa::avx2));
  CHECK(cpu::ConvGemm::pays_deep(128, 256, Isa::avx512));
  {
    const test::ScopedEnv off("MINFER_CPU_CONV_GEMM", "0");
    CHECK_FALSE(cpu::ConvGemm::pays(16, 12544, Isa::avx2));
    CHECK_FALSE(cpu::ConvGemm::pays(256, 12544, Isa::avx512));
    CHECK_FALSE(cpu::ConvGemm::pays_deep(512, 256, Isa::avx2));
  }
  {
    const test::ScopedEnv all("MINFER_CPU_CONV_GEMM_ALL", "1");
    CHECK(cpu::ConvGemm::pays(256, 12544, Isa::avx2));
  }
  const test::ScopedEnv all("MINFER_CPU_CONV_GEMM_ALL", "0");
  CHECK_FALSE(cpu::ConvGemm::pays(256, 12544, Isa::avx512));
  CHECK(cpu::ConvGemm::pays(16, 12544, Isa::avx512));
  CHECK_FALSE(cpu::ConvGemm::pays_deep(512, 256, Isa::avx2));
}

TEST_CASE("On AMD's cores ConvGemm also takes strided and deep 1x1 convs at AVX2",
          "[cpu][conv-gemm]") {
  using cpu::Isa;
  const test::ScopedEnv no_all("MINFER_CPU_CONV_GEMM_ALL", ""), no_off("MINFER_CPU_CONV_GEMM", "");
  {
    const test::ScopedEnv amd("MINFER_CPU_CONV_GEMM_1X1", "");
    CHECK(cpu::ConvGemm::pays_1x1(1024, 196, false, Isa::avx2) == cpu::cpu_is_amd());
  }
  const test::ScopedEnv on("MINFER_CPU_CONV_GEMM_1X1", "1");
  CHECK(cpu::ConvGemm::pays_1x1(256, 784, true, Isa::avx2));  // ResNet-50's 56x56 -> 28x28
  CHECK(cpu::ConvGemm::pays_1x1(1024, 196, false, Isa::avx2));
  CHECK_FALSE(cpu::ConvGemm::pays_1x1(256, 196, false, Isa::avx2));  // Eigen's still
  CHECK(cpu::ConvGemm::pays_1x1(16, 12544, false, Isa::avx2));      // as pays()
  {
    const test::ScopedEnv off("MINFER_CPU_CONV_GEMM", "0");
    CHECK_FALSE(cpu::ConvGemm::pays_1x1(1024, 196, true, Isa::avx2));
  }
  const test::ScopedEnv forbid("MINFER_CPU_CONV_GEMM_1X1", "0");
  CHECK_FALSE(cpu::ConvGemm::pays_1x1(1024, 196, true, Isa::avx2));
  CHECK(cpu::ConvGemm::pays_1x1(1024, 196, true, Isa::avx512));
}

}  // namespace
}  // namespace minfer
