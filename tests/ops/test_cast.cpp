// Cast and CastLike: every pair of minfer's element types, float16 rounding, the values
// ONNX leaves to the implementation (matched to ONNX Runtime), errors, and constant folding.
#include <bit>
#include <limits>

#include "graph/pass.h"
#include "graph/passes/passes.h"
#include "op_test_util.h"
#include "runtime/io_test_util.h"

using namespace minfer;
using namespace minfer::test;

namespace {

// TensorProto.DataType values.
constexpr int64_t kFloat = 1, kUint8 = 2, kInt8 = 3, kInt32 = 6, kInt64 = 7, kBool = 9,
                  kFloat16 = 10, kDouble = 11;

Tensor cast(const Tensor& x, int64_t to) { return ref1("Cast", {x}, attrs({{"to", to}})); }

std::vector<uint16_t> half_bits(const Tensor& t) {
  REQUIRE(t.dtype() == DType::f16);
  const uint16_t* p = static_cast<const uint16_t*>(t.raw());
  return std::vector<uint16_t>(p, p + t.numel());
}

Tensor half_tensor(const std::vector<uint16_t>& bits) {
  Tensor t(DType::f16, Shape{static_cast<int64_t>(bits.size())});
  std::copy(bits.begin(), bits.end(), static_cast<uint16_t*>(t.raw()));
  return t;
}

std::vector<uint8_t> bool_bytes(const Tensor& t) {
  REQUIRE(t.dtype() == DType::boolean);
  const uint8_t* p = static_cast<const uint8_t*>(t.raw());
  return std::vector<uint8_t>(p, p + t.numel());
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

}  // namespace

TEST_CASE("Cast: float to integers truncates toward zero", "[integer][ops]") {
  Tensor x = f32({8}, {1.7f, -1.7f, -0.5f, 2.5f, 127.9f, -128.9f, 0.f, -0.f});
  require_values<int32_t>(cast(x, kInt32), {8}, {1, -1, 0, 2, 127, -128, 0, 0});
  require_values<int64_t>(cast(x, kInt64), {8}, {1, -1, 0, 2, 127, -128, 0, 0});
  require_values<int8_t>(cast(x, kInt8), {8}, {1, -1, 0, 2, 127, -128, 0, 0});
  require_values<uint8_t>(cast(x, kUint8), {8}, {1, 255, 0, 2, 127, 128, 0, 0});
  // Out of range: undefined in ONNX; ONNX Runtime and numpy (x86) keep the low bits of the
  // int32 value, and NaN / values beyond int32 become INT32_MIN (INT64_MIN for INT64).
  Tensor big = f32({6}, {300.f, -300.f, 3e9f, kNaN, -kInf, 1e20f});
  require_values<int8_t>(cast(big, kInt8), {6}, {44, -44, 0, 0, 0, 0});
  require_values<uint8_t>(cast(big, kUint8), {6}, {44, 212, 0, 0, 0, 0});
  const int32_t i32min = std::numeric_limits<int32_t>::min();
  require_values<int32_t>(cast(big, kInt32), {6}, {300, -300, i32min, i32min, i32min, i32min});
  const int64_t i64min = std::numeric_limits<int64_t>::min();
  require_values<int64_t>(cast(big, kInt64), {6}, {300, -300, 3000000000, i64min, i64min, i64min});
}

TEST_CASE("Cast: integers, bool and float conversions", "[integer][ops]") {
  Tensor i = i64({6}, {-1, 0, 1, 255, 256, (int64_t{1} << 40) + 1});
  require_values<int8_t>(cast(i, kInt8), {6}, {-1, 0, 1, -1, 0, 1});  // wraps
  require_values<uint8_t>(cast(i, kUint8), {6}, {255, 0, 1, 255, 0, 1});
  require_values<int32_t>(cast(i, kInt32), {6}, {-1, 0, 1, 255, 256, 1});
  require_values<float>(cast(i, kFloat), {6}, {-1.f, 0.f, 1.f, 255.f, 256.f, 1099511627776.f});
  CHECK(bool_bytes(cast(i, kBool)) == std::vector<uint8_t>{1, 0, 1, 1, 1, 1});

  Tensor u = Tensor::from_vector<uint8_t>({0, 1, 128, 255}, {4});
  require_values<int8_t>(cast(u, kInt8), {4}, {0, 1, -128, -1});
  require_values<int32_t>(cast(u, kInt32), {4}, {0, 1, 128, 255});
  require_values<float>(cast(u, kFloat), {4}, {0.f, 1.f, 128.f, 255.f});
  Tensor s = Tensor::from_vector<int8_t>({-128, -1, 0, 127}, {4});
  require_values<uint8_t>(cast(s, kUint8), {4}, {128, 255, 0, 127});
  require_values<int64_t>(cast(s, kInt64), {4}, {-128, -1, 0, 127});

  Tensor b = Tensor::from_vector<bool>({true, false, true}, {3});
  require_values<float>(cast(b, kFloat), {3}, {1.f, 0.f, 1.f});
  require_values<int32_t>(cast(b, kInt32), {3}, {1, 0, 1});
  CHECK(half_bits(cast(b, kFloat16)) == std::vector<uint16_t>{0x3c00, 0, 0x3c00});
  Tensor f = f32({4}, {0.f, -0.f, 0.25f, kNaN});
  CHECK(bool_bytes(cast(f, kBool)) == std::vector<uint8_t>{0, 0, 1, 1});  // NaN is true

  // Same type: a copy, not the same buffer.
  Tensor same = cast(f, kFloat);
  CHECK(same.raw() != f.raw());
  CHECK(same.to_vector<float>()[2] == 0.25f);
  // int32 -> float rounds to nearest even (2^24 + 1 is a tie).
  require_values<float>(cast(i32({2}, {16777217, -16777219}), kFloat), {2},
                        {16777216.f, -16777220.f});
}

TEST_CASE("Cast: float to float16 rounds to nearest even", "[integer][ops]") {
  const float tiny = std::ldexp(1.f, -24);  // the smallest float16 subnormal
  // clang-format off
  const std::vector<std::pair<float, uint16_t>> cases{
      {1.f, 0x3c00}, {-2.f, 0xc000}, {0.f, 0x0000}, {-0.f, 0x8000},
      {65504.f, 0x7bff}, {65519.99f, 0x7bff}, {65520.f, 0x7c00}, {1e10f, 0x7c00},
      {-kInf, 0xfc00}, {kInf, 0x7c00},
      {1.f + std::ldexp(1.f, -11), 0x3c00},      // tie: to the even 1.0
      {1.f + 3 * std::ldexp(1.f, -11), 0x3c02},  // tie: to the even 1 + 2^-9
      {1.f + std::ldexp(1.f, -11) + std::ldexp(1.f, -20), 0x3c01},  // just above the tie
      {tiny, 0x0001}, {tiny / 2, 0x0000}, {tiny * 1.5f, 0x0002}, {tiny * 0.75f, 0x0001},
      {tiny * 2.5f, 0x0002}, {1023 * tiny, 0x03ff}, {std::ldexp(1.f, -14), 0x0400},
      {1023.5f * tiny, 0x0400},  // tie between the largest subnormal and the smallest normal
      {1e-10f, 0x0000}, {-1e-10f, 0x8000}, {0.1f, 0x2e66}, {3.14159265f, 0x4248}};
  // clang-format on
  std::vector<float> in;
  std::vector<uint16_t> want;
  for (auto [f, h] : cases) in.push_back(f), want.push_back(h);
  Tensor h = cast(f32({int64_t(in.size())}, in), kFloat16);
  CHECK(half_bits(h) == want);
  std::vector<uint16_t> nan = half_bits(cast(f32({1}, {kNaN}), kFloat16));
  CHECK((nan[0] & 0x7c00) == 0x7c00);
  CHECK((nan[0] & 0x03ff) != 0);

#ifdef __FLT16_MANT_DIG__
  // The compiler's own float -> _Float16 conversion (round to nearest even) is an independent
  // oracle: compare on a spread of a million float bit patterns.
  std::vector<float> sweep;
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += 4099) {
    float f = std::bit_cast<float>(static_cast<uint32_t>(bits));
    if (!std::isnan(f)) sweep.push_back(f);
  }
  std::vector<uint16_t> got = half_bits(cast(f32({int64_t(sweep.size())}, sweep), kFloat16));
  int64_t bad = 0;
  for (size_t i = 0; i < sweep.size(); ++i)
    bad += got[i] != std::bit_cast<uint16_t>(static_cast<_Float16>(sweep[i]));
  CHECK(bad == 0);
#endif
}

