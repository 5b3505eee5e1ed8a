// Every int8 CPU kernel equals its reference kernel bit for bit, on every ISA level this CPU
// has (each capped in turn), over many shapes, with 1 and 2 threads.
#include <cstdlib>
#include <set>

#include "backends/cpu/int8/qgemm.h"
#include "backends/cpu/int8/requant.h"
#include "backends/cpu/isa.h"
#include "int8/int8_test_util.h"
#include "isa/for_each_isa.h"
#include "ops/int8/int8_ops.h"

using namespace minfer;
using namespace minfer::test;

namespace {

// Runs the CPU kernel the registry picks for a one-node graph (constant inputs marked
// `constant`), checking that it is not the reference fallback; `kernel` gets its name. With
// `over_input`, the output starts as a copy of the input the kernel says it may overwrite
// (PrepareContext::overwrites_input, required to be set) and takes that input's place, as a
// session plans it where the input dies at the node.
Tensor run_cpu(const std::string& op, const std::string& domain, const std::vector<Tensor>& in,
               const std::vector<bool>& constant, const Attributes& a, int threads,
               std::string* kernel = nullptr, bool over_input = false) {
  Graph g;
  std::vector<Value*> vs;
  for (size_t i = 0; i < in.size(); ++i)
    vs.push_back(in[i].defined() ? g.add_constant("in" + std::to_string(i), in[i]) : nullptr);
  Node* n = g.add_node(op, "node", vs, 1, a, domain);
  std::vector<TensorInfo> infos;
  for (size_t i = 0; i < in.size(); ++i) {
    TensorInfo t;
    if (in[i].defined()) {
      t.present = true;
      t.dtype = in[i].dtype();
      t.shape = in[i].shape();
      t.constant = constant[i] ? &in[i] : nullptr;
    }
    infos.push_back(t);
  }
  const OpSchema& schema = OpRegistry::global().get_op(domain, op);
  InferContext ic(*n, infos);
  schema.infer(ic);
  PrepareContext pc(*n, infos, ic.outputs());
  pc.threads = threads;
  const KernelDef* def = OpRegistry::global().find_kernel(pc, Device::Type::CPU);
  INFO(op << ": no CPU kernel accepted the node");
  REQUIRE(def != nullptr);
  if (kernel) *kernel = def->name;
  std::unique_ptr<Kernel> k = def->create();
  k->prepare(pc);
  // The GEMM core, the depthwise sums and the quantizing loop run at exactly the capped level
  // (grouped convs capped at AMX on the VNNI level's implicit GEMM).
  const bool grouped_on_amx = def->name == "cpu-int8-gemm" && a.get_int("group", 1) > 1 &&
                              cpu::active_isa() == cpu::Isa::amx;
  if (def->name == "cpu-int8-gemm" || def->name == "cpu-int8-depthwise" ||
      def->name == "cpu-quantize")
    CHECK(k->variant() ==
          cpu::isa_name(grouped_on_amx ? cpu::Isa::avx512_vnni : cpu::active_isa()));
  std::vector<uint8_t> ws(pc.workspace_bytes + 64);
  Tensor out(ic.outputs()[0].dtype, ic.outputs()[0].shape);
  RunContext rc;
  for (const Tensor& t : in) rc.inputs.push_back(t.defined() ? &t : nullptr);
  if (over_input) {
    REQUIRE(pc.overwrites_input >= 0);
    out = in[size_t(pc.overwrites_input)].clone();
    rc.inputs[size_t(pc.overwrites_input)] = &out;
  }
  rc.outputs.push_back(&out);
  rc.workspace = ws.data();
  rc.threads = threads;
  k->run(rc);
  return out;
}

struct IsaGuard {
  ~IsaGuard() { cpu::reset_isa_cap(); }
};

// A QGemm's attributes with a float output after activation `act`.
Attributes qgemm_attrs(const std::string& act) {
  Attributes a;
  a.set("x_scale", 0.05f);
  a.set("x_zero_point", int64_t{3});
  a.set("w_scale", std::vector<float>{0.01f});
  a.set("activation", act);
  return a;
}

// Requires int8 `got` within one of `expect` everywhere (a float activation before the
// quantizing: a value on a rounding boundary may go either way) and returns how many differ.
int64_t require_within_one(const Tensor& got, const Tensor& expect) {
  REQUIRE(got.dtype() == DType::i8);
  REQUIRE(got.shape() == expect.shape());
  int64_t differ = 0;
  for (int64_t i = 0; i < got.numel(); ++i) {
    const int d = std::abs(int(got.data<int8_t>()[i]) - int(expect.data<int8_t>()[i]));
    REQUIRE(d <= 1);
    differ += d;
  }
  return differ;
}

}  // namespace

