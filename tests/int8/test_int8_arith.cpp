// The int8 arithmetic (docs/int8.md): multipliers, rounding, QuantizeLinear/DequantizeLinear
// (including the ONNX conformance cases).
#include <filesystem>

#include "int8/int8_test_util.h"
#include "ops/int8/int8_math.h"

using namespace minfer;
using namespace minfer::test;

TEST_CASE("make_multiplier represents M to 2^-30 and requantize rounds half up", "[int8]") {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> exp_dist(-40, 19.9);
  std::uniform_int_distribution<int32_t> acc_dist(-(1 << 24), 1 << 24);
  for (int trial = 0; trial < 2000; ++trial) {
    const double M = std::pow(2.0, exp_dist(rng));
    const int8::Multiplier q = int8::make_multiplier(M);
    REQUIRE(q.n >= 33);
    REQUIRE(q.n <= 63);
    REQUIRE(q.m >= 0);
    const long double rep = std::ldexp(static_cast<long double>(q.m), q.l - q.n);
    if (q.n < 63) REQUIRE(std::fabs(static_cast<double>(rep / M) - 1) < std::ldexp(1.0, -29));
    for (int k = 0; k < 20; ++k) {
      int32_t acc = acc_dist(rng);
      if (q.l > 0) acc = std::clamp(acc, -(1 << (31 - q.l)), (1 << (31 - q.l)) - 1);
      // Exact: floor(acc * m * 2^(l-n) + 1/2) with 128-bit integers.
      __int128 num = static_cast<__int128>(acc) * q.m * (__int128{1} << q.l);
      __int128 den = __int128{1} << q.n;
      __int128 t = num + den / 2;
      __int128 expect = t >= 0 ? t / den : -((-t + den - 1) / den);
      REQUIRE(int8::requantize(acc, q) == static_cast<int32_t>(expect));
    }
  }
  // Ties go up: 5 * 0.25 = 1.25 -> 1; 6 * 0.25 = 1.5 -> 2; -6 * 0.25 = -1.5 -> -1.
  const auto quarter = int8::make_multiplier(0.25);
  CHECK(int8::requantize(5, quarter) == 1);
  CHECK(int8::requantize(6, quarter) == 2);
  CHECK(int8::requantize(-6, quarter) == -1);
  CHECK(int8::requantize(-7, quarter) == -2);
  // M >= 0.25 uses the pre-shift and stays exact.
  const auto three = int8::make_multiplier(3.0);
  CHECK(three.l == 4);
  CHECK(int8::requantize(41, three) == 123);
  CHECK(int8::requantize(-41, three) == -123);
  CHECK(int8::requantize(1 << 30, three) > 127);  // clamped, still far out of range
  CHECK_THROWS_AS(int8::make_multiplier(-1), Error);
  CHECK_THROWS_AS(int8::make_multiplier(1e7), Error);
  CHECK(int8::requantize(123456, int8::make_multiplier(0)) == 0);
}

TEST_CASE("QAdd multipliers: one rounding in int32", "[int8]") {
  const auto q = int8::make_add_multipliers(0.75, 1.25);
  CHECK(q.ma < (1 << 21));
  CHECK(q.mb < (1 << 21));
  CHECK(int8::add_requantize(4, 4, q) == 8);    // 3 + 5
  CHECK(int8::add_requantize(2, 0, q) == 2);    // 1.5 -> 2 (half up)
  CHECK(int8::add_requantize(-2, 0, q) == -1);  // -1.5 -> -1
  CHECK(int8::add_requantize(-255, -255, q) == -510);
  CHECK_THROWS_AS(int8::make_add_multipliers(2e6, 1), Error);
}