TEST_CASE("Cast: float16 to other types is exact, and round-trips", "[integer][ops]") {
  // Every non-NaN float16 -> float -> float16 is the identity.
  std::vector<uint16_t> all;
  for (uint32_t b = 0; b < 0x10000; ++b)
    if ((b & 0x7c00) != 0x7c00 || (b & 0x3ff) == 0) all.push_back(static_cast<uint16_t>(b));
  Tensor h = half_tensor(all);
  Tensor f = cast(h, kFloat);
  CHECK(half_bits(cast(f, kFloat16)) == all);
  Tensor some = half_tensor({0x3c00, 0xc500, 0x0001, 0x7bff, 0xfc00, 0x3e00, 0x8000});
  const float tiny = std::ldexp(1.f, -24);
  require_values<float>(cast(some, kFloat), {7}, {1.f, -5.f, tiny, 65504.f, -kInf, 1.5f, -0.f});
  require_values<int32_t>(cast(some, kInt32), {7},
                          {1, -5, 0, 65504, std::numeric_limits<int32_t>::min(), 1, 0});
  require_values<int8_t>(cast(some, kInt8), {7}, {1, -5, 0, -32, 0, 1, 0});
  CHECK(bool_bytes(cast(some, kBool)) == std::vector<uint8_t>{1, 1, 1, 1, 1, 1, 0});
  // Integers to float16 go through float: 2049 is a tie between 2048 and 2050.
  CHECK(half_bits(cast(i32({4}, {2049, 2051, -65504, 70000}), kFloat16)) ==
        std::vector<uint16_t>{0x6800, 0x6802, 0xfbff, 0x7c00});
}