TEST_CASE("CPU QConv/QGemm equal the reference bit for bit on every ISA path", "[int8]") {
  IsaGuard guard;
  std::mt19937 rng(42);
  for (cpu::Isa isa : cpu::supported_isas()) {
    cpu::set_isa_cap(isa);
    // Convs with whole lanes of channels run as implicit GEMMs and 1x1 convs' rows of whole
    // lanes are read in place (signed rows, on the VNNI levels whatever the CPU's maker), and
    // depthwise convs sum group rows; off, as GEMMs on packed copies (im2col's) and the
    // depthwise taps one at a time.
    for (const char* fast_paths : {"1", "0"}) {
      ScopedEnv implicit("MINFER_CPU_INT8_IMPLICIT", fast_paths);
      ScopedEnv signed_rows("MINFER_CPU_INT8_SIGNED_ROWS", fast_paths);
      ScopedEnv groups("MINFER_CPU_INT8_DEPTHWISE_GROUPS", fast_paths);
      for (const QConvShape& cc : kQConvShapes) {
        for (QConvVariant variant : kQConvVariants) {
          INFO(cpu::isa_name(isa) << " " << cc << " " << qconv_variant_name(variant)
                                  << " fast paths " << fast_paths);
          auto [in, constant, a] = make_qconv_case(cc, variant, rng);
          Tensor expect = run_ref("QConv", kMinferDomain, in, a)[0];
          const bool depthwise = cc.group == cc.c && cc.c == cc.m && cc.c > 1;
          for (int threads : {1, 2, 3}) {
            std::string kernel;
            require_equal(run_cpu("QConv", kMinferDomain, in, constant, a, threads, &kernel),
                          expect);
            CHECK(kernel == (depthwise ? "cpu-int8-depthwise" : "cpu-int8-gemm"));
            // The GEMM kernel's output written over its residual, as sessions plan it.
            if (variant == QConvVariant::Residual && !depthwise)
              require_equal(
                  run_cpu("QConv", kMinferDomain, in, constant, a, threads, nullptr, true),
                  expect);
          }
        }
      }
    }
    // QGemm: int8 and float outputs, odd sizes, batch > 1.
    for (auto [n, k, m] : {std::tuple<int64_t, int64_t, int64_t>{1, 64, 10},
                           {7, 33, 17},
                           {13, 200, 40},
                           {25, 70, 33},  // 12-row tiles and a remainder of 1
                           {2, 1, 3}}) {
      for (int variant = 0; variant < 2; ++variant) {
        INFO(cpu::isa_name(isa)
             << " gemm " << n << "x" << k << "x" << m << " variant " << variant);
        Tensor x = random_i8(Shape{n, k}, rng);
        Tensor w = random_i8(Shape{m, k}, rng, -127, 127);
        Tensor b = random_i32(Shape{m}, rng, -1000, 1000);
        Attributes a;
        a.set("x_scale", 0.05f);
        a.set("x_zero_point", int64_t{-100});
        a.set("w_scale", std::vector<float>{0.01f});
        if (variant == 0) {
          a.set("y_scale", 0.3f);
          a.set("y_zero_point", int64_t{1});
        }
        Tensor expect = run_ref("QGemm", kMinferDomain, {x, w, b}, a)[0];
        for (const char* signed_rows : {"1", "0"}) {
          ScopedEnv env("MINFER_CPU_INT8_SIGNED_ROWS", signed_rows);
          for (int threads : {1, 2})
            require_equal(
                run_cpu("QGemm", kMinferDomain, {x, w, b}, {false, true, true}, a, threads),
                expect);
        }
      }
    }
  }
}

// The depthwise kernel's group rows (and its plain sums) over random shapes on every ISA
// level: channel counts across the 16-channel groups and 64-channel blocks, widths across the
// tiles and groups, 3x3 and 5x5 kernels (rows of 1 to 5 taps), strides 1 and 2, pads 0 to 2,
// int8 outputs with and without a residual and float ones.
TEST_CASE("CPU depthwise QConv equals the reference bit for bit on random shapes",
          "[int8][depthwise]") {
  IsaGuard guard;
  std::mt19937 rng(31);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (cpu::Isa isa : cpu::supported_isas()) {
    cpu::set_isa_cap(isa);
    for (int trial = 0; trial < 40; ++trial) {
      const int64_t c = pick(2, 150), k = pick(0, 1) ? 3 : 5, kh = pick(1, 5);
      const int64_t stride = pick(1, 2), pad = pick(0, 2);
      const int64_t h = pick(std::max<int64_t>(1, kh - 2 * pad), 9);
      const int64_t w = pick(std::max<int64_t>(1, k - 2 * pad), 41);
      const QConvShape cc{1, h, w, c, c, kh, k, stride, pad, c, 1};
      const QConvVariant variant = kQConvVariants[pick(0, 3)];
      INFO(cpu::isa_name(isa) << " " << cc << " " << qconv_variant_name(variant));
      const auto [in, constant, a] = make_qconv_case(cc, variant, rng);
      const Tensor expect = run_ref("QConv", kMinferDomain, in, a)[0];
      for (const char* groups : {"1", "0"}) {
        ScopedEnv env("MINFER_CPU_INT8_DEPTHWISE_GROUPS", groups);
        std::string kernel;
        require_equal(run_cpu("QConv", kMinferDomain, in, constant, a, pick(1, 3), &kernel),
                      expect);
        CHECK(kernel == "cpu-int8-depthwise");
      }
    }
  }
}

