// ReduceMax, ReduceMin, ReduceSum, ReduceMean: axes as attribute or input, keepdims,
// noop_with_empty_axes, the dtypes, inference with unknown axes, errors, and the ONNX
// conformance cases made of them.
#include <cmath>
#include <limits>

#include "op_test_util.h"
#include "runtime/conformance.h"

using namespace minfer;
using namespace minfer::test;

namespace {

const Tensor kX = iota({2, 3, 4});  // x[n][j][k] = 12n + 4j + k

Tensor axes(const std::vector<int64_t>& v) { return i64({static_cast<int64_t>(v.size())}, v); }

}  // namespace

TEST_CASE("Reduce ops: axes as an input (ReduceSum >= 13, others >= 18)", "[ops][compare-reduce]") {
  require_close_to(ref1("ReduceSum", {kX, axes({1})}), {2, 1, 4}, {12, 15, 18, 21, 48, 51, 54, 57});
  require_close_to(ref1("ReduceMax", {kX, axes({-1})}, attrs({{"keepdims", int64_t{0}}})), {2, 3},
                   {3, 7, 11, 15, 19, 23});
  require_close_to(ref1("ReduceMin", {kX, axes({0, 2})}), {1, 3, 1}, {0, 4, 8});
  require_close_to(ref1("ReduceMean", {kX, axes({2, 0})}, attrs({{"keepdims", int64_t{0}}})), {3},
                   {7.5, 11.5, 15.5});
  // i32 axes are accepted as well.
  require_close_to(ref1("ReduceSum", {kX, i32({1}, {0})}), {1, 3, 4},
                   {12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34});
}

TEST_CASE("Reduce ops: axes as an attribute (older opsets)", "[ops][compare-reduce]") {
  require_close_to(ref1("ReduceSum", {kX}, attrs({{"axes", std::vector<int64_t>{1}}})), {2, 1, 4},
                   {12, 15, 18, 21, 48, 51, 54, 57});
  require_close_to(ref1("ReduceMax", {kX},
                        attrs({{"axes", std::vector<int64_t>{-1, 0}}, {"keepdims", int64_t{0}}})),
                   {3}, {15, 19, 23});
  require_close_to(ref1("ReduceMean", {kX}, attrs({{"axes", std::vector<int64_t>{1}}})), {2, 1, 4},
                   {4, 5, 6, 7, 16, 17, 18, 19});
}

TEST_CASE("Reduce ops: no axes, empty axes, noop_with_empty_axes", "[ops][compare-reduce]") {
  // No axes at all: every dim.
  require_close_to(ref1("ReduceMean", {kX}), {1, 1, 1}, {11.5});
  require_close_to(ref1("ReduceSum", {kX}, attrs({{"keepdims", int64_t{0}}})), {}, {276});
  // An empty axes input reduces every dim too, unless noop_with_empty_axes.
  require_close_to(ref1("ReduceMax", {kX, axes({})}), {1, 1, 1}, {23});
  Tensor same = ref1("ReduceMin", {kX, axes({})}, attrs({{"noop_with_empty_axes", int64_t{1}}}));
  require_equal(same, kX);
  same = ref1("ReduceSum", {kX}, attrs({{"noop_with_empty_axes", int64_t{1}}}));
  require_equal(same, kX);
  // Absent optional input (an empty name in ONNX).
  require_close_to(ref1("ReduceMin", {kX, Tensor()}), {1, 1, 1}, {0});
}

TEST_CASE("Reduce ops: integer, 8-bit and bool types", "[ops][compare-reduce]") {
  require_values<int64_t>(ref1("ReduceSum", {i64({2, 2}, {1, 2, 3, 4}), axes({1})}), {2, 1},
                          {3, 7});
  // Integer means truncate toward zero, as numpy's mean with an integer dtype.
  require_values<int32_t>(ref1("ReduceMean", {i32({2, 2}, {-7, 0, 7, 0}), axes({1})},
                               attrs({{"keepdims", int64_t{0}}})),
                          {2}, {-3, 3});
  // Integer sums wrap around.
  require_values<int32_t>(ref1("ReduceSum", {i32({2}, {std::numeric_limits<int32_t>::max(), 1})}),
                          {1}, {std::numeric_limits<int32_t>::min()});
  Tensor i8 = Tensor::from_vector<int8_t>({-128, -5, 3, -7}, Shape{2, 2});
  require_values<int8_t>(ref1("ReduceMax", {i8, axes({1})}), {2, 1}, {-5, 3});
  require_values<int8_t>(ref1("ReduceMin", {i8, axes({0})}), {1, 2}, {-128, -7});
  Tensor u8 = Tensor::from_vector<uint8_t>({200, 3, 255}, Shape{3});
  require_values<uint8_t>(ref1("ReduceMax", {u8}), {1}, {255});
  Tensor b(DType::boolean, Shape{2, 2});
  b.data<bool>()[0] = true;  // [[true, false], [false, false]]
  Tensor any = ref1("ReduceMax", {b, axes({1})}), all = ref1("ReduceMin", {b, axes({0})});
  CHECK(any.dtype() == DType::boolean);
  CHECK((any.data<bool>()[0] && !any.data<bool>()[1]));
  CHECK((!all.data<bool>()[0] && !all.data<bool>()[1]));
}

