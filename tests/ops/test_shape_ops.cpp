// Flatten, Reshape, Transpose, Identity, Shape, Unsqueeze: values, symbolic inference, dtypes
// other than f32, and error paths. Expected values are by hand (Transpose from numpy).
#include "op_test_util.h"

using namespace minfer;
using namespace minfer::test;

namespace {
std::vector<int64_t> v(std::initializer_list<int64_t> l) { return l; }
}  // namespace

TEST_CASE("Flatten reference and inference", "[ops]") {
  Tensor y = ref1("Flatten", {iota({2, 3, 4})}, attrs({{"axis", int64_t(2)}}));
  CHECK(y.shape() == Shape{6, 4});
  CHECK(y.data<float>()[23] == 23.f);
  CHECK(ref1("Flatten", {iota({2, 3, 4})}, attrs({{"axis", int64_t(0)}})).shape() == Shape{1, 24});
  CHECK(ref1("Flatten", {iota({2, 3, 4})}, attrs({{"axis", int64_t(-1)}})).shape() == Shape{6, 4});
  CHECK(ref1("Flatten", {iota({2, 3, 4})}, attrs({{"axis", int64_t(3)}})).shape() == Shape{24, 1});
  Tensor q(DType::u8, Shape{2, 2});
  CHECK(ref1("Flatten", {q}).dtype() == DType::u8);

  CHECK(shape_str(infer("Flatten", {info(sym({-1, 64, 1, 1}, {"N"}))})[0]) == "[N,64]");
  CHECK(shape_str(infer("Flatten", {info(sym({-1, 3, 4}, {"N"}))},
                        attrs({{"axis", int64_t(0)}}))[0]) == "[1,?]");
  require_error(
      [] {
        infer("Flatten", {info({2, 3})}, attrs({{"axis", int64_t(3)}}));
      },
      ErrorCode::InvalidModel, "axis 3 is out of range for rank 2 (valid: -2..2)");
}

TEST_CASE("Reshape reference: 0 copies, -1 infers, allowzero", "[ops]") {
  Tensor x = iota({2, 3, 4});
  Tensor y = ref1("Reshape", {x, i64({2}, {0, -1})});
  CHECK(y.shape() == Shape{2, 12});
  CHECK(y.to_vector<float>() == x.to_vector<float>());
  CHECK(ref1("Reshape", {x, i64({3}, {-1, 2, 2})}).shape() == Shape{6, 2, 2});
  CHECK(ref1("Reshape", {x, i32({2}, {4, 6})}).shape() == Shape{4, 6});
  // allowzero: 0 is a real size.
  Tensor empty(DType::f32, Shape{0, 3});
  CHECK(ref1("Reshape", {empty, i64({2}, {3, 0})}, attrs({{"allowzero", int64_t(1)}})).shape() ==
        Shape{3, 0});
  Tensor ints = i64({4}, {1, 2, 3, 4});
  require_values<int64_t>(ref1("Reshape", {ints, i64({2}, {2, 2})}), {2, 2}, {1, 2, 3, 4});
}

TEST_CASE("Reshape inference: constants, symbolic dims, unknown shape input", "[ops]") {
  Tensor spec = i64({2}, {0, -1});
  auto out = infer("Reshape", {info(sym({-1, 64, 1, 1}, {"N"})), const_info(spec)});
  CHECK(shape_str(out[0]) == "[N,64]");
  // A -1 that stands for exactly one symbolic dim takes it over.
  Tensor spec2 = i64({2}, {-1, 48});
  out = infer("Reshape", {info(sym({-1, 3, 16}, {"B"})), const_info(spec2)});
  CHECK(shape_str(out[0]) == "[B,48]");
  Tensor spec3 = i64({2}, {-1, 2});
  out = infer("Reshape", {info({-1, 3}), const_info(spec3)});
  CHECK(shape_str(out[0]) == "[?,2]");
  // Not a constant: only the rank is known.
  out = infer("Reshape", {info({2, 3}), info(DType::i64, {3})});
  CHECK(shape_str(out[0]) == "[?,?,?]");
  // Reshape(x, Shape(y)): y's dims, symbolic ones included.
  Graph g;
  Value* x = g.add_input("x", DType::f32, sym({-1, 1000}, {"N"}));
  Value* y = g.add_input("y", DType::f32, sym({-1, 10, 100}, {"N"}));
  Value* s = g.add_node("Shape", "s", {y})->outputs[0];
  g.infer_shapes();
  Node* r = g.add_node("Reshape", "n1", {x, s});
  InferContext ctx(*r, {info(sym({-1, 1000}, {"N"})), info(DType::i64, {3})});
  schema("Reshape").infer(ctx);
  CHECK(shape_str(ctx.outputs()[0]) == "[N,10,100]");
  require_error(
      [] {
        infer("Reshape", {info({2, 3}), info(DType::i64, {-1})});
      },
      ErrorCode::InvalidModel, "shape input is not a constant");
}

