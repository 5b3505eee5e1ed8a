// Sqrt, Tanh, Erf, HardSigmoid, HardSwish, Gelu, Pow, Squeeze, Split, Expand, Tile: values
// worked out by hand and every error path the schemas check. The comparison with ONNX Runtime
// is in tests/conformance/test_zoo_cases.cpp.
#include <cmath>

#include "op_test_util.h"

using namespace minfer;
using namespace minfer::test;

TEST_CASE("Unary float math ops", "[ops][zoo]") {
  require_close_to(ref1("Sqrt", {f32({3}, {0, 4, 2.25})}), {3}, {0, 2, 1.5});
  CHECK(std::isnan(ref1("Sqrt", {f32({1}, {-1})}).data<float>()[0]));
  require_close_to(ref1("Tanh", {f32({2}, {0, 1})}), {2}, {0, float(std::tanh(1.0))});
  require_close_to(ref1("Erf", {f32({2}, {0, -1})}), {2}, {0, float(std::erf(-1.0))});
  require_close_to(ref1("HardSigmoid", {f32({3}, {-5, 0, 1})}), {3}, {0, 0.5, 0.7});
  require_close_to(ref1("HardSigmoid", {f32({2}, {1, 10})}, attrs({{"alpha", 0.1f}, {"beta", 0.f}})),
                   {2}, {0.1, 1});
  require_close_to(ref1("HardSwish", {f32({4}, {-4, -1, 1, 4})}), {4},
                   {0, -1.f / 3, 2.f / 3, 4});
  const double phi1 = 0.5 * (1 + std::erf(1 / std::sqrt(2.0)));
  require_close_to(ref1("Gelu", {f32({2}, {0, 1})}), {2}, {0, float(phi1)});
  const double t = 0.5 * (1 + std::tanh(std::sqrt(2 / M_PI) * (1 + 0.044715)));
  require_close_to(ref1("Gelu", {f32({1}, {1})}, attrs({{"approximate", std::string("tanh")}})),
                   {1}, {float(t)});
}

TEST_CASE("Unary float math ops: other types and bad attributes are refused", "[ops][zoo][errors]") {
  for (const char* op : {"Sqrt", "Tanh", "Erf", "HardSigmoid", "HardSwish", "Gelu"}) {
    INFO(op);
    require_error([&] { ref1(op, {i64({1}, {1})}); }, ErrorCode::InvalidModel, "supports f32");
  }
  require_error([] { ref1("Gelu", {f32({1}, {1})}, attrs({{"approximate", std::string("fast")}})); },
                ErrorCode::InvalidModel, "approximate 'fast'");
  require_error([] { ref1("HardSigmoid", {f32({1}, {1})}, attrs({{"alpha", std::string("x")}})); },
                ErrorCode::InvalidModel, "wrong type");
  // ... already when the model is loaded.
  require_error([] { infer("HardSigmoid", {info(Shape{1})}, attrs({{"beta", std::string("x")}})); },
                ErrorCode::InvalidModel, "wrong type");
}

TEST_CASE("Pow broadcasts; the exponent may have another type", "[ops][zoo]") {
  require_close_to(ref1("Pow", {f32({2, 2}, {1, 2, 3, 4}), f32({2}, {2, 0.5})}), {2, 2},
                   {1, float(std::sqrt(2.0)), 9, 2});
  require_close_to(ref1("Pow", {f32({2}, {-2, 3}), Tensor::scalar<int64_t>(3)}), {2}, {-8, 27});
  require_values<int64_t>(ref1("Pow", {i64({3}, {-3, 2, 5}), i64({1}, {2})}), {3}, {9, 4, 25});
  require_values<int32_t>(ref1("Pow", {i32({1}, {2}), Tensor::scalar(3.f)}), {1}, {8});
}

TEST_CASE("Pow: other types and shapes are refused", "[ops][zoo][errors]") {
  require_error([] { ref1("Pow", {Tensor::from_vector<uint8_t>({2}, Shape{1}), f32({1}, {2})}); },
                ErrorCode::InvalidModel, "supports f32, i32, i64");
  require_error([] { ref1("Pow", {f32({2}, {1, 2}), f32({3}, {1, 2, 3})}); },
                ErrorCode::InvalidModel, "broadcast");
}

TEST_CASE("Squeeze: axes as attribute or input, or every size-1 dim", "[ops][zoo]") {
  const Tensor x = iota({1, 3, 1, 2});
  CHECK(ref1("Squeeze", {x}, attrs({{"axes", std::vector<int64_t>{0, -2}}})).shape() ==
        Shape{3, 2});
  CHECK(ref1("Squeeze", {x, i64({1}, {2})}).shape() == Shape{1, 3, 2});
  const Tensor all = ref1("Squeeze", {x});
  CHECK(all.shape() == Shape{3, 2});
  CHECK(all.to_vector<float>() == x.to_vector<float>());
  // A symbolic dim named as an axis is taken to be 1 (checked when the shape is known).
  auto out = infer("Squeeze", {info(sym({-1, 3}, {"N", ""}))},
                   attrs({{"axes", std::vector<int64_t>{0}}}));
  CHECK(out[0].shape == Shape{3});
}