TEST_CASE("Reduce ops: NaN and empty reductions", "[ops][compare-reduce]") {
  Tensor x = f32({2, 2}, {1, NAN, NAN, -1});
  Tensor mx = ref1("ReduceMax", {x, axes({1})});
  CHECK(std::isnan(mx.data<float>()[0]));
  CHECK(std::isnan(mx.data<float>()[1]));
  // Over an empty axis: the identity of each reduction (mean: 0/0).
  Tensor e(DType::f32, Shape{2, 0});
  require_values<float>(ref1("ReduceMax", {e, axes({1})}), {2, 1}, {-INFINITY, -INFINITY});
  require_values<float>(ref1("ReduceMin", {e, axes({1})}), {2, 1}, {INFINITY, INFINITY});
  require_values<float>(ref1("ReduceSum", {e, axes({1})}), {2, 1}, {0, 0});
  CHECK(std::isnan(ref1("ReduceMean", {e, axes({1})}).data<float>()[0]));
  require_error(
      [] {
        ref1("ReduceMean", {Tensor(DType::i64, Shape{0}), axes({0})});
      },
      ErrorCode::InvalidArgument, "the mean over an empty axis is undefined for i64");
}

TEST_CASE("Reduce inference: symbolic dims and axes known only at run time",
          "[ops][compare-reduce]") {
  Tensor ax = axes({1});
  auto out = infer("ReduceSum", {info(sym({-1, 3, 4}, {"N"})), const_info(ax)});
  CHECK(shape_str(out[0]) == "[N,1,4]");
  out = infer("ReduceMax", {info(DType::i8, sym({-1, 3, 4}, {"N"}))},
              attrs({{"axes", std::vector<int64_t>{2}}, {"keepdims", int64_t{0}}}));
  CHECK(out[0].dtype == DType::i8);
  CHECK(shape_str(out[0]) == "[N,3]");
  // A non-constant axes input: the rank is known, the dims are not.
  out = infer("ReduceMean", {info({2, 3, 4}), info(DType::i64, {1})});
  CHECK(shape_str(out[0]) == "[?,?,?]");
  out = infer("ReduceMean", {info({2, 3, 4}), info(DType::i64, {2})},
              attrs({{"keepdims", int64_t{0}}}));
  CHECK(shape_str(out[0]) == "[?]");
  out = infer("ReduceMin", {info({2, 3, 4}), info(DType::i64, {-1})});
  CHECK(shape_str(out[0]) == "[?,?,?]");
  // Known to be empty: reduce all dims, or pass through with noop_with_empty_axes.
  out =
      infer("ReduceSum", {info({2, 3}), info(DType::i64, {0})}, attrs({{"keepdims", int64_t{0}}}));
  CHECK(shape_str(out[0]) == "[]");
  out = infer("ReduceSum", {info({2, 3}), info(DType::i64, {0})},
              attrs({{"noop_with_empty_axes", int64_t{1}}}));
  CHECK(shape_str(out[0]) == "[2,3]");
  require_error(
      [] {
        infer("ReduceSum", {info({2, 3}), info(DType::i64, {-1})},
              attrs({{"keepdims", int64_t{0}}}));
      },
      ErrorCode::InvalidModel, "axes input is not a constant and its length is unknown");
}

TEST_CASE("Reduce errors name the node", "[ops][compare-reduce]") {
  Tensor dup = axes({1, -2}), far = axes({3}), fax = f32({1}, {1});
  require_error(
      [&] {
        infer("ReduceSum", {info({2, 3, 4}), const_info(dup)});
      },
      ErrorCode::InvalidModel, "axes [1,-2] has a duplicate");
  require_error(
      [&] {
        infer("ReduceMax", {info({2, 3, 4}), const_info(far)});
      },
      ErrorCode::InvalidModel, "axis 3 is out of range for rank 3");
  require_error(
      [] {
        infer("ReduceMin", {info({2, 3})}, attrs({{"axes", std::vector<int64_t>{-3}}}));
      },
      ErrorCode::InvalidModel, "axis -3 is out of range for rank 2");
  require_error(
      [&] {
        infer("ReduceMean", {info({2, 3}), const_info(fax)});
      },
      ErrorCode::InvalidModel, "input 1 ('x1') is f32; ReduceMean supports i64, i32");
  require_error(
      [] {
        infer("ReduceSum", {info({2, 3}), info(DType::i64, {1, 1})});
      },
      ErrorCode::InvalidModel, "axes input has shape [1,1]; expected 1-D");
  require_error(
      [] {
        infer("ReduceSum", {info({2, 3}), info(DType::i64, {1})},
              attrs({{"axes", std::vector<int64_t>{0}}}));
      },
      ErrorCode::InvalidModel, "has both an axes attribute and an axes input");
  require_error([] { infer("ReduceSum", {info(DType::i8, {2})}); }, ErrorCode::InvalidModel,
                "is i8; ReduceSum supports f32, i32, i64");
  require_error([] { infer("ReduceMean", {info(DType::boolean, {2})}); }, ErrorCode::InvalidModel,
                "is bool; ReduceMean supports f32, i32, i64");
  require_error([] { infer("ReduceMax", {info(DType::f16, {2})}); }, ErrorCode::InvalidModel,
                "is f16; ReduceMax supports");
  require_error(
      [] {
        ref1("ReduceSum", {iota({2, 2}), axes({2})});
      },
      ErrorCode::InvalidModel, "axis 2 is out of range for rank 2");
}

TEST_CASE("Softmax *_expanded conformance cases (ReduceMax, ReduceSum, Exp) pass",
          "[ops][compare-reduce]") {
  const auto dir = data_dir() / "onnx-node-tests";
  for (const char* axis :
       {"axis_0", "axis_1", "axis_2", "default_axis", "example", "large_number", "negative_axis"})
    for (const char* suffix : {"_expanded", "_expanded_ver18"}) {  // opset 13 and 18 forms
      const std::string name = std::string("test_softmax_") + axis + suffix;
      CaseResult r = run_conformance_case((dir / name).string());
      INFO(name << ": " << r.reason);
      CHECK(r.status == CaseStatus::Pass);
    }
}