TEST_CASE("QuantizeLinear rounds half to even and saturates", "[int8]") {
  CHECK(int8::quantize_value(2.5f, 1.f, 0, -128, 127) == 2);
  CHECK(int8::quantize_value(3.5f, 1.f, 0, -128, 127) == 4);
  CHECK(int8::quantize_value(-2.5f, 1.f, 0, -128, 127) == -2);
  CHECK(int8::quantize_value(1000.f, 1.f, 0, -128, 127) == 127);
  CHECK(int8::quantize_value(-1e30f, 1.f, 3, -128, 127) == -128);
  CHECK(int8::quantize_value(NAN, 1.f, 5, -128, 127) == 5);
  CHECK(int8::quantize_value(INFINITY, 0.5f, 0, 0, 255) == 255);
  CHECK(int8::quantize_value(0.3f, 0.1f, 250, 0, 255) == 253);

  // Per axis, through the reference kernel.
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  Tensor s = Tensor::from_vector<float>({1, 2}, Shape{2});
  Tensor z = Tensor::from_vector<int8_t>({0, 10}, Shape{2});
  Attributes a;
  a.set("axis", int64_t{0});
  Tensor y = run_ref("QuantizeLinear", "", {x, s, z}, a)[0];
  CHECK(y.to_vector<int8_t>() == std::vector<int8_t>{1, 2, 3, 12, 12, 13});
  Tensor back = run_ref("DequantizeLinear", "", {y, s, z}, a)[0];
  CHECK(back.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 4, 6});
  // No zero point: uint8.
  Tensor u = run_ref("QuantizeLinear", "", {x, Tensor::scalar<float>(0.5f), Tensor()}, {})[0];
  CHECK(u.dtype() == DType::u8);
  CHECK(u.to_vector<uint8_t>() == std::vector<uint8_t>{2, 4, 6, 8, 10, 12});
}

TEST_CASE("choose_activation_params keeps zero exact", "[int8]") {
  auto p = int8::choose_activation_params(0.f, 6.f);
  CHECK(p.zero_point == -128);
  CHECK(p.scale == Approx(6.0 / 255));
  p = int8::choose_activation_params(-1.f, 1.f);
  CHECK((p.zero_point == 0 || p.zero_point == -1));  // -128 + ~127.5
  p = int8::choose_activation_params(2.f, 3.f);      // widened to [0, 3]
  CHECK(p.zero_point == -128);
  p = int8::choose_activation_params(0.f, 0.f);
  CHECK(p.scale == 1.f);
  CHECK(int8::choose_weight_scale(0.f) == 1.f);
  CHECK(int8::choose_weight_scale(12.7f) == Approx(0.1f));
}

namespace {
// Runs an ONNX backend test case through a Session and compares output 0 bit for bit.
void run_onnx_case(const std::string& name) {
  auto dir = data_dir() / "onnx-node-tests" / name;
  INFO("case " << dir.string());
  REQUIRE(std::filesystem::exists(dir / "model.onnx"));
  Graph g = load_onnx((dir / "model.onnx").string());
  std::vector<std::string> inputs;
  for (const Value* v : g.inputs()) inputs.push_back(v->name);
  Session s(std::move(g));
  NamedTensors in;
  for (size_t i = 0; i < inputs.size(); ++i)
    in[inputs[i]] =
        load_tensor_pb((dir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb")).string());
  NamedTensors out = s.run(in);
  Tensor expect = load_tensor_pb((dir / "test_data_set_0" / "output_0.pb").string());
  require_equal(out.at(s.output_names()[0]), expect);
}
}  // namespace

TEST_CASE("QuantizeLinear/DequantizeLinear pass the ONNX conformance cases", "[int8]") {
  for (const char* c : {"test_quantizelinear", "test_quantizelinear_axis", "test_dequantizelinear",
                        "test_dequantizelinear_axis"})
    run_onnx_case(c);
}

TEST_CASE("blocked QuantizeLinear is declined as Unsupported", "[int8]") {
  auto dir = data_dir() / "onnx-node-tests" / "test_quantizelinear_blocked_asymmetric";
  try {
    Session s(load_onnx((dir / "model.onnx").string()));
    FAIL("expected an Unsupported error");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::Unsupported);
    CHECK(std::string(e.what()).find("block") != std::string::npos);
  }
}
