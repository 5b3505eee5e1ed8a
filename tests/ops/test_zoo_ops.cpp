// The ops the ONNX model-zoo CNNs need beyond the ResNet set: ConstantOfShape, Range,
// Dropout, LRN, Sum, Mean. Hand-computed values and every error path the schemas check; the
// comparison with ONNX Runtime is in tests/conformance/test_zoo_cases.cpp.
#include <cmath>

#include "op_test_util.h"

using namespace minfer;
using namespace minfer::test;

namespace {

Tensor boolean(Shape s, std::vector<bool> v) {
  Tensor t(DType::boolean, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) t.data<bool>()[i] = v[i];
  return t;
}

}  // namespace

TEST_CASE("ConstantOfShape fills the given shape with the value attribute", "[ops][zoo]") {
  // No value: float zeros.
  require_close_to(ref1("ConstantOfShape", {i64({2}, {2, 3})}), {2, 3}, {0, 0, 0, 0, 0, 0});
  // An int64 value gives an int64 tensor; an empty shape a scalar; a 0 dim an empty tensor.
  Attributes seven = attrs({{"value", i64({1}, {7})}});
  require_values<int64_t>(ref1("ConstantOfShape", {i64({1}, {3})}, seven), {3}, {7, 7, 7});
  require_values<int64_t>(ref1("ConstantOfShape", {i64({0}, {})}, seven), {}, {7});
  CHECK(ref1("ConstantOfShape", {i64({2}, {0, 4})}, seven).shape() == Shape{0, 4});
  Tensor ones = ref1("ConstantOfShape", {i64({1}, {2})}, attrs({{"value", boolean({1}, {true})}}));
  CHECK(ones.dtype() == DType::boolean);
  CHECK((ones.data<bool>()[0] && ones.data<bool>()[1]));
  require_close_to(ref1("ConstantOfShape", {i64({1}, {2})}, attrs({{"value", f32({1}, {1.5})}})),
                   {2}, {1.5, 1.5});
}

TEST_CASE("ConstantOfShape: a shape known only at run time gives the rank", "[ops][zoo]") {
  auto out = infer("ConstantOfShape", {info(DType::i64, Shape{3})});
  CHECK(out[0].dtype == DType::f32);
  CHECK(out[0].shape.rank() == 3);
  CHECK(out[0].shape[0] < 0);
  const Tensor spec = i64({2}, {4, 5});
  out = infer("ConstantOfShape", {const_info(spec)}, attrs({{"value", i32({1}, {1})}}));
  CHECK(out[0].dtype == DType::i32);
  CHECK(out[0].shape == Shape{4, 5});
}

TEST_CASE("ConstantOfShape: bad shapes and values are refused naming the node", "[ops][zoo][errors]") {
  require_error([] { ref1("ConstantOfShape", {i64({2}, {2, -1})}); }, ErrorCode::InvalidModel,
                "negative dim");
  require_error([] { ref1("ConstantOfShape", {i64({1}, {2})}, attrs({{"value", f32({2}, {1, 2})}})); },
                ErrorCode::InvalidModel, "exactly one element");
  require_error([] { ref1("ConstantOfShape", {i64({1}, {2})}, attrs({{"value", 1.5f}})); },
                ErrorCode::InvalidModel, "must be a tensor");
  require_error([] { infer("ConstantOfShape", {info(DType::f32, Shape{2})}); },
                ErrorCode::InvalidModel, "supports i64");
  require_error([] { infer("ConstantOfShape", {info(DType::i64, Shape{2, 2})}); },
                ErrorCode::InvalidModel, "expected a 1-D tensor");
  require_error([] { infer("ConstantOfShape", {info(DType::i64, Shape{Shape::kDynamic})}); },
                ErrorCode::InvalidModel, "length is unknown");
}

