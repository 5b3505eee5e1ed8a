// BatchNormalization and Softmax: values computed with ONNX Runtime from the same inputs
// (pasted in), inference, and error paths.
#include "op_test_util.h"

using namespace minfer;
using namespace minfer::test;

TEST_CASE("BatchNormalization reference", "[ops]") {
  Tensor y = ref1("BatchNormalization",
                  {iota({1, 3, 2, 2}), f32({3}, {1, 2, 0.5}), f32({3}, {0, 1, -1}),
                   f32({3}, {1, 5, 10}), f32({3}, {4, 1, 0.25})},
                  attrs({{"epsilon", 0.f}}));
  require_close_to(y, {1, 3, 2, 2}, {-0.5, 0, 0.5, 1, -1, 1, 3, 5, -3, -2, -1, 0});
  // Default epsilon 1e-5: (x - 0) / sqrt(1 + 1e-5).
  y = ref1("BatchNormalization",
           {f32({1, 1}, {2}), f32({1}, {1}), f32({1}, {0}), f32({1}, {0}), f32({1}, {1})});
  require_close_to(y, {1, 1}, {float(2 / std::sqrt(1 + 1e-5))}, 1e-7);
}

TEST_CASE("BatchNormalization inference and errors", "[ops]") {
  auto c = info({8});
  auto out = infer("BatchNormalization", {info(sym({-1, 8, 4, 4}, {"N"})), c, c, c, c});
  CHECK(shape_str(out[0]) == "[N,8,4,4]");
  require_error(
      [&] {
        infer("BatchNormalization", {info({1, 8, 4, 4}), c, c, info({7}), c});
      },
      ErrorCode::InvalidModel, "mean has shape [7], expected [8]");
  require_error(
      [&] {
        infer("BatchNormalization", {info({1, 8, 4, 4}), c, c, c});
      },
      ErrorCode::InvalidModel, "has 4 inputs, expected 5");
  require_error(
      [&] {
        infer("BatchNormalization", {info({1, 8, 4, 4}), c, c, c, c},
              attrs({{"training_mode", int64_t(1)}}), 3);
      },
      ErrorCode::Unsupported, "training_mode=1");

  // Extra outputs that nothing reads are accepted; a used one is not supported.
  std::vector<TensorInfo> in{info({1, 8, 4, 4}), c, c, c, c};
  OneNode n("BatchNormalization", in, {}, 3);
  InferContext ok(*n.node, in);
  schema("BatchNormalization").infer(ok);
  CHECK(shape_str(ok.outputs()[0]) == "[1,8,4,4]");
  n.g.add_output(n.node->outputs[1]);
  InferContext bad(*n.node, in);
  require_error([&] { schema("BatchNormalization").infer(bad); }, ErrorCode::Unsupported,
                "training outputs");
}

TEST_CASE("Softmax reference along one axis", "[ops]") {
  Tensor x = f32({2, 3}, {1, 2, 3, 1, 1, 1});
  require_close_to(ref1("Softmax", {x}), {2, 3},
                   {0.090030573, 0.24472848, 0.66524094, 0.33333334, 0.33333334, 0.33333334});
  require_close_to(ref1("Softmax", {x}, attrs({{"axis", int64_t(0)}})), {2, 3},
                   {0.5, 0.7310586, 0.88079703, 0.5, 0.26894143, 0.11920291});
  Tensor x3 = iota({2, 3, 4});
  for (int i = 0; i < 24; ++i) x3.data<float>()[i] /= 10;
  Tensor y = ref1("Softmax", {x3}, attrs({{"axis", int64_t(1)}}));
  std::vector<float> col{0.21198273f, 0.31624106f, 0.47177625f};  // same for every column
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int k = 0; k < 4; ++k) CHECK(y.data<float>()[(n * 3 + c) * 4 + k] == Approx(col[c]));
  // Large inputs must not overflow (max subtraction).
  require_close_to(ref1("Softmax", {f32({2}, {1000, 1000})}), {2}, {0.5, 0.5});
}

TEST_CASE("Softmax inference and errors", "[ops]") {
  auto out = infer("Softmax", {info(sym({-1, 1000}, {"N"}))});
  CHECK(shape_str(out[0]) == "[N,1000]");
  require_error(
      [] {
        infer("Softmax", {info({2, 3})}, attrs({{"axis", int64_t(2)}}));
      },
      ErrorCode::InvalidModel, "axis 2 is out of range for rank 2");
}