TEST_CASE("CastLike takes the type of its second input", "[integer][ops]") {
  Tensor like = Tensor::from_vector<int8_t>({0}, {1});
  Tensor y = ref1("CastLike", {f32({2, 2}, {1.9f, -2.9f, 200.f, 0.f}), like});
  require_values<int8_t>(y, {2, 2}, {1, -2, -56, 0});
  Tensor h = ref1("CastLike", {i32({1}, {3}), half_tensor({0})});
  CHECK(half_bits(h) == std::vector<uint16_t>{0x4200});
  auto out = infer("CastLike", {info(DType::u8, sym({-1, 3}, {"N", ""})), info(DType::f16, {})});
  CHECK(out[0].dtype == DType::f16);
  CHECK(shape_str(out[0]) == "[N,3]");
  require_error([&] { infer("CastLike", {info({2})}); }, ErrorCode::InvalidModel,
                "has 1 inputs, expected 2");
}

TEST_CASE("Cast: shape inference and errors name the node", "[integer][ops]") {
  auto out =
      infer("Cast", {info(DType::i64, sym({-1, 4}, {"batch", ""}))}, attrs({{"to", kFloat16}}));
  CHECK(out[0].dtype == DType::f16);
  CHECK(shape_str(out[0]) == "[batch,4]");
  // saturate only matters for float8 targets: accepted and ignored here.
  out = infer("Cast", {info({2})}, attrs({{"to", kUint8}, {"saturate", int64_t{0}}}));
  CHECK(out[0].dtype == DType::u8);

  require_error([&] { infer("Cast", {info({2})}); }, ErrorCode::InvalidModel,
                "required attribute 'to' is missing");
  require_error(
      [&] {
        infer("Cast", {info({2})}, attrs({{"to", kDouble}}));
      },
      ErrorCode::Unsupported, "casting to DOUBLE (to = 11) is not supported");
  require_error(
      [&] {
        infer("Cast", {info({2})}, attrs({{"to", int64_t{17}}}));
      },
      ErrorCode::Unsupported,
      "FLOAT8E4M3FN (to = 17) is not supported: minfer has no "
      "float8 tensors");
  require_error(
      [&] {
        infer("Cast", {info({2})}, attrs({{"to", int64_t{19}}, {"saturate", int64_t{1}}}));
      },
      ErrorCode::Unsupported, "FLOAT8E5M2");
  require_error(
      [&] {
        infer("Cast", {info({2})}, attrs({{"to", int64_t{99}}}));
      },
      ErrorCode::InvalidModel, "'to' = 99 is not an ONNX element type");
  require_error(
      [&] {
        ref1("Cast", {f32({1}, {1.f})}, attrs({{"to", int64_t{8}}}));
      },
      ErrorCode::Unsupported, "STRING");
}

