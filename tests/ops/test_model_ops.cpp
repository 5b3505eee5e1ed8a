// Errors of the torchvision-sweep ops (Resize, LayerNormalization, Mod, ScatterND) and of
// Resize's legacy form: each names the node and what is wrong. Their values are checked
// against ONNX Runtime by [conformance][models].
#include "op_test_util.h"
#include "runtime/onnx_test_models.h"

using namespace minfer;
using namespace minfer::test;

TEST_CASE("Resize: bad scales, sizes and modes are refused", "[ops][models][errors]") {
  const Tensor x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor none;
  require_error(
      [&] {
        ref1("Resize", {x, none, f32({4}, {1, 1, 2, 2}), i64({4}, {1, 1, 4, 4})});
      },
      ErrorCode::InvalidModel, "exactly one of scales and sizes");
  require_error(
      [&] {
        ref1("Resize", {x, none, f32({2}, {2, 2})});
      },
      ErrorCode::InvalidModel, "scales has 2 values for 4 resized dims");
  require_error(
      [&] {
        ref1("Resize", {x, none, f32({4}, {1, 1, 0, 2})});
      },
      ErrorCode::InvalidModel, "scales must be positive");
  require_error(
      [&] {
        ref1("Resize", {x, none, none, i64({4}, {1, 1, 0, 3})});
      },
      ErrorCode::InvalidModel, "non-positive");
  require_error(
      [&] {
        ref1("Resize", {x, none, f32({4}, {1, 1, 2, 2})}, attrs({{"mode", std::string("area")}}));
      },
      ErrorCode::InvalidModel, "mode 'area'");
  require_error(
      [&] {
        ref1("Resize", {x, none, f32({4}, {1, 1, 2, 2})},
             attrs({{"coordinate_transformation_mode", std::string("tf_crop_and_resize")}}));
      },
      ErrorCode::Unsupported, "tf_crop_and_resize");
  require_error(
      [&] {
        ref1("Resize", {x, none, f32({4}, {1, 1, 2, 2})}, attrs({{"antialias", int64_t(1)}}));
      },
      ErrorCode::Unsupported, "antialias");
  require_error(
      [&] {
        ref1("Resize", {x, none, f32({2}, {2, 2})}, attrs({{"axes", std::vector<int64_t>{2, -2}}}));
      },
      ErrorCode::InvalidModel, "axes names dim 2 twice");
}

TEST_CASE("Resize before opset 11 is refused at import with a clear error",
          "[ops][models][errors]") {
  OnnxModel m(10);
  m.input("x", onnx::TensorProto::FLOAT, {"1", "1", "2", "2"});
  m.initializer("s", {1, 1, 2, 2}, {4});
  m.node("Resize", "up", {"x", "s"}, {"y"});
  m.output("y");
  try {
    m.parse();
    FAIL("an opset-10 Resize was accepted");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::Unsupported);
    CHECK_THAT(e.what(), Catch::Contains("Resize 'up': Resize before opset 11"));
  }
}

TEST_CASE("LayerNormalization: shapes and types are checked", "[ops][models][errors]") {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  // Scale must cover the normalized dims (here the last one, of 3).
  require_error(
      [&] {
        ref1("LayerNormalization", {x, f32({2}, {1, 1})});
      },
      ErrorCode::InvalidModel, "does not broadcast to the normalized dims [3]");
  require_error(
      [&] {
        ref1("LayerNormalization", {x, f32({3}, {1, 1, 1})}, attrs({{"axis", int64_t(2)}}));
      },
      ErrorCode::InvalidModel, "axis");
  require_error(
      [&] {
        ref1("LayerNormalization", {x, f32({3}, {1, 1, 1})}, attrs({{"stash_type", int64_t(0)}}));
      },
      ErrorCode::InvalidModel, "stash_type 0");
  // A row normalizes to mean 0 and variance 1 (up to epsilon).
  const Tensor y = ref1("LayerNormalization", {x, f32({3}, {1, 1, 1})}, attrs({{"epsilon", 0.f}}));
  const float k = std::sqrt(1.5f);
  require_close(y, f32({2, 3}, {-k, 0, k, -k, 0, k}), 1e-5, 1e-6);
}

TEST_CASE("Mod and ScatterND: bad values are refused", "[ops][models][errors]") {
  require_error(
      [&] {
        ref1("Mod", {i64({2}, {3, 4}), i64({2}, {2, 0})});
      },
      ErrorCode::InvalidModel, "integer division by zero");
  require_error(
      [&] {
        ref1("Mod", {f32({1}, {3}), f32({1}, {2})});
      },
      ErrorCode::InvalidModel, "a float Mod needs fmod=1");
  require_equal(ref1("Mod", {i64({4}, {-7, 7, -7, 7}), i64({4}, {3, -3, -3, 3})}),
                i64({4}, {2, -2, -1, 1}));
  const Tensor data = f32({2, 3}, {0, 0, 0, 0, 0, 0});
  require_error(
      [&] {
        ref1("ScatterND", {data, i64({1, 1}, {2}), f32({1, 3}, {1, 2, 3})});
      },
      ErrorCode::InvalidModel, "index 2 is out of range for dim 0 of size 2");
  require_error(
      [&] {
        ref1("ScatterND", {data, i64({1, 3}, {0, 0, 0}), f32({1}, {1})});
      },
      ErrorCode::InvalidModel, "indices' last dim is 3");
  require_error(
      [&] {
        ref1("ScatterND", {data, i64({1, 1}, {0}), f32({1, 2}, {1, 2})});
      },
      ErrorCode::InvalidModel, "updates has shape [1,2]");
  require_error(
      [&] {
        ref1("ScatterND", {data, i64({1, 1}, {0}), f32({1, 3}, {1, 2, 3})},
             attrs({{"reduction", std::string("xor")}}));
      },
      ErrorCode::InvalidModel, "reduction 'xor'");
}
