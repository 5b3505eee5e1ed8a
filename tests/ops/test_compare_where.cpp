// Less, Greater, Equal and Where: hand-computed values, broadcasting (also symbolic), the
// dtypes they take, error paths, and the ONNX conformance cases made of them.
#include <cmath>

#include "op_test_util.h"
#include "runtime/conformance.h"

using namespace minfer;
using namespace minfer::test;

namespace {

Tensor bools(Shape s, std::vector<bool> v) {
  Tensor t(DType::boolean, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) t.data<bool>()[i] = v[i];
  return t;
}

std::vector<bool> bool_values(const Tensor& t) {
  REQUIRE(t.dtype() == DType::boolean);
  return std::vector<bool>(t.data<bool>(), t.data<bool>() + t.numel());
}

// A float16 tensor from IEEE half bit patterns.
Tensor halves(Shape s, std::vector<uint16_t> bits) {
  Tensor t(DType::f16, std::move(s));
  for (size_t i = 0; i < bits.size(); ++i) static_cast<uint16_t*>(t.raw())[i] = bits[i];
  return t;
}

template <typename T>
Tensor typed(Shape s, std::vector<T> v) {
  return Tensor::from_vector<T>(v, std::move(s));
}

}  // namespace

TEST_CASE("Less/Greater/Equal compare with numpy broadcasting", "[ops][compare-reduce]") {
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = f32({3}, {2, 2, 7});
  Tensor y = ref1("Less", {a, b});
  CHECK(y.shape() == Shape{2, 3});
  CHECK(bool_values(y) == std::vector<bool>{true, false, true, false, false, true});
  CHECK(bool_values(ref1("Greater", {a, b})) ==
        std::vector<bool>{false, false, false, true, true, false});
  CHECK(bool_values(ref1("Equal", {a, b})) ==
        std::vector<bool>{false, true, false, false, false, false});
  // A scalar against a column: [2,1] vs [] -> [2,1].
  y = ref1("Greater", {f32({2, 1}, {-1, 1}), Tensor::scalar(0.f)});
  CHECK(y.shape() == Shape{2, 1});
  CHECK(bool_values(y) == std::vector<bool>{false, true});
  // NaN compares false with everything, itself included.
  Tensor nan = f32({2}, {NAN, 1});
  CHECK(bool_values(ref1("Less", {nan, f32({2}, {0, NAN})})) == std::vector<bool>{false, false});
  CHECK(bool_values(ref1("Equal", {nan, nan})) == std::vector<bool>{false, true});
}

TEST_CASE("Less/Greater/Equal on integer and bool types", "[ops][compare-reduce]") {
  CHECK(bool_values(ref1("Less", {typed<int8_t>({3}, {-128, 0, 127}), typed<int8_t>({}, {0})})) ==
        std::vector<bool>{true, false, false});
  CHECK(bool_values(
            ref1("Greater", {typed<uint8_t>({2}, {200, 3}), typed<uint8_t>({2}, {100, 4})})) ==
        std::vector<bool>{true, false});
  CHECK(bool_values(ref1("Greater", {i32({2}, {-1, 5}), i32({1}, {0})})) ==
        std::vector<bool>{false, true});
  CHECK(bool_values(ref1(
            "Equal", {i64({3}, {int64_t(1) << 40, 2, 3}), i64({3}, {int64_t(1) << 40, 0, 3})})) ==
        std::vector<bool>{true, false, true});
  CHECK(bool_values(ref1("Equal", {bools({2}, {true, false}), bools({1}, {false})})) ==
        std::vector<bool>{false, true});
}

TEST_CASE("Less/Greater/Equal on float16", "[ops][compare-reduce]") {
  // 1, -2, +0, -0, NaN, inf, -inf, 0.5 against 0.5, -1, -0, +0, NaN, 65504, -inf, 1.
  Tensor a = halves({8}, {0x3c00, 0xc000, 0x0000, 0x8000, 0x7e00, 0x7c00, 0xfc00, 0x3800});
  Tensor b = halves({8}, {0x3800, 0xbc00, 0x8000, 0x0000, 0x7e00, 0x7bff, 0xfc00, 0x3c00});
  CHECK(bool_values(ref1("Less", {a, b})) ==
        std::vector<bool>{false, true, false, false, false, false, false, true});
  CHECK(bool_values(ref1("Greater", {a, b})) ==
        std::vector<bool>{true, false, false, false, false, true, false, false});
  CHECK(bool_values(ref1("Equal", {a, b})) ==
        std::vector<bool>{false, false, true, true, false, false, true, false});
  // Broadcast against a scalar 0: only the positive values are greater.
  CHECK(bool_values(ref1("Greater", {a, halves({}, {0x0000})})) ==
        std::vector<bool>{true, false, false, false, false, true, false, true});
}

TEST_CASE("Less/Greater/Equal inference", "[ops][compare-reduce]") {
  auto out = infer("Less", {info(sym({-1, 3, 1}, {"N"})), info({1, 4})});
  CHECK(out[0].dtype == DType::boolean);
  CHECK(shape_str(out[0]) == "[N,3,4]");
  out = infer("Equal", {info(DType::boolean, {2}), info(DType::boolean, {})});
  CHECK(out[0].dtype == DType::boolean);
  CHECK(shape_str(out[0]) == "[2]");
  out = infer("Greater", {info(DType::i64, {}), info(DType::i64, {})});
  CHECK(shape_str(out[0]) == "[]");
}