TEST_CASE("Range: float and integer sequences, empty and negative steps", "[ops][zoo]") {
  require_close_to(ref1("Range", {Tensor::scalar(1.f), Tensor::scalar(2.f), Tensor::scalar(0.25f)}),
                   {4}, {1, 1.25, 1.5, 1.75});
  require_values<int64_t>(ref1("Range", {Tensor::scalar<int64_t>(10), Tensor::scalar<int64_t>(4),
                                         Tensor::scalar<int64_t>(-3)}),
                          {2}, {10, 7});
  require_values<int32_t>(ref1("Range", {Tensor::scalar<int32_t>(5), Tensor::scalar<int32_t>(5),
                                         Tensor::scalar<int32_t>(1)}),
                          {0}, {});
  // Inputs known at run time: a 1-D output of unknown length.
  auto out = infer("Range", {info(DType::i64, Shape{}), info(DType::i64, Shape{}),
                             info(DType::i64, Shape{})});
  CHECK(out[0].shape.rank() == 1);
  CHECK(out[0].shape[0] < 0);
}

TEST_CASE("Range: a zero delta, non-scalars and mixed types are refused", "[ops][zoo][errors]") {
  require_error([] {
    ref1("Range", {Tensor::scalar(0.f), Tensor::scalar(1.f), Tensor::scalar(0.f)});
  }, ErrorCode::InvalidModel, "delta is 0");
  require_error([] {
    ref1("Range", {f32({2}, {0, 1}), Tensor::scalar(1.f), Tensor::scalar(1.f)});
  }, ErrorCode::InvalidModel, "start has shape [2]");
  require_error([] {
    ref1("Range", {Tensor::scalar(0.f), Tensor::scalar<int64_t>(3), Tensor::scalar(1.f)});
  }, ErrorCode::InvalidModel, "same dtype");
  require_error([] {
    ref1("Range", {Tensor::scalar(0.f), Tensor::scalar(INFINITY), Tensor::scalar(1.f)});
  }, ErrorCode::InvalidModel, "finite");
}

TEST_CASE("Dropout at inference is the identity with an all-true mask", "[ops][zoo]") {
  const Tensor x = f32({2, 2}, {1, -2, 3, 4});
  require_equal(ref1("Dropout", {x}, attrs({{"ratio", 0.3f}})), x);
  auto out = run_ref("Dropout", {x, Tensor::scalar(0.5f), boolean({}, {false})}, {}, 2);
  REQUIRE(out.size() == 2);
  require_equal(out[0], x);
  CHECK(out[1].dtype() == DType::boolean);
  CHECK(out[1].shape() == x.shape());
  for (int64_t i = 0; i < 4; ++i) CHECK(out[1].data<bool>()[i]);
}

TEST_CASE("Dropout: training mode, bad ratios and types are refused", "[ops][zoo][errors]") {
  const Tensor x = f32({2}, {1, 2});
  const Tensor yes = boolean({}, {true});
  // A constant true training_mode is refused at load, a run-time one when it arrives.
  require_error([&] { infer("Dropout", {info(Shape{2}), absent(), const_info(yes)}); },
                ErrorCode::Unsupported, "training_mode=1");
  CHECK_NOTHROW(infer("Dropout", {info(Shape{2}), absent(), info(DType::boolean, Shape{})}));
  require_error([&] { ref1("Dropout", {x, Tensor(), yes}); }, ErrorCode::Unsupported,
                "training_mode=1");
  // Training mode with a constant ratio of 0 keeps every element (Swin's exports): accepted.
  require_equal(ref1("Dropout", {x, Tensor::scalar(0.f), yes}), x);
  CHECK_NOTHROW(
      infer("Dropout", {info(Shape{2}), const_info(Tensor::scalar(0.f)), const_info(yes)}));
  require_error([&] { ref1("Dropout", {x, Tensor::scalar(0.2f), yes}); },
                ErrorCode::Unsupported, "training_mode=1");
  require_error(
      [&] { infer("Dropout", {info(Shape{2}), info(DType::f32, Shape{}), const_info(yes)}); },
      ErrorCode::Unsupported, "training_mode=1");
  require_error([&] { ref1("Dropout", {x}, attrs({{"ratio", 1.f}})); }, ErrorCode::InvalidModel,
                "outside [0, 1)");
  require_error([&] { ref1("Dropout", {x, Tensor::scalar(-0.1f)}); }, ErrorCode::InvalidModel,
                "outside [0, 1)");
  require_error([&] { ref1("Dropout", {x, Tensor::scalar(0.1f)}, attrs({{"ratio", 0.1f}})); },
                ErrorCode::InvalidModel, "both a ratio attribute and a ratio input");
  require_error([&] { ref1("Dropout", {x, f32({2}, {0.1f, 0.2f})}); }, ErrorCode::InvalidModel,
                "ratio has shape [2]");
  require_error([&] { ref1("Dropout", {i64({2}, {1, 2})}); }, ErrorCode::InvalidModel,
                "supports f32");
  require_error([&] { ref1("Dropout", {x, Tensor(), Tensor::scalar(1.f)}); },
                ErrorCode::InvalidModel, "supports bool");
}