// A float output's smooth activation (int8 EfficientNet's SiLU and SE gates, fused by the
// int8-smooth-activation-fusion pass) in the GEMM and depthwise kernels: the reference applies
// it in double, the kernels with their vector exp (within 2.5e-7 relative).
TEST_CASE("CPU QConv/QGemm float outputs with smooth activations match the reference",
          "[int8]") {
  IsaGuard guard;
  std::mt19937 rng(23);
  const QConvShape shapes[] = {{1, 9, 11, 24, 40, 1, 1, 1, 0, 1, 1},
                               {1, 8, 8, 16, 16, 3, 3, 1, 1, 1, 1},
                               {1, 14, 13, 33, 33, 3, 3, 2, 1, 33, 1}};
  for (cpu::Isa isa : cpu::supported_isas()) {
    cpu::set_isa_cap(isa);
    for (const QConvShape& cc : shapes)
      for (const char* act : {"Sigmoid", "Silu", "HardSigmoid", "HardSwish", "Gelu", "GeluTanh"}) {
        INFO(cpu::isa_name(isa) << " " << cc << " " << act);
        Attributes a;
        std::vector<Tensor> in = make_qconv(cc, QConvVariant::FloatOut, rng, a);
        a.set("activation", std::string(act));
        if (std::string(act) == "HardSigmoid") {
          a.set("activation_alpha", 0.3f);
          a.set("activation_beta", 0.4f);
        }
        const Tensor expect = run_ref("QConv", kMinferDomain, in, a)[0];
        for (int threads : {1, 2})
          require_close(run_cpu("QConv", kMinferDomain, in, {false, true, true}, a, threads),
                        expect, 1e-5, 1e-6);
      }
    // QGemm likewise, on rows of 2 and of 3 dims (a transformer's Linear layers: Gelu).
    for (const Shape& xs : {Shape{5, 70}, Shape{2, 3, 70}})
      for (const char* act : {"Silu", "Gelu"}) {
        INFO(cpu::isa_name(isa) << " QGemm " << xs.to_string() << " " << act);
        Tensor x = random_i8(xs, rng), w = random_i8(Shape{33, 70}, rng, -127, 127);
        const Attributes a = qgemm_attrs(act);
        const Tensor y = run_cpu("QGemm", kMinferDomain, {x, w, Tensor()}, {false, true, false},
                                 a, 1);
        CHECK(y.shape() == (xs.rank() == 2 ? Shape{5, 33} : Shape{2, 3, 33}));
        require_close(y, run_ref("QGemm", kMinferDomain, {x, w, Tensor()}, a)[0], 1e-5, 1e-6);
      }
  }
}

TEST_CASE("QConv refuses an activation its output cannot take", "[int8]") {
  std::mt19937 rng(24);
  Attributes a;
  std::vector<Tensor> in = make_qconv({1, 4, 4, 8, 8, 1, 1, 1, 0, 1, 1}, QConvVariant::FloatOut,
                                      rng, a);
  a.set("activation", std::string("Tanh"));  // not one of a float output's
  CHECK_THROWS_WITH(run_ref("QConv", kMinferDomain, in, a),
                    Catch::Contains("activation must be") && Catch::Contains("Tanh"));
  // An int8 output takes a Relu as its clamp (y_min), not as an activation.
  a.set("activation", std::string("Relu"));
  a.set("y_scale", 0.5f);
  CHECK_THROWS_WITH(run_ref("QConv", kMinferDomain, in, a), Catch::Contains("y_min"));
  // After a smooth activation an int8 output saturates to int8 only.
  a.set("activation", std::string("Silu"));
  a.set("y_min", int64_t{0});
  CHECK_THROWS_WITH(run_ref("QConv", kMinferDomain, in, a),
                    Catch::Contains("Silu") && Catch::Contains("y_min"));
  a.set("activation", std::string("Tanh"));  // with an int8 output too
  CHECK_THROWS_WITH(run_ref("QConv", kMinferDomain, in, a),
                    Catch::Contains("activation must be") && Catch::Contains("Tanh"));
}

// An int8 output after a smooth activation (the float output's QuantizeLinear folded, as in
// int8 EfficientNet): the kernels quantize their float output as the QuantizeLinear kernel
// does, the reference its own (exp in double), so a value on a rounding boundary may differ by
// one; the fused graph equals the unfused one bit for bit (test_quantize_graph.cpp).
TEST_CASE("CPU QConv int8 outputs after a smooth activation match the reference", "[int8]") {
  IsaGuard guard;
  std::mt19937 rng(25);
  const QConvShape shapes[] = {{1, 9, 11, 24, 40, 1, 1, 1, 0, 1, 1},
                               {1, 14, 13, 33, 33, 3, 3, 2, 1, 33, 1}};
  for (cpu::Isa isa : cpu::supported_isas()) {
    cpu::set_isa_cap(isa);
    for (const QConvShape& cc : shapes)
      for (const char* act : {"Silu", "Sigmoid", "HardSwish"}) {
        INFO(cpu::isa_name(isa) << " " << cc << " " << act);
        Attributes a;
        std::vector<Tensor> in = make_qconv(cc, QConvVariant::FloatOut, rng, a);
        a.set("activation", std::string(act));
        a.set("y_scale", std::string(act) == "Sigmoid" ? 0.004f : 0.05f);
        a.set("y_zero_point", int64_t{-20});
        const Tensor expect = run_ref("QConv", kMinferDomain, in, a)[0];
        const Tensor got = run_cpu("QConv", kMinferDomain, in, {false, true, true}, a, 2);
        CHECK(require_within_one(got, expect) * 100 <= got.numel());
        const int8_t* e = expect.data<int8_t>();
        const std::set<int> values(e, e + expect.numel());
        CHECK(values.size() >= 16);  // the outputs are not a few saturated values
      }
    // QGemm likewise (one 12-row tile and a remainder, 33 channels: a masked last vector).
    Tensor x = random_i8(Shape{13, 70}, rng), w = random_i8(Shape{33, 70}, rng, -127, 127);
    Attributes a = qgemm_attrs("Silu");
    a.set("y_scale", 0.02f);
    a.set("y_zero_point", int64_t{-30});
    require_within_one(
        run_cpu("QGemm", kMinferDomain, {x, w, Tensor()}, {false, true, false}, a, 1),
        run_ref("QGemm", kMinferDomain, {x, w, Tensor()}, a)[0]);
  }
}

