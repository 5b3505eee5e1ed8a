// Relu, Sigmoid, Clip, Add/Sub/Mul/Div: hand-computed values, broadcasting (also symbolic),
// integer types, and error paths.
#include <cmath>

#include "op_test_util.h"

using namespace minfer;
using namespace minfer::test;

TEST_CASE("Add/Sub/Mul/Div broadcast numpy-style", "[ops]") {
  Tensor a = iota({2, 3});  // [[0,1,2],[3,4,5]]
  require_close_to(ref1("Add", {a, f32({3}, {10, 20, 30})}), {2, 3}, {10, 21, 32, 13, 24, 35});
  require_close_to(ref1("Sub", {f32({2, 1}, {1, 2}), f32({1, 3}, {1, 2, 3})}), {2, 3},
                   {0, -1, -2, 1, 0, -1});
  require_close_to(ref1("Mul", {a, Tensor::scalar(2.f)}), {2, 3}, {0, 2, 4, 6, 8, 10});
  require_close_to(ref1("Div", {Tensor::scalar(1.f), f32({2}, {4, -8})}), {2}, {0.25, -0.125});
  // Same shapes, higher rank with a middle broadcast dim.
  require_close_to(ref1("Add", {iota({2, 1, 2}), iota({3, 1}, 100)}), {2, 3, 2},
                   {100, 101, 101, 102, 102, 103, 102, 103, 103, 104, 104, 105});
}

TEST_CASE("Binary ops on i32 and i64", "[ops]") {
  require_values<int64_t>(ref1("Add", {i64({3}, {1, 2, 3}), i64({1}, {10})}), {3}, {11, 12, 13});
  require_values<int64_t>(ref1("Mul", {i64({2}, {-3, 4}), i64({}, {5})}), {2}, {-15, 20});
  // Integer division truncates toward zero, as ONNX Runtime does.
  require_values<int32_t>(ref1("Div", {i32({4}, {7, -7, 7, -7}), i32({4}, {2, 2, -2, -2})}), {4},
                          {3, -3, -3, 3});
  require_values<int32_t>(ref1("Sub", {i32({2}, {5, 6}), i32({2}, {1, 9})}), {2}, {4, -3});
  // 8-bit arithmetic wraps around.
  Tensor a8(DType::i8, Shape{2}), b8(DType::i8, Shape{2});
  a8.data<int8_t>()[0] = 100, a8.data<int8_t>()[1] = -128;
  b8.data<int8_t>()[0] = 100, b8.data<int8_t>()[1] = -1;
  require_values<int8_t>(ref1("Add", {a8, b8}), {2}, {-56, 127});
  require_values<int8_t>(ref1("Div", {a8, b8}), {2}, {1, -128});
  Tensor u8(DType::u8, Shape{2});
  u8.data<uint8_t>()[0] = 200, u8.data<uint8_t>()[1] = 3;
  require_values<uint8_t>(ref1("Mul", {u8, u8}), {2}, {64, 9});
  require_error(
      [] {
        ref1("Div", {i64({2}, {1, 2}), i64({2}, {1, 0})});
      },
      ErrorCode::InvalidArgument, "integer division by zero");
}

TEST_CASE("Binary inference: symbolic broadcasting", "[ops]") {
  auto out = infer("Add", {info(sym({-1, 3, 1}, {"N"})), info({1, 4})});
  CHECK(shape_str(out[0]) == "[N,3,4]");
  out = infer("Mul", {info(sym({-1, 3}, {"N"})), info(sym({-1, 3}, {"N"}))});
  CHECK(shape_str(out[0]) == "[N,3]");
  out = infer("Mul", {info(sym({-1, 3}, {"N"})), info(sym({-1, 3}, {"M"}))});
  CHECK(shape_str(out[0]) == "[?,3]");
  out = infer("Sub", {info({-1, 3}), info({5, 1})});
  CHECK(shape_str(out[0]) == "[5,3]");
  out = infer("Div", {info(DType::i64, {}), info(DType::i64, {2})});
  CHECK(out[0].dtype == DType::i64);
  CHECK(shape_str(out[0]) == "[2]");
}

TEST_CASE("Binary inference errors", "[ops]") {
  require_error(
      [] {
        infer("Add", {info({2, 3}), info({4})});
      },
      ErrorCode::InvalidModel, "cannot broadcast input shapes [2,3] and [4]");
  require_error(
      [] {
        infer("Add", {info({2}), info(DType::i64, {2})});
      },
      ErrorCode::InvalidModel, "must have the same dtype, got f32 and i64");
  require_error(
      [] {
        infer("Mul", {info(DType::f16, {2}), info(DType::f16, {2})});
      },
      ErrorCode::InvalidModel, "is f16; Mul supports f32, i32, i64, i8, u8");
  require_error([] { infer("Sub", {info({2})}); }, ErrorCode::InvalidModel,
                "has 1 inputs, expected 2");
}

TEST_CASE("Relu and Sigmoid", "[ops]") {
  require_close_to(ref1("Relu", {f32({4}, {-1, 0, 2.5, -0.f})}), {4}, {0, 0, 2.5, 0});
  require_values<int64_t>(ref1("Relu", {i64({3}, {-5, 0, 7})}), {3}, {0, 0, 7});
  require_close_to(ref1("Sigmoid", {f32({3}, {0, std::log(3.f), -std::log(3.f)})}), {3},
                   {0.5, 0.75, 0.25}, 1e-6);
  auto out = infer("Relu", {info(sym({-1, 8}, {"N"}))});
  CHECK(shape_str(out[0]) == "[N,8]");
  require_error([] { infer("Sigmoid", {info(DType::i64, {2})}); }, ErrorCode::InvalidModel,
                "Sigmoid supports f32");
}

TEST_CASE("Clip: bounds as inputs, as attributes, one-sided, integers", "[ops]") {
  Tensor x = f32({5}, {-3, -1, 0, 2, 9});
  require_close_to(ref1("Clip", {x, Tensor::scalar(-1.5f), Tensor::scalar(6.f)}), {5},
                   {-1.5, -1, 0, 2, 6});
  // Only max: min is an absent optional input.
  require_close_to(ref1("Clip", {x, Tensor(), Tensor::scalar(1.f)}), {5}, {-3, -1, 0, 1, 1});
  // Opset < 11: attributes.
  require_close_to(ref1("Clip", {x}, attrs({{"min", 0.f}, {"max", 6.f}})), {5}, {0, 0, 0, 2, 6});
  require_close_to(ref1("Clip", {x}), {5}, {-3, -1, 0, 2, 9});
  require_values<int32_t>(ref1("Clip", {i32({3}, {-9, 4, 99}), i32({}, {0}), i32({}, {10})}), {3},
                          {0, 4, 10});
  require_error(
      [] {
        infer("Clip", {info({3}), info({2})});
      },
      ErrorCode::InvalidModel, "min input has shape [2]; expected a scalar");
  require_error(
      [] {
        infer("Clip", {info({3}), info(DType::i64, {})});
      },
      ErrorCode::InvalidModel, "same dtype");
}
