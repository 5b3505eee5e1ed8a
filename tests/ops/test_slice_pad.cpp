// Slice and Pad in their input (new) and attribute (old) forms: values computed with numpy /
// ONNX Runtime from the same inputs (pasted in), clamping, symbolic inference, error paths.
#include "op_test_util.h"

using namespace minfer;
using namespace minfer::test;

namespace {
std::vector<int64_t> v(std::initializer_list<int64_t> l) { return l; }
}  // namespace

TEST_CASE("Slice reference: steps, negative steps, negative indices, clamping", "[ops]") {
  Tensor x = iota({2, 3, 4});
  // x[:, 2:0:-1, ::3]
  require_close_to(ref1("Slice", {x, i64({2}, {2, 0}), i64({2}, {0, INT64_MAX}), i64({2}, {1, 2}),
                                  i64({2}, {-1, 3})}),
                   {2, 2, 2}, {8, 11, 4, 7, 20, 23, 16, 19});
  // x[-1:, :, 1:-1] with default axes and steps (i32 parameters).
  require_close_to(ref1("Slice", {x, i32({3}, {-1, 0, 1}), i32({3}, {2, 3, -1})}), {1, 3, 2},
                   {13, 14, 17, 18, 21, 22});
  // Out-of-range starts/ends clamp; reversing a whole axis with a huge start.
  require_close_to(
      ref1("Slice", {x, i64({1}, {100}), i64({1}, {-100}), i64({1}, {1}), i64({1}, {-1})}),
      {2, 3, 4},
      {8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3, 20, 21, 22, 23, 16, 17, 18, 19, 12, 13, 14, 15});
  CHECK(ref1("Slice",
             {x, i64({2}, {-100, 10}), i64({2}, {100, -10}), i64({2}, {2, 1}), i64({2}, {-1, -1})})
            .shape() == Shape{2, 3, 0});
  // Shape subgraph: shape[2:] of an i64 vector.
  require_values<int64_t>(
      ref1("Slice", {i64({4}, {1, 3, 224, 224}), i64({1}, {2}), i64({1}, {INT64_MAX})}), {2},
      {224, 224});
}

TEST_CASE("Slice reference: opset < 10 attribute form", "[ops]") {
  Tensor y = ref1("Slice", {iota({2, 3, 4})},
                  attrs({{"starts", v({1})}, {"ends", v({1000})}, {"axes", v({2})}}));
  require_close_to(y, {2, 3, 3}, {1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15, 17, 18, 19, 21, 22, 23});
}

TEST_CASE("Slice inference", "[ops]") {
  Tensor st = i64({1}, {1}), en = i64({1}, {-1}), ax = i64({1}, {1});
  auto out = infer("Slice",
                   {info(sym({-1, 10, 4}, {"N"})), const_info(st), const_info(en), const_info(ax)});
  CHECK(shape_str(out[0]) == "[N,8,4]");
  // Slicing the unknown dim itself: unknown.
  Tensor ax0 = i64({1}, {0});
  out =
      infer("Slice", {info(sym({-1, 10}, {"N"})), const_info(st), const_info(en), const_info(ax0)});
  CHECK(shape_str(out[0]) == "[?,10]");
  // Non-constant starts: the sliced axes become unknown, the others stay.
  out = infer("Slice", {info(sym({-1, 10, 4}, {"N"})), info(DType::i64, {1}), const_info(en),
                        const_info(ax)});
  CHECK(shape_str(out[0]) == "[N,?,4]");
  out = infer("Slice",
              {info({5, 10}), info(DType::i64, {1}), info(DType::i64, {1}), info(DType::i64, {1})});
  CHECK(shape_str(out[0]) == "[?,?]");
}

TEST_CASE("Slice errors", "[ops]") {
  Tensor st = i64({1}, {0}), en = i64({2}, {1, 1}), en1 = i64({1}, {1});
  Tensor zero = i64({1}, {0}), ax = i64({1}, {2}), dup = i64({2}, {0, 0});
  Tensor st2 = i64({2}, {0, 0});
  require_error(
      [&] {
        infer("Slice", {info({4, 4}), const_info(st), const_info(en)});
      },
      ErrorCode::InvalidModel, "differ in length");
  require_error(
      [&] {
        infer("Slice", {info({4, 4}), const_info(st), const_info(en1), absent(), const_info(zero)});
      },
      ErrorCode::InvalidModel, "steps [0] has a 0");
  require_error(
      [&] {
        infer("Slice", {info({4, 4}), const_info(st), const_info(en1), const_info(ax)});
      },
      ErrorCode::InvalidModel, "axis 2 is out of range for rank 2");
  require_error(
      [&] {
        infer("Slice", {info({4, 4}), const_info(st2), const_info(en), const_info(dup)});
      },
      ErrorCode::InvalidModel, "has a duplicate");
  require_error(
      [&] {
        infer("Slice", {info({4, 4}), const_info(st)});
      },
      ErrorCode::InvalidModel, "needs starts (input 1) and ends (input 2)");
  require_error(
      [] {
        infer("Slice", {info({4, 4})});
      },
      ErrorCode::InvalidModel, "needs starts and ends");
}

