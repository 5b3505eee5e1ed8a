// MaxPool, AveragePool, GlobalAveragePool: reference values computed with ONNX Runtime from
// the same inputs (pasted in), shape inference, and error paths.
#include "op_test_util.h"

using namespace minfer;
using namespace minfer::test;

namespace {
// arange(25).reshape(1,1,5,5) * 7 % 11
Tensor x55() {
  return f32({1, 1, 5, 5},
             {0, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0, 7, 3});
}
std::vector<int64_t> v(std::initializer_list<int64_t> l) { return l; }
}  // namespace

TEST_CASE("MaxPool reference: pads, strides, ceil_mode, dilations, Indices", "[ops]") {
  require_close_to(
      ref1("MaxPool", {x55()},
           attrs({{"kernel_shape", v({3, 3})}, {"pads", v({1, 1, 1, 1})}, {"strides", v({2, 2})}})),
      {1, 1, 3, 3}, {9, 10, 10, 9, 9, 10, 8, 9, 7});

  auto out = run_ref(
      "MaxPool", {x55()},
      attrs({{"kernel_shape", v({2, 2})}, {"strides", v({2, 2})}, {"ceil_mode", int64_t(1)}}), 2);
  require_close_to(out[0], {1, 1, 3, 3}, {9, 10, 8, 6, 9, 10, 8, 7, 3});
  require_values<int64_t>(out[1], {1, 1, 3, 3}, {6, 3, 9, 15, 17, 14, 20, 23, 24});

  out = run_ref("MaxPool", {x55()}, attrs({{"kernel_shape", v({2, 2})}, {"dilations", v({2, 2})}}),
                2);
  require_close_to(out[0], {1, 1, 3, 3}, {7, 10, 10, 9, 9, 9, 8, 7, 10});
  require_values<int64_t>(out[1], {1, 1, 3, 3}, {12, 3, 14, 17, 6, 17, 20, 23, 14});

  out = run_ref(
      "MaxPool", {x55()},
      attrs({{"kernel_shape", v({2, 2})}, {"strides", v({2, 2})}, {"storage_order", int64_t(1)}}),
      2);
  require_close_to(out[0], {1, 1, 2, 2}, {9, 10, 6, 9});
  require_values<int64_t>(out[1], {1, 1, 2, 2}, {6, 15, 3, 13});
}

TEST_CASE("MaxPool reference: int8 with SAME_UPPER, and 1-D", "[ops]") {
  Tensor x(DType::i8, Shape{1, 1, 5, 5});
  Tensor xf = x55();
  for (int i = 0; i < 25; ++i) x.data<int8_t>()[i] = int8_t(xf.data<float>()[i] - 5);
  Tensor y = ref1("MaxPool", {x},
                  attrs({{"kernel_shape", v({3, 3})},
                         {"auto_pad", std::string("SAME_UPPER")},
                         {"strides", v({2, 2})}}));
  REQUIRE(y.dtype() == DType::i8);
  require_values<int8_t>(y, {1, 1, 3, 3}, {4, 5, 5, 4, 4, 5, 3, 4, 2});
  require_close_to(ref1("MaxPool", {f32({1, 1, 8}, {3, 1, 4, 1, 5, 9, 2, 6})},
                        attrs({{"kernel_shape", v({3})}, {"strides", v({2})}})),
                   {1, 1, 3}, {4, 5, 9});
}

TEST_CASE("AveragePool reference: count_include_pad, ceil_mode, SAME_LOWER", "[ops]") {
  Attributes a =
      attrs({{"kernel_shape", v({3, 3})}, {"pads", v({1, 1, 1, 1})}, {"strides", v({2, 2})}});
  require_close_to(ref1("AveragePool", {x55()}, a), {1, 1, 3, 3},
                   {4.5, 5.8333335, 6.25, 3.8333333, 4.5555553, 4.6666665, 5, 4.5, 4});
  a.set("count_include_pad", int64_t(1));
  require_close_to(
      ref1("AveragePool", {x55()}, a), {1, 1, 3, 3},
      {2, 3.8888888, 2.7777777, 2.5555556, 4.5555553, 3.1111112, 2.2222223, 3, 1.7777778});
  require_close_to(
      ref1("AveragePool", {x55()},
           attrs({{"kernel_shape", v({2, 2})}, {"strides", v({2, 2})}, {"ceil_mode", int64_t(1)}})),
      {1, 1, 3, 3}, {4.5, 4.75, 7, 3, 6, 5.5, 6, 3.5, 3});
  require_close_to(
      ref1("AveragePool", {x55()},
           attrs({{"kernel_shape", v({2, 2})}, {"auto_pad", std::string("SAME_LOWER")}})),
      {1, 1, 5, 5}, {0, 3.5, 5, 6.5, 8,   1, 4.5,  6, 4.75, 6.25, 3,    3.75, 5.25,
                     4, 5.5, 5, 3,   4.5, 6, 4.75, 7, 5,    3.75, 5.25, 4});
}

