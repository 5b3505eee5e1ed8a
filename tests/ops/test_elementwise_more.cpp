// Max, Min (variadic, numpy broadcasting) and Exp: hand-computed values, dtypes, NaN, error
// paths, and the ONNX conformance case that needs them.
#include <cmath>

#include "op_test_util.h"
#include "runtime/conformance.h"

using namespace minfer;
using namespace minfer::test;

TEST_CASE("Max/Min of several inputs broadcast numpy-style", "[ops][compare-reduce]") {
  // [2,1], [3] and [] -> [2,3].
  std::vector<Tensor> in{f32({2, 1}, {1, 5}), f32({3}, {2, 3, 4}), Tensor::scalar(3.f)};
  require_close_to(ref1("Max", in), {2, 3}, {3, 3, 4, 5, 5, 5});
  require_close_to(ref1("Min", in), {2, 3}, {1, 1, 1, 2, 3, 3});
  // Two inputs, and one (a copy).
  require_close_to(ref1("Max", {f32({2}, {-1, 7}), f32({2}, {0, 2})}), {2}, {0, 7});
  require_close_to(ref1("Min", {f32({3}, {4, -2, 0})}), {3}, {4, -2, 0});
}

TEST_CASE("Max/Min on integer types and NaN", "[ops][compare-reduce]") {
  require_values<int64_t>(ref1("Max", {i64({3}, {-5, 10, 0}), i64({1}, {1})}), {3}, {1, 10, 1});
  require_values<int32_t>(ref1("Min", {i32({2}, {3, -4}), i32({2}, {2, 9}), i32({}, {0})}), {2},
                          {0, -4});
  Tensor a = Tensor::from_vector<uint8_t>({200, 3}, Shape{2});
  Tensor b = Tensor::from_vector<uint8_t>({100, 255}, Shape{2});
  require_values<uint8_t>(ref1("Max", {a, b}), {2}, {200, 255});
  Tensor c = Tensor::from_vector<int8_t>({-128, 127}, Shape{2});
  require_values<int8_t>(ref1("Min", {c, Tensor::from_vector<int8_t>({0}, Shape{1})}), {2},
                         {-128, 0});
  // A NaN in any input gives NaN, in either position (numpy.maximum / numpy.minimum).
  Tensor y = ref1("Max", {f32({3}, {NAN, 1, 2}), f32({3}, {1, NAN, 0}), f32({3}, {0, 0, 5})});
  CHECK(std::isnan(y.data<float>()[0]));
  CHECK(std::isnan(y.data<float>()[1]));
  CHECK(y.data<float>()[2] == 5.f);
  y = ref1("Min", {f32({2}, {1, NAN}), f32({2}, {NAN, 1})});
  CHECK(std::isnan(y.data<float>()[0]));
  CHECK(std::isnan(y.data<float>()[1]));
}

TEST_CASE("Max/Min inference and errors", "[ops][compare-reduce]") {
  auto out = infer("Max", {info(sym({-1, 1}, {"N"})), info({1, 4}), info({})});
  CHECK(shape_str(out[0]) == "[N,4]");
  out = infer("Min", {info(DType::i8, {2, 3})});
  CHECK(out[0].dtype == DType::i8);
  CHECK(shape_str(out[0]) == "[2,3]");
  require_error(
      [] {
        infer("Max", {info({2, 3}), info({3}), info({2})});
      },
      ErrorCode::InvalidModel, "cannot broadcast input shapes [2,3] and [3] and [2]");
  require_error(
      [] {
        infer("Min", {info({2}), info({2}), info(DType::i64, {2})});
      },
      ErrorCode::InvalidModel, "inputs 0 and 2 must have the same dtype, got f32 and i64");
  require_error([] { infer("Max", {info(DType::boolean, {2})}); }, ErrorCode::InvalidModel,
                "is bool; Max supports f32, i32, i64, i8, u8");
  require_error([] { infer("Min", {}); }, ErrorCode::InvalidModel, "has 0 inputs, expected 1..");
}

TEST_CASE("Exp", "[ops][compare-reduce]") {
  require_close_to(ref1("Exp", {f32({4}, {0, 1, -1, 10})}), {4},
                   {1.f, float(std::exp(1.0)), float(std::exp(-1.0)), float(std::exp(10.0))});
  Tensor y = ref1("Exp", {f32({3}, {-INFINITY, INFINITY, 100})});
  CHECK(y.data<float>()[0] == 0.f);
  CHECK(std::isinf(y.data<float>()[1]));
  CHECK(std::isinf(y.data<float>()[2]));  // overflows float
  CHECK(std::isnan(ref1("Exp", {f32({1}, {NAN})}).data<float>()[0]));
  CHECK(shape_str(infer("Exp", {info(sym({-1, 2}, {"N"}))})[0]) == "[N,2]");
  require_error([] { infer("Exp", {info(DType::i32, {2})}); }, ErrorCode::InvalidModel,
                "is i32; Exp supports f32");
}

TEST_CASE("test_relu_expanded_ver18 (CastLike, Max) passes", "[ops][compare-reduce]") {
  CaseResult r =
      run_conformance_case((data_dir() / "onnx-node-tests" / "test_relu_expanded_ver18").string());
  INFO(r.reason);
  CHECK(r.status == CaseStatus::Pass);
}