// The requantizing epilogue on its own, over accumulators the kernel tests' data rarely hold
// (int32's ends, values near each rounding boundary) and multipliers from 2^-40 to 2^19: where
// every channel's zero point fits into its rounding term (requant.h), and where one does not;
// with a residual whose sum takes the output's zero point (scales near 1) and one whose sum
// cannot (small scales: a shift of 29 bits).
TEST_CASE("CPU int8 requantize epilogue equals stage_int8 on every ISA path", "[int8]") {
  IsaGuard guard;
  std::mt19937 rng(17);
  constexpr int64_t kChannels = 37, kRows = 7;
  enum { kNoResidual, kResidual, kSmallResidual };
  for (bool tiny : {false, true})
    for (int residual : {kNoResidual, kResidual, kSmallResidual})
      for (int32_t zero_point : {-128, -5, 0, 127}) {
        int8::OutputStage st;
        std::uniform_real_distribution<double> log2_m(tiny ? -40.0 : -20.0, tiny ? 0.0 : 19.0);
        for (int64_t c = 0; c < kChannels; ++c)
          st.mult.push_back(int8::make_multiplier(std::exp2(log2_m(rng))));
        st.zero_point = zero_point;
        st.qmin = std::max(zero_point, -100);  // a Relu-like clamp above int8's own
        st.qmax = 120;
        st.residual = residual != kNoResidual;
        if (residual == kResidual) {
          st.add = int8::make_add_multipliers(0.7, 0.45);
          st.z_zero_point = 9;
          st.y_zero_point = -3;
        }
        if (residual == kSmallResidual) {
          st.add = int8::make_add_multipliers(0.003, 0.002);
          st.z_zero_point = -128;
          st.y_zero_point = -128;
        }
        const cpu::q8::Requant rq = cpu::q8::make_requant(st, kChannels);
        if (residual != kNoResidual) REQUIRE(rq.y_zero_point_in_sum == (residual == kResidual));
        // The tiny multipliers' shifts (up to 31) cannot take a zero point of -128 or 127.
        if (!tiny) REQUIRE(rq.zero_point_in_rnd);
        if (tiny && (zero_point == -128 || zero_point == 127)) REQUIRE_FALSE(rq.zero_point_in_rnd);
        std::vector<int32_t> acc(kRows * kChannels);
        std::vector<int8_t> z(kRows * kChannels);
        std::uniform_int_distribution<int32_t> any(INT32_MIN, INT32_MAX), small(-70000, 70000);
        std::uniform_int_distribution<int> byte(-128, 127);
        for (size_t i = 0; i < acc.size(); ++i) {
          const int64_t c = int64_t(i) % kChannels;
          const int kind = int(i % 5);
          // A value whose product sits at a rounding boundary: acc * m = (2j + 1) * 2^(n-1).
          const int64_t half = int64_t{1} << (st.mult[c].n - 1);
          const int64_t boundary = st.mult[c].l == 0 ? half / st.mult[c].m : 0;
          acc[i] = kind == 0 ? INT32_MIN : kind == 1 ? INT32_MAX : kind == 2 ? any(rng)
                 : kind == 3 ? small(rng) : static_cast<int32_t>(std::clamp<int64_t>(
                                   boundary + small(rng) % 3, INT32_MIN, INT32_MAX));
          z[i] = static_cast<int8_t>(byte(rng));
        }
        for (cpu::Isa isa : cpu::supported_isas()) {
          INFO(cpu::isa_name(isa) << " tiny " << tiny << " residual " << residual << " zp "
                                  << zero_point);
          std::vector<int8_t> y(acc.size());
          cpu::q8::requant_kernels(isa).tile(rq.params(), acc.data(), kChannels, kRows, 0,
                                             kChannels, y.data(), kChannels,
                                             st.residual ? z.data() : nullptr);
          for (size_t i = 0; i < acc.size(); ++i)
            REQUIRE(int(y[i]) == int(int8::stage_int8(st, acc[i], int64_t(i) % kChannels, z[i])));
        }
      }
}