TEST_CASE("Squeeze: bad axes are refused naming the node", "[ops][zoo][errors]") {
  const Tensor x = iota({1, 3});
  require_error([&] { ref1("Squeeze", {x, i64({1}, {1})}); }, ErrorCode::InvalidModel,
                "its size is not 1");
  require_error([&] { ref1("Squeeze", {x}, attrs({{"axes", std::vector<int64_t>{2}}})); },
                ErrorCode::InvalidModel, "out of range");
  require_error([&] { ref1("Squeeze", {x}, attrs({{"axes", std::vector<int64_t>{0, -2}}})); },
                ErrorCode::InvalidModel, "duplicate");
  require_error([&] {
    ref1("Squeeze", {x, i64({1}, {0})}, attrs({{"axes", std::vector<int64_t>{0}}}));
  }, ErrorCode::InvalidModel, "axes both as an attribute and as an input");
  require_error([&] { ref1("Squeeze", {x, f32({1}, {0})}); }, ErrorCode::InvalidModel,
                "supports i64");
  require_error([&] { infer("Squeeze", {info(sym({-1, 1}, {"N", ""}))}); },
                ErrorCode::InvalidModel, "give axes");
  // Axes known only at run time: their count must fit the rank.
  require_error([&] { infer("Squeeze", {info(Shape{1, 3}), info(DType::i64, Shape{3})}); },
                ErrorCode::InvalidModel, "3 values, the input has rank 2");
}

TEST_CASE("Split: sizes as attribute or input, equal parts, num_outputs", "[ops][zoo]") {
  const Tensor x = iota({2, 5});
  auto out = run_ref("Split", {x}, attrs({{"axis", int64_t{1}}, {"split", std::vector<int64_t>{2, 3}}}), 2);
  require_close_to(out[0], {2, 2}, {0, 1, 5, 6});
  require_close_to(out[1], {2, 3}, {2, 3, 4, 7, 8, 9});
  out = run_ref("Split", {x, i64({3}, {1, 0, 4})}, attrs({{"axis", int64_t{-1}}}), 3);
  CHECK(out[1].shape() == Shape{2, 0});
  require_close_to(out[2], {2, 4}, {1, 2, 3, 4, 6, 7, 8, 9});
  out = run_ref("Split", {x}, {}, 2);  // axis 0, equal parts
  require_close_to(out[1], {1, 5}, {5, 6, 7, 8, 9});
  out = run_ref("Split", {x}, attrs({{"axis", int64_t{1}}, {"num_outputs", int64_t{2}}}), 2);
  CHECK(out[0].shape() == Shape{2, 3});
  CHECK(out[1].shape() == Shape{2, 2});
}

TEST_CASE("Split: sizes that do not fit are refused", "[ops][zoo][errors]") {
  const Tensor x = iota({2, 5});
  require_error([&] { run_ref("Split", {x, i64({2}, {2, 2})}, attrs({{"axis", int64_t{1}}}), 2); },
                ErrorCode::InvalidModel, "adds up to 4");
  require_error([&] { run_ref("Split", {x, i64({2}, {2, 3})}, attrs({{"axis", int64_t{1}}}), 3); },
                ErrorCode::InvalidModel, "2 sizes for 3 outputs");
  require_error([&] { run_ref("Split", {x, i64({2}, {6, -1})}, attrs({{"axis", int64_t{1}}}), 2); },
                ErrorCode::InvalidModel, "negative size");
  require_error([&] { run_ref("Split", {x}, attrs({{"axis", int64_t{1}}}), 2); },
                ErrorCode::InvalidModel, "equal parts");
  require_error([&] {
    run_ref("Split", {x}, attrs({{"axis", int64_t{1}}, {"num_outputs", int64_t{3}}}), 2);
  }, ErrorCode::InvalidModel, "num_outputs 3");
  // Three parts of 2 elements would leave the last one empty.
  require_error([&] { run_ref("Split", {iota({2})}, attrs({{"num_outputs", int64_t{3}}}), 3); },
                ErrorCode::InvalidModel, "more than the axis' 2 elements allow");
}

TEST_CASE("Expand and Tile", "[ops][zoo]") {
  require_close_to(ref1("Expand", {f32({2, 1}, {1, 2}), i64({2}, {2, 3})}), {2, 3},
                   {1, 1, 1, 2, 2, 2});
  // A 1 in the shape keeps the input's dim; a longer shape adds dims in front.
  CHECK(ref1("Expand", {iota({3, 1}), i64({3}, {2, 1, 4})}).shape() == Shape{2, 3, 4});
  require_values<int64_t>(ref1("Tile", {i64({2}, {1, 2}), i64({1}, {3})}), {6}, {1, 2, 1, 2, 1, 2});
  require_close_to(ref1("Tile", {f32({2, 1}, {1, 2}), i64({2}, {2, 2})}), {4, 2},
                   {1, 1, 2, 2, 1, 1, 2, 2});
  CHECK(ref1("Tile", {iota({2, 3}), i64({2}, {0, 1})}).shape() == Shape{0, 3});
}

TEST_CASE("Expand and Tile: bad shapes and repeats are refused", "[ops][zoo][errors]") {
  require_error([] { ref1("Expand", {iota({2, 3}), i64({1}, {4})}); }, ErrorCode::InvalidModel,
                "broadcast");
  require_error([] { ref1("Expand", {iota({2}), i64({1}, {-2})}); }, ErrorCode::InvalidModel,
                "negative dim");
  require_error([] { ref1("Expand", {iota({2}), f32({1}, {2})}); }, ErrorCode::InvalidModel,
                "supports i64");
  require_error([] { ref1("Tile", {iota({2, 3}), i64({1}, {2})}); }, ErrorCode::InvalidModel,
                "rank 2");
  require_error([] { ref1("Tile", {iota({2}), i64({1}, {-1})}); }, ErrorCode::InvalidModel,
                "negative value");
  require_error([] { ref1("Tile", {iota({2}), i64({1, 1}, {2})}); }, ErrorCode::InvalidModel,
                "expected 1-D");
}