TEST_CASE("LRN normalizes across neighbouring channels", "[ops][zoo]") {
  // x[0, c, 0, 0] = c + 1 for c = 0..3; size 3: window [c-1, c+1].
  const Tensor x = f32({1, 4, 1, 1}, {1, 2, 3, 4});
  const float alpha = 0.3f, beta = 0.75f, bias = 2.f;
  const double sq[4] = {1 + 4, 1 + 4 + 9, 4 + 9 + 16, 9 + 16};
  std::vector<float> want;
  for (int c = 0; c < 4; ++c)
    want.push_back(float((c + 1) / std::pow(bias + alpha / 3 * sq[c], beta)));
  require_close_to(ref1("LRN", {x}, attrs({{"size", int64_t{3}}, {"alpha", alpha},
                                           {"beta", beta}, {"bias", bias}})),
                   {1, 4, 1, 1}, want);
  // An even size reaches one channel further up than down: size 2 is [c, c+1].
  want.clear();
  const double sq2[4] = {1 + 4, 4 + 9, 9 + 16, 16};
  for (int c = 0; c < 4; ++c)
    want.push_back(float((c + 1) / std::pow(1.0 + 1e-4 / 2 * sq2[c], 0.75)));
  require_close_to(ref1("LRN", {x}, attrs({{"size", int64_t{2}}})), {1, 4, 1, 1}, want);
}

TEST_CASE("LRN: a missing or bad size, low rank and other types are refused", "[ops][zoo][errors]") {
  const Tensor x = iota({1, 2, 2, 2});
  require_error([&] { ref1("LRN", {x}); }, ErrorCode::InvalidModel, "'size' is missing");
  require_error([&] { ref1("LRN", {x}, attrs({{"size", int64_t{0}}})); }, ErrorCode::InvalidModel,
                "must be >= 1");
  // An attribute of the wrong type names the node too.
  require_error([&] { ref1("LRN", {x}, attrs({{"size", 3.f}})); }, ErrorCode::InvalidModel,
                "wrong type");
  require_error([&] { ref1("LRN", {iota({2, 3})}, attrs({{"size", int64_t{3}}})); },
                ErrorCode::InvalidModel, "expected rank >= 3");
  require_error([&] { infer("LRN", {info(DType::i32, Shape{1, 2, 2})}, attrs({{"size", int64_t{1}}})); },
                ErrorCode::InvalidModel, "supports f32");
}

TEST_CASE("Sum and Mean of several inputs broadcast numpy-style", "[ops][zoo]") {
  std::vector<Tensor> in{f32({2, 1}, {1, 5}), f32({3}, {2, 3, 4}), Tensor::scalar(3.f)};
  require_close_to(ref1("Sum", in), {2, 3}, {6, 7, 8, 10, 11, 12});
  require_close_to(ref1("Mean", in), {2, 3}, {2, 7.f / 3, 8.f / 3, 10.f / 3, 11.f / 3, 4});
  require_close_to(ref1("Sum", {f32({2}, {1, -1})}), {2}, {1, -1});
  require_close_to(ref1("Mean", {f32({2}, {1, -1}), f32({2}, {3, 2})}), {2}, {2, 0.5});
}

TEST_CASE("Sum and Mean: other types, mixed types and bad shapes are refused",
          "[ops][zoo][errors]") {
  require_error([] { ref1("Sum", {i64({2}, {1, 2}), i64({2}, {1, 2})}); }, ErrorCode::InvalidModel,
                "supports f32");
  require_error([] { ref1("Mean", {f32({2}, {1, 2}), i64({2}, {1, 2})}); },
                ErrorCode::InvalidModel, "same dtype");
  require_error([] { ref1("Sum", {f32({2}, {1, 2}), f32({3}, {1, 2, 3})}); },
                ErrorCode::InvalidModel, "broadcast");
}