// The narrow micro-tile (a block's first nr / 2 channels) against the full one, for every row
// count up to two of its tiles, a depth that is no whole number of lane steps.
TEST_CASE("CPU int8 narrow micro-tile equals the full tile's first channels on every ISA path",
          "[int8]") {
  std::mt19937 rng(23);
  std::uniform_int_distribution<int> byte(-128, 127);
  std::uniform_int_distribution<int32_t> start(-100000, 100000);
  constexpr int64_t kDepth = 37;
  for (cpu::Isa isa : cpu::supported_isas()) {
    const cpu::q8::MicroKernels& kern = cpu::q8::micro_kernels(isa);
    if (!kern.narrow) continue;  // (AMX)
    INFO(cpu::isa_name(isa));
    const int64_t nr = kern.nr, kq = cpu::q8::k_steps(kern, kDepth), stride = kq * 4;
    const int64_t rows = 2 * kern.narrow_mr + 1;
    std::vector<int8_t> w(static_cast<size_t>(nr * kDepth)), x(static_cast<size_t>(kDepth));
    for (int8_t& v : w) v = static_cast<int8_t>(byte(rng));
    const cpu::q8::PackedWeights packed(kern, w.data(), nr, kDepth);
    std::vector<uint8_t> a(size_t(rows * stride), 0);
    for (int64_t r = 0; r < rows; ++r) {
      for (int8_t& v : x) v = static_cast<int8_t>(byte(rng));
      kern.pack_runs(x.data(), 0, 1, kDepth, a.data() + r * stride);
    }
    std::vector<int32_t> init(static_cast<size_t>(nr));
    for (int32_t& v : init) v = start(rng);
    // The full tile's channels, tile by tile.
    std::vector<int32_t> full(size_t(rows * nr)), c(cpu::q8::kMaxTileInts);
    for (int64_t r0 = 0; r0 < rows; r0 += kern.mr) {
      const int n = int(std::min<int64_t>(kern.mr, rows - r0));
      kern.micro({a.data() + r0 * stride, stride, 0, 1, kq}, packed.block(0), n, init.data(),
                 c.data());
      std::copy_n(c.begin(), n * nr, full.begin() + r0 * nr);
    }
    for (int n = 1; n <= rows; ++n) {
      INFO("rows " << n);
      for (int64_t r0 = 0; r0 < n; r0 += kern.narrow_mr) {
        const int m = int(std::min<int64_t>(kern.narrow_mr, n - r0));
        std::fill(c.begin(), c.end(), -7);
        kern.narrow({a.data() + r0 * stride, stride, 0, 1, kq}, packed.block(0), m,
                    init.data(), c.data());
        for (int64_t r = 0; r < m; ++r)
          for (int64_t j = 0; j < nr / 2; ++j)
            REQUIRE(c[size_t(r * nr + j)] == full[size_t((r0 + r) * nr + j)]);
      }
    }
  }
}

// The tiles that ask for the next weight block as they go (TileRows::prefetch: a layer whose
// weights come from memory) are instances of their own: the same sums as the others, with one
// run per row and with two (an implicit GEMM's kernel rows), whole and narrow.
TEST_CASE("CPU int8 micro-tiles that prefetch the next weights compute the same sums",
          "[int8]") {
  std::mt19937 rng(29);
  std::uniform_int_distribution<int> byte(-128, 127);
  constexpr int64_t kRunDepth = 37;
  for (cpu::Isa isa : cpu::supported_isas()) {
    const cpu::q8::MicroKernels& kern = cpu::q8::micro_kernels(isa);
    if (!kern.narrow) continue;  // (AMX: its tiles take one run and ask for nothing)
    INFO(cpu::isa_name(isa));
    const int64_t nr = kern.nr, kq = cpu::q8::k_steps(kern, kRunDepth);
    const int64_t rows = kern.narrow_mr, stride = 2 * kq * 4;  // each row: two runs of kq lanes
    const int64_t depth = 2 * kq * kern.kstep;  // two blocks of 2 * kq lanes
    std::vector<int8_t> w(static_cast<size_t>(2 * nr * depth));
    for (int8_t& v : w) v = static_cast<int8_t>(byte(rng));
    const cpu::q8::PackedWeights packed(kern, w.data(), 2 * nr, depth);
    std::vector<uint8_t> a(size_t(rows * stride));
    for (uint8_t& v : a) v = static_cast<uint8_t>(byte(rng) & (kern.kstep == 4 ? 0xff : 0x7f));
    std::vector<int32_t> init(static_cast<size_t>(nr), 11);
    std::vector<int32_t> plain(cpu::q8::kMaxTileInts), asking(cpu::q8::kMaxTileInts);
    for (int64_t runs : {1, 2}) {
      for (bool narrow : {false, true}) {
        INFO(runs << " run(s), " << (narrow ? "narrow" : "whole") << " tile");
        const cpu::q8::MicroKernel tile = narrow ? kern.narrow : kern.micro;
        const int n = int(narrow ? kern.narrow_mr : kern.mr);
        const int64_t lanes = runs == 1 ? 2 * kq : kq;
        cpu::q8::TileRows tile_rows{a.data(), stride, kq * 4, runs, lanes};
        tile(tile_rows, packed.block(0), n, init.data(), plain.data());
        tile_rows.prefetch = packed.block(1);
        tile_rows.prefetch_lines = static_cast<int64_t>(packed.block_bytes()) / 64;
        tile(tile_rows, packed.block(0), n, init.data(), asking.data());
        for (int64_t r = 0; r < n; ++r)
          for (int64_t j = 0; j < (narrow ? nr / 2 : nr); ++j)
            REQUIRE(asking[size_t(r * nr + j)] == plain[size_t(r * nr + j)]);
      }
    }
  }
}

