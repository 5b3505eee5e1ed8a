// Conv: reference values (computed with ONNX Runtime 1.x from the same inputs, pasted in),
// shape inference with symbolic dims, and error paths.
#include "op_test_util.h"
#include "ops/conv_geometry.h"

using namespace minfer;
using namespace minfer::test;

namespace {
Tensor conv_weight_mod5() {  // arange(36).reshape(2,2,3,3) % 5 - 2
  Tensor w(DType::f32, Shape{2, 2, 3, 3});
  for (int i = 0; i < 36; ++i) w.data<float>()[i] = float(i % 5 - 2);
  return w;
}
}  // namespace

TEST_CASE("Conv reference: 2-D, pads, strides, bias", "[ops]") {
  Tensor y = ref1(
      "Conv", {iota({1, 2, 4, 4}), conv_weight_mod5(), f32({2}, {1, -1})},
      attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"strides", std::vector<int64_t>{2, 2}}}));
  require_close_to(y, {1, 2, 2, 2}, {34, -6, -7, -39, -31, -41, 5, 6});
}

TEST_CASE("Conv reference: depthwise with dilations", "[ops]") {
  Tensor w = f32({2, 1, 2, 2}, {1, 2, -1, 0.5f, 2, 0, 1, -1});
  Tensor y = ref1("Conv", {iota({1, 2, 5, 5}), w},
                  attrs({{"group", int64_t(2)}, {"dilations", std::vector<int64_t>{2, 2}}}));
  require_close_to(y, {1, 2, 3, 3},
                   {0, 2.5, 5, 12.5, 15, 17.5, 25, 27.5, 30, 48, 50, 52, 58, 60, 62, 68, 70, 72});
}

TEST_CASE("Conv reference: group 2 with asymmetric pads", "[ops]") {
  Tensor x(DType::f32, Shape{1, 4, 3, 3}), w(DType::f32, Shape{2, 2, 2, 2});
  for (int i = 0; i < 36; ++i) x.data<float>()[i] = float(i % 7);
  for (int i = 0; i < 16; ++i) w.data<float>()[i] = float(i % 3 - 1);
  Tensor y = ref1("Conv", {x, w},
                  attrs({{"group", int64_t(2)}, {"pads", std::vector<int64_t>{0, 1, 1, 0}}}));
  require_close_to(y, {1, 2, 3, 3},
                   {-1, -3, -4, -1, 8, -7, 1, -4, 3, -6, -7, 0, -2, 0, 7, -3, -6, -7});
}

TEST_CASE("Conv reference: auto_pad SAME_UPPER, SAME_LOWER, VALID", "[ops]") {
  Tensor x = iota({1, 1, 4, 4}), w = iota({1, 1, 3, 3});
  auto with = [](const char* mode) {
    return attrs({{"auto_pad", std::string(mode)}, {"strides", std::vector<int64_t>{2, 2}}});
  };
  require_close_to(ref1("Conv", {x, w}, with("SAME_UPPER")), {1, 1, 2, 2}, {258, 186, 187, 113});
  require_close_to(ref1("Conv", {x, w}, with("SAME_LOWER")), {1, 1, 2, 2}, {73, 154, 279, 438});
  require_close_to(ref1("Conv", {x, w}, attrs({{"auto_pad", std::string("VALID")}})), {1, 1, 2, 2},
                   {258, 294, 402, 438});
}

TEST_CASE("Conv reference: 1-D", "[ops]") {
  Tensor y = ref1("Conv", {f32({1, 1, 5}, {1, 2, 3, 4, 5}), f32({1, 1, 3}, {1, 0, -1})},
                  attrs({{"pads", std::vector<int64_t>{1, 1}}}));
  require_close_to(y, {1, 1, 5}, {-2, -2, -2, -2, 4});
}

TEST_CASE("Conv inference keeps symbolic batch", "[ops]") {
  auto out = infer(
      "Conv", {info(sym({-1, 3, 224, 224}, {"N"})), info({64, 3, 7, 7})},
      attrs({{"strides", std::vector<int64_t>{2, 2}}, {"pads", std::vector<int64_t>{3, 3, 3, 3}}}));
  REQUIRE(out[0].present);
  CHECK(out[0].dtype == DType::f32);
  CHECK(shape_str(out[0]) == "[N,64,112,112]");

  // Unknown spatial size: that output dim is unknown, the other is computed.
  out = infer("Conv", {info({1, 3, -1, 32}), info({8, 3, 3, 3}), info({8})},
              attrs({{"auto_pad", std::string("SAME_UPPER")}}));
  CHECK(shape_str(out[0]) == "[1,8,?,32]");
}

