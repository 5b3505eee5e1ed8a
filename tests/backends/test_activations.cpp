// The CPU epilogue's activations (backends/cpu/epilogue.h) against double-precision formulas.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/epilogue.h"
#include "isa/for_each_isa.h"

using minfer::cpu::Activation;

namespace {
Activation make(Activation::Kind kind) {
  Activation a;
  a.enabled = true;
  a.kind = kind;
  return a;
}

double hard_sigmoid(double x, double alpha, double beta) {
  return std::min(1.0, std::max(0.0, alpha * x + beta));
}

// Largest |got - want| / (|want| + 1e-7 |x|) over inputs spanning exp's range, in runs of
// every length 1..19 (the vector code's tail) and one long run. The 1e-7 |x| term forgives what
// float rounding of x's own scale must cost where the result is tiny (HardSwish near -3, the
// far left tail of Sigmoid and SiLU).
double worst_error(const Activation& act, double (*want)(double, const Activation&)) {
  std::vector<float> xs;
  for (double x = -100; x <= 100; x += 0.0137) xs.push_back(float(x));
  for (float x : {0.f, -0.f, 1e-30f, -1e-30f, 87.f, -87.f, 88.5f, -88.5f, 1e6f, -1e6f})
    xs.push_back(x);
  double worst = 0;
  auto check = [&](size_t begin, size_t n) {
    std::vector<float> y(xs.begin() + long(begin), xs.begin() + long(begin + n));
    act.apply(y.data(), int64_t(n));
    for (size_t i = 0; i < n; ++i) {
      const double w = want(xs[begin + i], act);
      const double scale = std::abs(w) + 1e-7 * std::abs(double(xs[begin + i])) + 1e-30;
      worst = std::max(worst, std::abs(y[i] - w) / scale);
    }
  };
  for (size_t n = 1; n < 20; ++n) check(xs.size() - n, n);
  check(0, xs.size());
  return worst;
}
}  // namespace

TEST_CASE("CPU activations match their definitions within a few ulp", "[cpu][activation]") {
  // Compiled per ISA level (8 or 16 lanes): each level this CPU has.
  minfer::test::for_each_isa([](minfer::cpu::Isa) {
    using Kind = Activation::Kind;
    auto sigmoid = [](double x, const Activation&) { return 1 / (1 + std::exp(-x)); };
    auto silu = [](double x, const Activation&) { return x / (1 + std::exp(-x)); };
    auto hsig = [](double x, const Activation& a) { return hard_sigmoid(x, a.alpha, a.beta); };
    auto hswish = [](double x, const Activation&) { return x * hard_sigmoid(x, 1.0 / 6, 0.5); };
    Activation hard = make(Kind::HardSigmoid);
    hard.alpha = 0.3f;
    hard.beta = 0.45f;
    CHECK(worst_error(make(Kind::Sigmoid), sigmoid) < 5e-7);
    CHECK(worst_error(make(Kind::Silu), silu) < 5e-7);
    CHECK(worst_error(hard, hsig) < 2e-7);
    // x / 6 + 1/2 cancels near x = -3: float's rounding of it shows there (measured 9.2e-6).
    CHECK(worst_error(make(Kind::HardSwish), hswish) < 2e-5);
  });
}

TEST_CASE("A parsed smooth activation keeps the ISA level it was parsed at", "[cpu][activation]") {
  minfer::test::for_each_isa([](minfer::cpu::Isa isa) {
    minfer::Node node;
    node.attrs.set("activation", std::string("Silu"));
    const Activation act = minfer::cpu::parse_activation(node);
    CHECK(act.smooth_fn == minfer::cpu::smooth_activation_for(isa));
    node.attrs.set("activation", std::string("Relu"));
    CHECK(minfer::cpu::parse_activation(node).smooth_fn == nullptr);  // a clamp: no code
  });
}

TEST_CASE("CPU activations keep NaN and saturate at infinities", "[cpu][activation]") {
  minfer::test::for_each_isa([](minfer::cpu::Isa) {
    using Kind = Activation::Kind;
    const float inf = std::numeric_limits<float>::infinity();
    for (Kind kind : {Kind::Sigmoid, Kind::Silu, Kind::HardSigmoid, Kind::HardSwish}) {
      std::vector<float> v{std::nanf(""), inf, -inf, 0.f};
      make(kind).apply(v.data(), 3);
      INFO(int(kind));
      CHECK(std::isnan(v[0]));
      CHECK(v[3] == 0.f);  // past n: untouched
    }
    std::vector<float> v{inf, -inf};
    make(Kind::Sigmoid).apply(v.data(), 2);
    CHECK(v[0] == 1.f);
    CHECK(v[1] < 1e-38f);
    v = {inf, -1e6f};
    make(Kind::HardSwish).apply(v.data(), 2);
    CHECK(v[0] == inf);
    CHECK(v[1] == 0.f);
  });
}