TEST_CASE("AveragePool reference: ceil_mode window past the padding", "[ops]") {
  // The last window starts in the input and reaches past the right pad: with
  // count_include_pad the divisor counts the pad but not what lies beyond it.
  Attributes a = attrs({{"kernel_shape", v({3, 3})},
                        {"pads", v({1, 1, 1, 1})},
                        {"strides", v({2, 2})},
                        {"ceil_mode", int64_t(1)},
                        {"count_include_pad", int64_t(1)}});
  require_close_to(ref1("AveragePool", {iota({1, 1, 6, 6})}, a), {1, 1, 4, 4},
                   {1.5555556, 3.3333333, 4.6666665, 2.6666667, 8.333333, 14, 16, 8.5, 16.333334,
                    26, 28, 14.5, 10.166667, 16, 17, 8.75});
  a.set("count_include_pad", int64_t(0));
  require_close_to(ref1("AveragePool", {iota({1, 1, 6, 6})}, a), {1, 1, 4, 4},
                   {3.5, 5, 7, 8, 12.5, 14, 16, 17, 24.5, 26, 28, 29, 30.5, 32, 34, 35});
}

TEST_CASE("GlobalAveragePool reference and inference", "[ops]") {
  require_close_to(ref1("GlobalAveragePool", {iota({2, 3, 2, 2})}), {2, 3, 1, 1},
                   {1.5, 5.5, 9.5, 13.5, 17.5, 21.5});
  auto out = infer("GlobalAveragePool", {info(sym({-1, 64, -1, -1}, {"N", "", "H", "W"}))});
  CHECK(shape_str(out[0]) == "[N,64,1,1]");
  require_error(
      [] {
        infer("GlobalAveragePool", {info({2, 3})});
      },
      ErrorCode::InvalidModel, "expected rank >= 3");
}

TEST_CASE("Pool inference: symbolic dims, ceil_mode, Indices", "[ops]") {
  auto out = infer(
      "MaxPool", {info(sym({-1, 64, 112, 112}, {"N"}))},
      attrs({{"kernel_shape", v({3, 3})}, {"pads", v({1, 1, 1, 1})}, {"strides", v({2, 2})}}));
  CHECK(shape_str(out[0]) == "[N,64,56,56]");
  out = infer(
      "MaxPool", {info({1, 1, 5, 5})},
      attrs({{"kernel_shape", v({2, 2})}, {"strides", v({2, 2})}, {"ceil_mode", int64_t(1)}}), 2);
  CHECK(shape_str(out[0]) == "[1,1,3,3]");
  CHECK(out[1].dtype == DType::i64);
  CHECK(shape_str(out[1]) == "[1,1,3,3]");
  out = infer("AveragePool", {info({1, 3, -1, 7})},
              attrs({{"kernel_shape", v({3, 3})}, {"strides", v({2, 2})}}));
  CHECK(shape_str(out[0]) == "[1,3,?,3]");
}

TEST_CASE("Pool inference errors", "[ops]") {
  require_error(
      [] {
        infer("MaxPool", {info({1, 1, 5, 5})});
      },
      ErrorCode::InvalidModel, "kernel_shape is missing");
  require_error(
      [] {
        infer("MaxPool", {info({1, 1, 5, 5})}, attrs({{"kernel_shape", v({3})}}));
      },
      ErrorCode::InvalidModel, "kernel_shape has 1 values, expected 2");
  require_error(
      [] {
        infer("AveragePool", {info({1, 1, 2, 2})}, attrs({{"kernel_shape", v({3, 3})}}));
      },
      ErrorCode::InvalidModel, "smaller than the dilated kernel size 3");
  require_error(
      [] {
        infer("AveragePool", {info(DType::i8, {1, 1, 4, 4})}, attrs({{"kernel_shape", v({2, 2})}}));
      },
      ErrorCode::InvalidModel, "AveragePool supports f32");
  require_error(
      [] {
        infer("MaxPool", {info({1, 1, 4, 4})},
              attrs({{"kernel_shape", v({2, 2})}, {"auto_pad", std::string("same")}}));
      },
      ErrorCode::InvalidModel, "auto_pad 'same'");
}