// QuantizeLinear at every ISA level (16 floats a vector on AVX-512, 8 on AVX2 and blocks of
// 32), against the reference: random values, NaN and infinities, ties, the rounding boundaries
// ((k + 1/2) * scale and the floats around it), scales from 2^-61 to 2^61, tiny and huge
// inputs, lengths around the vectors and blocks, int8 and uint8.
TEST_CASE("CPU QuantizeLinear equals the reference bit for bit on every ISA path", "[int8]") {
  IsaGuard guard;
  for (cpu::Isa isa : cpu::supported_isas()) {
    cpu::set_isa_cap(isa);
    std::mt19937 rng(8);
    for (int64_t numel : {1, 7, 8, 15, 16, 17, 31, 32, 33, 47, 63, 64, 1000, 40000}) {
      INFO(cpu::isa_name(isa) << " numel " << numel);
      Tensor x = random_tensor(Shape{numel}, rng, -300.f, 300.f);
      x.data<float>()[0] = 2.5f;  // ties to even
      if (numel > 5) {
        x.data<float>()[1] = NAN;
        x.data<float>()[2] = INFINITY;
        x.data<float>()[3] = -INFINITY;
        x.data<float>()[4] = 1.5f;
      }
      if (numel > 40) {  // (in a later vector of a block)
        x.data<float>()[numel - 23] = NAN;
        x.data<float>()[numel - 22] = -INFINITY;
      }
      for (DType t : {DType::i8, DType::u8}) {
        Tensor z = t == DType::i8 ? Tensor::scalar<int8_t>(-3) : Tensor::scalar<uint8_t>(130);
        std::vector<Tensor> in{x, Tensor::scalar<float>(1.f), z};
        Tensor q = run_ref("QuantizeLinear", "", in, {})[0];
        for (int threads : {1, 2})
          require_equal(run_cpu("QuantizeLinear", "", in, {false, true, true}, {}, threads), q);
      }
    }
    for (float scale : {0.1f, 0.0123f, 3.7f, 1.9999999f, 0x1p-60f, 0x1p60f, 0x1p-61f, 0x1p61f}) {
      INFO(cpu::isa_name(isa) << " scale " << scale);
      std::vector<float> v;
      for (int k = -300; k <= 300; ++k) {
        float b = (float(k) + 0.5f) * scale;
        for (int step = 0; step < 3; ++step) b = std::nextafter(b, -INFINITY);
        for (int step = 0; step < 7; ++step, b = std::nextafter(b, INFINITY)) v.push_back(b);
      }
      for (float t : {0x1p-126f, -0x1p-149f, 0x1p-100f * scale, 1e30f, -1e38f}) v.push_back(t);
      Tensor xs(DType::f32, Shape{int64_t(v.size())});
      std::copy(v.begin(), v.end(), xs.data<float>());
      for (DType t : {DType::i8, DType::u8}) {
        Tensor z = t == DType::i8 ? Tensor::scalar<int8_t>(5) : Tensor::scalar<uint8_t>(100);
        std::vector<Tensor> in{xs, Tensor::scalar<float>(scale), z};
        require_equal(run_cpu("QuantizeLinear", "", in, {false, true, true}, {}, 1),
                      run_ref("QuantizeLinear", "", in, {})[0]);
      }
    }
  }
}

// GatedQuantize (an SE block's Mul by its gate and the QuantizeLinear after it) at every ISA
// level against the reference: channel counts around the vectors and blocks, batch and plane
// rows, gates of any sign and size, NaN and infinities in the input and the gate, products
// that overflow to infinity, and 1-3 threads.
TEST_CASE("CPU GatedQuantize equals the reference bit for bit on every ISA path", "[int8]") {
  IsaGuard guard;
  for (cpu::Isa isa : cpu::supported_isas()) {
    cpu::set_isa_cap(isa);
    std::mt19937 rng(9);
    for (int64_t c : {2, 7, 8, 16, 17, 32, 33, 40, 96, 131}) {
      INFO(cpu::isa_name(isa) << " channels " << c);
      Tensor x = random_tensor(Shape{2, 5, 3, c}, rng, -30.f, 30.f);
      Tensor gate = random_tensor(Shape{1, 1, 1, c}, rng, -2.f, 2.f);
      x.data<float>()[0] = NAN;
      x.data<float>()[1] = INFINITY;
      x.data<float>()[c + 1] = 3e38f;  // times a gate above 1: infinity
      gate.data<float>()[1] = 1.5f;
      gate.data<float>()[c - 1] = NAN;
      Attributes a;
      a.set("y_scale", 0.07f);
      a.set("y_zero_point", int64_t{-9});
      const Tensor expect = run_ref("GatedQuantize", kMinferDomain, {x, gate}, a)[0];
      for (int threads : {1, 2, 3})
        require_equal(
            run_cpu("GatedQuantize", kMinferDomain, {x, gate}, {false, false}, a, threads),
            expect);
    }
  }
}

// QGlobalAveragePool on floats (an SE block's QuantizeLinear folded in) at every ISA level
// against the reference, which is QuantizeLinear then the int8 pool: channel counts around the
// vectors and the 4-vector blocks, values that saturate, NaN and infinities, 1-3 threads (each
// a share of the pixels).
TEST_CASE("CPU QGlobalAveragePool on floats equals QuantizeLinear then the pool, bit for bit",
          "[int8]") {
  test::for_each_isa([](cpu::Isa) {
    std::mt19937 rng(11);
    for (int64_t c : {1, 7, 8, 16, 17, 33, 64, 65, 100, 131}) {
      INFO("channels " << c);
      Tensor x = random_tensor(Shape{2, 5, 3, c}, rng, -12.f, 12.f);
      x.data<float>()[0] = NAN;
      x.data<float>()[c] = INFINITY;
      x.data<float>()[x.numel() - 1] = -INFINITY;
      Attributes a;
      a.set("layout", std::string("NHWC"));
      a.set("x_scale", 0.07f);
      a.set("x_zero_point", int64_t{-9});
      a.set("y_scale", 0.05f);
      a.set("y_zero_point", int64_t{4});
      const Tensor quantized =
          run_ref("QuantizeLinear", "",
                  {x, Tensor::scalar<float>(0.07f), Tensor::scalar<int8_t>(-9)}, {})[0];
      const Tensor expect = run_ref("QGlobalAveragePool", kMinferDomain, {quantized}, a)[0];
      require_equal(run_ref("QGlobalAveragePool", kMinferDomain, {x}, a)[0], expect);
      for (int threads : {1, 2, 3})
        require_equal(run_cpu("QGlobalAveragePool", kMinferDomain, {x}, {false}, a, threads),
                      expect);
    }
  });
}