TEST_CASE("Reshape errors", "[ops]") {
  Tensor two_infer = i64({2}, {-1, -1}), bad_count = i64({2}, {4, 2}),
         copy_oob = i64({3}, {1, 6, 0});
  Tensor neg = i64({2}, {-2, 3});
  require_error(
      [&] {
        infer("Reshape", {info({2, 3}), const_info(two_infer)});
      },
      ErrorCode::InvalidModel, "more than one -1");
  require_error(
      [&] {
        infer("Reshape", {info({2, 3}), const_info(bad_count)});
      },
      ErrorCode::InvalidModel, "cannot reshape input [2,3] to [4,2]");
  require_error(
      [&] {
        infer("Reshape", {info({2, 3}), const_info(copy_oob)});
      },
      ErrorCode::InvalidModel, "copies dim 2 (0) but the input [2,3] has rank 2");
  require_error(
      [&] {
        infer("Reshape", {info({2, 3}), const_info(neg)});
      },
      ErrorCode::InvalidModel, "invalid dim -2");
  require_error(
      [&] {
        infer("Reshape", {info({7}), info(DType::f32, {1})});
      },
      ErrorCode::InvalidModel, "Reshape supports i64, i32");
  require_error(
      [] {
        ref1("Reshape", {iota({2, 3}), i64({1}, {5})});
      },
      ErrorCode::InvalidModel, "element counts differ");
}

TEST_CASE("Transpose reference, default perm, other dtypes", "[ops]") {
  Tensor x = iota({2, 3, 4});
  require_close_to(
      ref1("Transpose", {x}, attrs({{"perm", v({1, 2, 0})}})), {3, 4, 2},
      {0, 12, 1, 13, 2, 14, 3, 15, 4, 16, 5, 17, 6, 18, 7, 19, 8, 20, 9, 21, 10, 22, 11, 23});
  require_close_to(ref1("Transpose", {x}), {4, 3, 2}, {0, 12, 4, 16, 8,  20, 1, 13, 5, 17, 9,  21,
                                                       2, 14, 6, 18, 10, 22, 3, 15, 7, 19, 11, 23});
  Tensor q(DType::i8, Shape{2, 3});
  for (int i = 0; i < 6; ++i) q.data<int8_t>()[i] = int8_t(i - 3);
  require_values<int8_t>(ref1("Transpose", {q}), {3, 2}, {-3, 0, -2, 1, -1, 2});
  require_values<int64_t>(ref1("Transpose", {i64({2, 2}, {1, 2, 3, 4})}), {2, 2}, {1, 3, 2, 4});

  auto out =
      infer("Transpose", {info(sym({-1, 3, 224, 224}, {"N"}))}, attrs({{"perm", v({0, 2, 3, 1})}}));
  CHECK(shape_str(out[0]) == "[N,224,224,3]");
  CHECK(shape_str(infer("Transpose", {info(sym({-1, 5}, {"N"}))})[0]) == "[5,N]");
  require_error(
      [] {
        infer("Transpose", {info({2, 3})}, attrs({{"perm", v({0, 0})}}));
      },
      ErrorCode::InvalidModel, "perm [0,0] is not a permutation of 0..1");
  require_error(
      [] {
        infer("Transpose", {info({2, 3})}, attrs({{"perm", v({0, 1, 2})}}));
      },
      ErrorCode::InvalidModel, "perm [0,1,2] is not a permutation");
}

TEST_CASE("Identity and Shape", "[ops]") {
  Tensor x = i32({3}, {1, 2, 3});
  Tensor y = ref1("Identity", {x});
  require_values<int32_t>(y, {3}, {1, 2, 3});
  CHECK(y.raw() != x.raw());  // a copy, so writing the output never changes the input
  CHECK(shape_str(infer("Identity", {info(sym({-1, 2}, {"N"}))})[0]) == "[N,2]");

  Tensor data(DType::u8, Shape{2, 3, 5});
  require_values<int64_t>(ref1("Shape", {data}), {3}, {2, 3, 5});
  require_values<int64_t>(ref1("Shape", {data}, attrs({{"start", int64_t(1)}})), {2}, {3, 5});
  require_values<int64_t>(
      ref1("Shape", {data}, attrs({{"start", int64_t(-2)}, {"end", int64_t(-1)}})), {1}, {3});
  require_values<int64_t>(ref1("Shape", {data}, attrs({{"start", int64_t(5)}})), {0}, {});
  auto out = infer("Shape", {info(sym({-1, 3}, {"N"}))});
  CHECK(out[0].dtype == DType::i64);
  CHECK(shape_str(out[0]) == "[2]");
}

TEST_CASE("Unsqueeze: axes as attribute or input", "[ops]") {
  Tensor x = iota({2, 3});
  CHECK(ref1("Unsqueeze", {x}, attrs({{"axes", v({0, 3})}})).shape() == Shape{1, 2, 3, 1});
  CHECK(ref1("Unsqueeze", {x, i64({1}, {-1})}).shape() == Shape{2, 3, 1});
  CHECK(ref1("Unsqueeze", {x, i64({2}, {1, -2})}).shape() == Shape{2, 1, 1, 3});
  Tensor s = i64({}, {7});
  require_values<int64_t>(ref1("Unsqueeze", {s, i64({1}, {0})}), {1}, {7});

  Tensor axes = i64({2}, {0, 2});
  auto out = infer("Unsqueeze", {info(sym({-1, 3}, {"N"})), const_info(axes)});
  CHECK(shape_str(out[0]) == "[1,N,1,3]");
  out = infer("Unsqueeze", {info({2, 3}), info(DType::i64, {1})});
  CHECK(shape_str(out[0]) == "[?,?,?]");
  require_error([] { infer("Unsqueeze", {info({2, 3})}); }, ErrorCode::InvalidModel, "needs axes");
  require_error(
      [] {
        infer("Unsqueeze", {info({2, 3})}, attrs({{"axes", v({1, 1})}}));
      },
      ErrorCode::InvalidModel, "has a duplicate");
  require_error(
      [] {
        infer("Unsqueeze", {info({2, 3})}, attrs({{"axes", v({3})}}));
      },
      ErrorCode::InvalidModel, "axis 3 is out of range for rank 3");
}