TEST_CASE("Conv inference errors name the node and the problem", "[ops]") {
  auto conv = [](std::vector<TensorInfo> in, Attributes a = {}) {
    return [in, a] { infer("Conv", in, a); };
  };
  require_error(conv({info({1, 3, 8, 8}), info({4, 4, 3, 3})}), ErrorCode::InvalidModel,
                "weight has 4 input channels per group, input has 3 channels");
  require_error(conv({info({1, 4, 8, 8}), info({6, 1, 3, 3})}, attrs({{"group", int64_t(4)}})),
                ErrorCode::InvalidModel, "6 output channels, not divisible by group 4");
  require_error(conv({info({1, 3, 8, 8}), info({4, 3, 3, 3}), info({5})}), ErrorCode::InvalidModel,
                "bias has shape [5], expected [4]");
  require_error(conv({info({1, 3, 8, 8}), info({4, 3, 3})}), ErrorCode::InvalidModel,
                "weight has shape [4,3,3]");
  require_error(conv({info({3, 8}), info({4, 3})}), ErrorCode::InvalidModel, "expected rank >= 3");
  require_error(conv({info({1, 3, 8, 8}), info({4, 3, 3, 3})},
                     attrs({{"kernel_shape", std::vector<int64_t>{5, 5}}})),
                ErrorCode::InvalidModel, "kernel_shape [5,5] does not match");
  require_error(
      conv({info({1, 3, 8, 8}), info({4, 3, 3, 3})}, attrs({{"auto_pad", std::string("SAME")}})),
      ErrorCode::InvalidModel, "auto_pad 'SAME'");
  require_error(conv({info({1, 3, 8, 8}), info({4, 3, 3, 3})},
                     attrs({{"strides", std::vector<int64_t>{0, 1}}})),
                ErrorCode::InvalidModel, "strides [0,1] has a value below 1");
  require_error(
      conv({info({1, 3, 8, 8}), info({4, 3, 3, 3})}, attrs({{"pads", std::vector<int64_t>{1, 1}}})),
      ErrorCode::InvalidModel, "pads has 2 values, expected 4");
  require_error(conv({info({1, 3, 2, 2}), info({4, 3, 3, 3})}), ErrorCode::InvalidModel,
                "smaller than the dilated kernel size 3");
  require_error(conv({info(DType::i32, {1, 3, 8, 8}), info(DType::i32, {4, 3, 3, 3})}),
                ErrorCode::InvalidModel, "is i32; Conv supports f32");
  require_error(conv({info({1, 3, 8, 8})}), ErrorCode::InvalidModel, "has 1 inputs, expected 2..3");
}

TEST_CASE("Conv reference rejects inconsistent inputs instead of reading out of bounds", "[ops]") {
  require_error(
      [] {
        ref1("Conv", {iota({1, 3, 4, 4}), iota({2, 2, 3, 3})});
      },
      ErrorCode::InvalidModel, "input channels");
}

TEST_CASE("conv_geometry resolves pads and output sizes", "[ops]") {
  Graph g;
  Value* x = g.add_input("x", DType::f32, Shape{1, 3, 7, 7});
  Value* w = g.add_input("w", DType::f32, Shape{8, 3, 3, 3});
  Node* n = g.add_node("Conv", "n1", {x, w}, 1,
                       attrs({{"auto_pad", std::string("SAME_LOWER")},
                              {"strides", std::vector<int64_t>{2, 2}},
                              {"dilations", std::vector<int64_t>{1, 2}}}));
  ConvGeometry geo = conv_geometry(*n, x->shape, w->shape);
  CHECK(geo.out_h() == 4);
  CHECK(geo.out_w() == 4);
  // H: total pad (4-1)*2 + 3 - 7 = 2 -> 1/1; W: dilated kernel 5, total 4 -> 2/2.
  CHECK(geo.pads_begin == std::vector<int64_t>{1, 2});
  CHECK(geo.pads_end == std::vector<int64_t>{1, 2});
  CHECK(geo.effective_kernel(1) == 5);
  CHECK(geo.out_channels_per_group() == 8);
  CHECK_FALSE(geo.is_depthwise());
  CHECK(geo.is_static());
}