TEST_CASE("Less/Greater/Equal errors name the node", "[ops][compare-reduce]") {
  require_error(
      [] {
        infer("Less", {info({2, 3}), info({4})});
      },
      ErrorCode::InvalidModel, "cannot broadcast input shapes [2,3] and [4]");
  require_error(
      [] {
        infer("Greater", {info({2}), info(DType::i32, {2})});
      },
      ErrorCode::InvalidModel, "must have the same dtype, got f32 and i32");
  require_error(
      [] {
        infer("Less", {info(DType::boolean, {2}), info(DType::boolean, {2})});
      },
      ErrorCode::InvalidModel, "is bool; Less supports f32, f16, i32, i64, i8, u8");
  require_error(
      [] {
        infer("Greater", {info(DType::i64, {2}), info(DType::i64, {2}), info(DType::i64, {2})});
      },
      ErrorCode::InvalidModel, "has 3 inputs, expected 2");
  require_error([] { infer("Equal", {info({2})}); }, ErrorCode::InvalidModel,
                "has 1 inputs, expected 2");
  // The reference kernel validates too (it runs inference on the actual tensors).
  require_error(
      [] {
        ref1("Less", {f32({2}, {1, 2}), f32({3}, {1, 2, 3})});
      },
      ErrorCode::InvalidModel, "cannot broadcast");
}

TEST_CASE("Where selects with 3-way broadcasting", "[ops][compare-reduce]") {
  // cond [2,1], x [3], y [] -> [2,3].
  Tensor y =
      ref1("Where", {bools({2, 1}, {true, false}), f32({3}, {1, 2, 3}), Tensor::scalar(-1.f)});
  require_close_to(y, {2, 3}, {1, 2, 3, -1, -1, -1});
  // cond [3] against x [2,1] and y [2,3].
  y = ref1("Where", {bools({3}, {true, false, true}), i64({2, 1}, {10, 20}),
                     i64({2, 3}, {0, 1, 2, 3, 4, 5})});
  require_values<int64_t>(y, {2, 3}, {10, 1, 10, 20, 4, 20});
  // Any dtype moves through unchanged: bools, 8-bit, half (bit patterns).
  y = ref1("Where",
           {bools({2}, {false, true}), bools({2}, {true, true}), bools({2}, {false, false})});
  CHECK(bool_values(y) == std::vector<bool>{false, true});
  y = ref1("Where",
           {bools({2}, {false, true}), typed<int8_t>({2}, {-1, -2}), typed<int8_t>({2}, {7, 8})});
  require_values<int8_t>(y, {2}, {7, -2});
  // 1, 2 and -1, -2 as float16.
  y = ref1("Where", {bools({2}, {true, false}), halves({2}, {0x3c00, 0x4000}),
                     halves({2}, {0xbc00, 0xc000})});
  REQUIRE(y.dtype() == DType::f16);
  CHECK(static_cast<const uint16_t*>(y.raw())[0] == 0x3c00);
  CHECK(static_cast<const uint16_t*>(y.raw())[1] == 0xc000);
}

TEST_CASE("Where inference and errors", "[ops][compare-reduce]") {
  auto out = infer("Where", {info(DType::boolean, sym({-1, 1}, {"N"})), info(DType::i32, {4}),
                             info(DType::i32, {1, 1})});
  CHECK(out[0].dtype == DType::i32);
  CHECK(shape_str(out[0]) == "[N,4]");
  require_error(
      [] {
        infer("Where", {info({2}), info({2}), info({2})});
      },
      ErrorCode::InvalidModel, "input 0 ('x0') is f32; Where supports bool");
  require_error(
      [] {
        infer("Where", {info(DType::boolean, {2}), info({2}), info(DType::i64, {2})});
      },
      ErrorCode::InvalidModel, "inputs 1 and 2 must have the same dtype, got f32 and i64");
  require_error(
      [] {
        infer("Where", {info(DType::boolean, {3}), info({2, 1}), info({2})});
      },
      ErrorCode::InvalidModel, "cannot broadcast input shapes [3] and [2,1] and [2]");
  require_error(
      [] {
        infer("Where", {info(DType::boolean, {2}), info({2})});
      },
      ErrorCode::InvalidModel, "has 2 inputs, expected 3");
}

TEST_CASE("Clip *_expanded conformance cases (Less, Where) pass", "[ops][compare-reduce]") {
  const auto dir = data_dir() / "onnx-node-tests";
  for (const char* name :
       {"test_clip_default_int8_max_expanded", "test_clip_default_int8_min_expanded",
        "test_clip_default_max_expanded", "test_clip_default_min_expanded",
        "test_clip_example_expanded", "test_clip_expanded", "test_clip_inbounds_expanded",
        "test_clip_min_greater_than_max_expanded", "test_clip_outbounds_expanded",
        "test_clip_splitbounds_expanded"}) {
    CaseResult r = run_conformance_case((dir / name).string());
    INFO(name << ": " << r.reason);
    CHECK(r.status == CaseStatus::Pass);
  }
}