TEST_CASE("Pad reference: constant, reflect, edge, wrap", "[ops]") {
  Tensor x = iota({2, 3});
  auto pad = [&](const char* mode) {
    return ref1("Pad", {x, i64({4}, {1, 2, 1, 2}), Tensor::scalar(9.f)},
                attrs({{"mode", std::string(mode)}}));
  };
  require_close_to(pad("constant"), {4, 7}, {9, 9, 9, 9, 9, 9, 9, 9, 9, 0, 1, 2, 9, 9,
                                             9, 9, 3, 4, 5, 9, 9, 9, 9, 9, 9, 9, 9, 9});
  require_close_to(pad("reflect"), {4, 7}, {5, 4, 3, 4, 5, 4, 3, 2, 1, 0, 1, 2, 1, 0,
                                            5, 4, 3, 4, 5, 4, 3, 2, 1, 0, 1, 2, 1, 0});
  require_close_to(pad("edge"), {4, 7}, {0, 0, 0, 1, 2, 2, 2, 0, 0, 0, 1, 2, 2, 2,
                                         3, 3, 3, 4, 5, 5, 5, 3, 3, 3, 4, 5, 5, 5});
  require_close_to(pad("wrap"), {4, 7}, {4, 5, 3, 4, 5, 3, 4, 1, 2, 0, 1, 2, 0, 1,
                                         4, 5, 3, 4, 5, 3, 4, 1, 2, 0, 1, 2, 0, 1});
  // Reflect further than the input is long, as numpy.pad does.
  require_close_to(ref1("Pad", {f32({3}, {1, 2, 3}), i64({2}, {5, 4})},
                        attrs({{"mode", std::string("reflect")}})),
                   {12}, {2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3});
}

TEST_CASE("Pad reference: negative pads, axes, attribute form, integers", "[ops]") {
  Tensor x = iota({2, 3});
  require_close_to(ref1("Pad", {x, i64({4}, {0, -1, 1, 0})}), {3, 2}, {1, 2, 4, 5, 0, 0});
  require_close_to(ref1("Pad", {x, i64({2}, {1, 2}), Tensor(), i64({1}, {-1})}), {2, 6},
                   {0, 0, 1, 2, 0, 0, 0, 3, 4, 5, 0, 0});
  require_close_to(ref1("Pad", {x}, attrs({{"pads", v({0, 1, 0, 0})}, {"value", -1.f}})), {2, 4},
                   {-1, 0, 1, 2, -1, 3, 4, 5});
  require_values<int64_t>(ref1("Pad", {i64({2}, {7, 8}), i64({2}, {1, 1}), i64({}, {-1})}), {4},
                          {-1, 7, 8, -1});
}

TEST_CASE("Pad inference and errors", "[ops]") {
  Tensor pads = i64({4}, {0, 1, 0, 1});
  auto out = infer("Pad", {info(sym({-1, 3}, {"N"})), const_info(pads)});
  CHECK(shape_str(out[0]) == "[N,5]");
  out = infer("Pad", {info({2, 3}), info(DType::i64, {4})});
  CHECK(shape_str(out[0]) == "[?,?]");
  Tensor short_pads = i64({2}, {1, 1}), crop = i64({4}, {0, -2, 0, -2});
  require_error(
      [&] {
        infer("Pad", {info({2, 3}), const_info(short_pads)});
      },
      ErrorCode::InvalidModel, "expected 4 (begin and end for each of 2 axes)");
  require_error(
      [&] {
        infer("Pad", {info({2, 3}), const_info(crop)});
      },
      ErrorCode::InvalidModel, "below zero");
  require_error(
      [&] {
        infer("Pad", {info({2, 3}), const_info(pads)}, attrs({{"mode", std::string("mirror")}}));
      },
      ErrorCode::InvalidModel, "mode 'mirror'");
  require_error(
      [&] {
        infer("Pad", {info({2, 3}), const_info(pads), info({2})});
      },
      ErrorCode::InvalidModel, "constant_value has shape [2]");
  require_error(
      [&] {
        infer("Pad", {info({2, 0}), const_info(pads)}, attrs({{"mode", std::string("edge")}}));
      },
      ErrorCode::InvalidModel, "cannot pad the empty dim 1");
}