TEST_CASE("GatedQuantize refuses a gate that is not one value per channel", "[int8]") {
  std::mt19937 rng(10);
  Attributes a;
  a.set("y_scale", 0.1f);
  a.set("y_zero_point", int64_t{0});
  const Tensor x = random_tensor(Shape{1, 4, 4, 8}, rng, -1.f, 1.f);
  CHECK_THROWS_WITH(
      run_ref("GatedQuantize", kMinferDomain, {x, random_tensor(Shape{1, 8, 1, 1}, rng, 0.f, 1.f)},
              a),
      Catch::Contains("gate has shape [1,8,1,1]") && Catch::Contains("per channel"));
  CHECK_THROWS_WITH(
      run_ref("GatedQuantize", kMinferDomain, {x, random_tensor(Shape{1, 1, 1, 7}, rng, 0.f, 1.f)},
              a),
      Catch::Contains("gate has shape [1,1,1,7]"));
  a.set("y_scale", 0.f);
  CHECK_THROWS_WITH(
      run_ref("GatedQuantize", kMinferDomain, {x, random_tensor(Shape{8}, rng, 0.f, 1.f)}, a),
      Catch::Contains("y_scale"));
}

TEST_CASE("CPU Q/DQ, QAdd and int8 pools equal the reference bit for bit", "[int8]") {
  std::mt19937 rng(8);
  for (int64_t numel : {1, 7, 8, 31, 1000, 40000}) {
    INFO("numel " << numel);
    Tensor x = random_tensor(Shape{numel}, rng, -300.f, 300.f);
    for (DType t : {DType::i8, DType::u8}) {
      Tensor z = t == DType::i8 ? Tensor::scalar<int8_t>(-3) : Tensor::scalar<uint8_t>(130);
      std::vector<Tensor> in{x, Tensor::scalar<float>(1.f), z};
      Tensor q = run_ref("QuantizeLinear", "", in, {})[0];
      std::vector<Tensor> din{q, Tensor::scalar<float>(0.37f), z};
      Tensor d = run_ref("DequantizeLinear", "", din, {})[0];
      require_equal(run_cpu("DequantizeLinear", "", din, {false, true, true}, {}, 2), d);
    }
  }
  // Per axis, and int32 (bias) dequantization.
  Tensor x = random_tensor(Shape{2, 5, 3, 4}, rng, -5.f, 5.f);
  Tensor s = random_tensor(Shape{5}, rng, 0.01f, 0.1f);
  Tensor z = random_i8(Shape{5}, rng, -10, 10);
  Attributes ax;
  ax.set("axis", int64_t{1});
  Tensor q = run_ref("QuantizeLinear", "", {x, s, z}, ax)[0];
  require_equal(run_cpu("QuantizeLinear", "", {x, s, z}, {false, true, true}, ax, 2), q);
  require_equal(run_cpu("DequantizeLinear", "", {q, s, z}, {false, true, true}, ax, 2),
                run_ref("DequantizeLinear", "", {q, s, z}, ax)[0]);
  Tensor b = random_i32(Shape{9}, rng, -100000, 100000);
  Tensor bs = random_tensor(Shape{9}, rng, 0.001f, 0.01f);
  Attributes a0;
  a0.set("axis", int64_t{0});
  require_equal(run_cpu("DequantizeLinear", "", {b, bs, Tensor()}, {false, true, false}, a0, 1),
                run_ref("DequantizeLinear", "", {b, bs, Tensor()}, a0)[0]);

  // QAdd, including the clamp of a fused Relu.
  for (int64_t numel : {5, 64, 12345}) {
    Tensor a = random_i8(Shape{1, numel}, rng), bb = random_i8(Shape{1, numel}, rng);
    Attributes at;
    at.set("a_scale", 0.02f);
    at.set("a_zero_point", int64_t{-128});
    at.set("b_scale", 0.09f);
    at.set("b_zero_point", int64_t{5});
    at.set("y_scale", 0.05f);
    at.set("y_zero_point", int64_t{-9});
    at.set("y_min", int64_t{-9});
    require_equal(run_cpu("QAdd", kMinferDomain, {a, bb}, {false, false}, at, 2),
                  run_ref("QAdd", kMinferDomain, {a, bb}, at)[0]);
  }

  // Pools (NHWC): odd sizes, strides, padding, both count_include_pad settings.
  for (auto [h, w, c, k, st, p] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>{7, 7, 3, 3, 2, 1},
        {8, 5, 17, 2, 2, 0},
        {9, 9, 64, 3, 1, 1},
        {5, 6, 57, 3, 2, 1},  // 32 + 16 + 9 channels: each step of the vector max
        {4, 3, 121, 3, 1, 1},  // 64 + 32 + 16 + 8 + 1: each block of the global pool's sums
        {6, 6, 1, 5, 3, 2}}) {
    INFO("pool h" << h << " w" << w << " c" << c << " k" << k << " s" << st << " p" << p);
    Tensor xi = random_i8(Shape{2, h, w, c}, rng);
    Attributes a;
    a.set("layout", std::string("NHWC"));
    a.set("kernel_shape", std::vector<int64_t>{k, k});
    a.set("strides", std::vector<int64_t>{st, st});
    a.set("pads", std::vector<int64_t>{p, p, p, p});
    require_equal(run_cpu("QMaxPool", kMinferDomain, {xi}, {false}, a, 2),
                  run_ref("QMaxPool", kMinferDomain, {xi}, a)[0]);
    a.set("x_scale", 0.1f);
    a.set("x_zero_point", int64_t{3});
    a.set("y_scale", 0.07f);
    a.set("y_zero_point", int64_t{-4});
    // (y_scale 0.5: every window's multiplier below 0.25, no pre-shift; 0.07: the small
    // windows at the edges pre-shift: both forms of the output stage.)
    for (float y_scale : {0.07f, 0.5f})
      for (int64_t include : {0, 1}) {
        a.set("y_scale", y_scale);
        a.set("count_include_pad", include);
        require_equal(run_cpu("QAveragePool", kMinferDomain, {xi}, {false}, a, 2),
                      run_ref("QAveragePool", kMinferDomain, {xi}, a)[0]);
      }
    a.set("y_scale", 0.07f);
    Attributes g;
    for (const char* key : {"layout", "x_scale", "x_zero_point", "y_scale", "y_zero_point"})
      g.set(key, a.all().at(key));
    require_equal(run_cpu("QGlobalAveragePool", kMinferDomain, {xi}, {false}, g, 2),
                  run_ref("QGlobalAveragePool", kMinferDomain, {xi}, g)[0]);
  }
  // Windows of 256 taps of -128 (the 16-bit sums' limit) and of 289 (past it: 32-bit sums).
  for (int64_t k : {16, 17}) {
    INFO("average pool of " << k << "x" << k << " taps");
    Tensor xi = random_i8(Shape{1, k + 1, k, 80}, rng, -128, -128);
    Attributes a;
    a.set("layout", std::string("NHWC"));
    a.set("kernel_shape", std::vector<int64_t>{k, k});
    a.set("x_scale", 0.1f);
    a.set("x_zero_point", int64_t{3});
    a.set("y_scale", 0.4f);
    a.set("y_zero_point", int64_t{-4});
    require_equal(run_cpu("QAveragePool", kMinferDomain, {xi}, {false}, a, 2),
                  run_ref("QAveragePool", kMinferDomain, {xi}, a)[0]);
  }
}