TEST_CASE("Cast of an initializer is constant-folded with the reference kernel",
          "[integer][graph]") {
  auto make = [] {
    Graph g;
    Value* x = g.add_input("x", DType::f32, Shape{3});
    Value* w = g.add_constant("w", Tensor::from_vector<int8_t>({-3, 0, 7}, {3}));
    Node* c = g.add_node("Cast", "cast_w", {w}, 1, attrs({{"to", kFloat}}));
    Node* add = g.add_node("Add", "add", {x, c->outputs[0]});
    g.add_output(add->outputs[0]);
    return g;
  };
  Graph g = make();
  g.infer_shapes();
  PassLog log;
  CHECK(passes::fold_constants(g, log));
  for (const Node* n : g.nodes()) CHECK(n->op_type != "Cast");
  REQUIRE(g.find_value("cast_w"));
  REQUIRE(g.find_value("cast_w")->is_constant());
  require_values<float>(*g.find_value("cast_w")->constant, {3}, {-3.f, 0.f, 7.f});
  // Through a session (default pipeline) the result is the same.
  Session s(make());
  int casts = 0;
  for (const Node* n : s.graph().nodes()) casts += n->op_type == "Cast";
  CHECK(casts == 0);
  require_values<float>(s.run_one(f32({3}, {1.f, 2.f, 3.f})), {3}, {-2.f, 2.f, 10.f});
}

TEST_CASE("Cast matches ONNX Runtime bit for bit", "[integer][python]") {
  // Ties, the float16 limits, subnormals, and values out of the integer ranges.
  std::vector<float> v{0.f,           -0.f,           0.5f,          1.5f,    2.5f,    -2.5f,
                       -0.7f,         127.5f,         128.f,         255.9f,  256.f,   -129.f,
                       300.f,         -300.f,         65504.f,       65519.f, 65520.f, 1e5f,
                       -1e5f,         3e9f,           -3e9f,         1e20f,   6e-8f,   3e-8f,
                       1e-5f,         0.1f,           kInf,          -kInf,   kNaN,    2147483520.f,
                       -2147483648.f, 1.00048828125f, 1.00146484375f};
  std::mt19937 rng(7);
  Tensor r = random_tensor({2000}, rng, -70000.f, 70000.f);
  for (int i = 0; i < 2000; ++i) v.push_back(r.data<float>()[i] * (i % 2 ? 1.f : 1e-4f));
  const auto dir = temp_dir("cast_ort");
  Tensor x = f32({int64_t(v.size())}, v);
  save_npy(x, (dir / "x.npy").string());
  REQUIRE(run_python("ort_integer_ops.py", "cast '" + dir.string() + "'") == 0);
  const std::vector<std::pair<int64_t, std::string>> targets{
      {kInt8, "int8"},   {kUint8, "uint8"},     {kInt32, "int32"},
      {kInt64, "int64"}, {kFloat16, "float16"}, {kBool, "bool"}};
  for (const auto& [to, name] : targets) {
    INFO("to " << name);
    Tensor ours = cast(x, to), theirs = load_npy((dir / ("cast_" + name + ".npy")).string());
    if (to == kFloat16) {  // NaN payloads may differ: compare NaN-ness there
      std::vector<uint16_t> a = half_bits(ours), b = half_bits(theirs);
      for (size_t i = 0; i < a.size(); ++i)
        if (std::isnan(v[i])) a[i] = b[i] = 0x7e00;
      CHECK(a == b);
    } else {
      require_equal(ours, theirs);
    }
  }
}