TEST_CASE("ISA levels can be capped and a level the CPU lacks is refused", "[int8][isa]") {
  IsaGuard guard;
  auto isas = cpu::supported_isas();
  REQUIRE(!isas.empty());  // the tests, like the int8 kernels, need AVX2
  CHECK(isas.front() == cpu::Isa::avx2);
  for (cpu::Isa isa : cpu::kAllIsas) {
    if (cpu::isa_supported(isa)) {
      cpu::set_isa_cap(isa);
      CHECK(cpu::active_isa() == isa);
    } else {
      CHECK_THROWS_AS(cpu::set_isa_cap(isa), Error);
      test::ScopedEnv env("MINFER_ISA", cpu::isa_name(isa));
      cpu::reset_isa_cap();
      try {
        cpu::active_isa();
        FAIL("MINFER_ISA=" << cpu::isa_name(isa) << " was accepted on a CPU without it");
      } catch (const Error& e) {
        CHECK(e.code() == ErrorCode::Unsupported);
        CHECK(std::string(e.what()).find("cannot run") != std::string::npos);
      }
      // Planning an int8 kernel under that cap is the same error, not an illegal instruction.
      std::mt19937 rng(3);
      Attributes a;
      a.set("x_scale", 0.05f);
      a.set("x_zero_point", int64_t{0});
      a.set("w_scale", std::vector<float>{0.01f});
      const std::vector<Tensor> in{random_i8(Shape{4, 16}, rng),
                                   random_i8(Shape{8, 16}, rng, -127, 127)};
      CHECK_THROWS_AS(run_cpu("QGemm", kMinferDomain, in, {false, true}, a, 1), Error);
    }
  }
  cpu::reset_isa_cap();
  CHECK(cpu::active_isa() == isas.back());
  {
    test::ScopedEnv env("MINFER_ISA", "avx2");
    CHECK(cpu::active_isa() == cpu::Isa::avx2);
  }
  {
    test::ScopedEnv env("MINFER_ISA", "sse2");
    try {
      cpu::active_isa();
      FAIL("MINFER_ISA=sse2 was accepted");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::InvalidArgument);
    }
  }
  WARN("ISA levels on this CPU: " << [&] {
    std::string s;
    for (auto i : isas) s += std::string(s.empty() ? "" : ", ") + cpu::isa_name(i);
    return s;
  }());
}

TEST_CASE("QGemm takes A's rows of any rank from 2 and names a bad A or W", "[int8]") {
  std::mt19937 rng(25);
  const Attributes a = qgemm_attrs("");
  const Tensor w = random_i8(Shape{6, 8}, rng, -127, 127);
  const Tensor y = run_ref("QGemm", kMinferDomain, {random_i8(Shape{2, 3, 4, 8}, rng), w}, a)[0];
  CHECK(y.shape() == Shape{2, 3, 4, 6});
  CHECK_THROWS_WITH(run_ref("QGemm", kMinferDomain, {random_i8(Shape{8}, rng), w}, a),
                    Catch::Contains("rank >= 2") && Catch::Contains("[8]"));
  CHECK_THROWS_WITH(run_ref("QGemm", kMinferDomain, {random_i8(Shape{2, 3, 7}, rng), w}, a),
                    Catch::Contains("[2,3,7]") && Catch::Contains("K = A's last dim"));
}
