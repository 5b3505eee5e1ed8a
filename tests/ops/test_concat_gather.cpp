// Concat and Gather: hand-computed values, integer dtypes, symbolic inference, error paths.
#include "op_test_util.h"

using namespace minfer;
using namespace minfer::test;

TEST_CASE("Concat reference", "[ops]") {
  Tensor a = f32({2, 1}, {1, 2}), b = f32({2, 2}, {3, 4, 5, 6});
  require_close_to(ref1("Concat", {a, b}, attrs({{"axis", int64_t(1)}})), {2, 3},
                   {1, 3, 4, 2, 5, 6});
  require_close_to(ref1("Concat", {b, a}, attrs({{"axis", int64_t(-1)}})), {2, 3},
                   {3, 4, 1, 5, 6, 2});
  require_close_to(ref1("Concat", {b, b}, attrs({{"axis", int64_t(0)}})), {4, 2},
                   {3, 4, 5, 6, 3, 4, 5, 6});
  // Shape subgraphs: i64 vectors, including an empty one.
  Tensor empty(DType::i64, Shape{0});
  require_values<int64_t>(
      ref1("Concat", {i64({1}, {-1}), empty, i64({2}, {7, 8})}, attrs({{"axis", int64_t(0)}})), {3},
      {-1, 7, 8});
  require_values<int64_t>(ref1("Concat", {i64({1}, {5})}, attrs({{"axis", int64_t(0)}})), {1}, {5});
}

TEST_CASE("Concat inference and errors", "[ops]") {
  auto out = infer("Concat", {info(sym({-1, 16, 8, 8}, {"N"})), info(sym({-1, 32, 8, 8}, {"N"}))},
                   attrs({{"axis", int64_t(1)}}));
  CHECK(shape_str(out[0]) == "[N,48,8,8]");
  out = infer("Concat", {info({-1, 2}), info({3, 2})}, attrs({{"axis", int64_t(0)}}));
  CHECK(shape_str(out[0]) == "[?,2]");
  out = infer("Concat", {info({-1, 2}), info({3, -1})}, attrs({{"axis", int64_t(0)}}));
  CHECK(shape_str(out[0]) == "[?,2]");
  require_error(
      [] {
        infer("Concat", {info({2, 3}), info({2, 4})}, attrs({{"axis", int64_t(0)}}));
      },
      ErrorCode::InvalidModel, "incompatible with [2,3] in dim 1 (only axis 0 may differ)");
  require_error(
      [] {
        infer("Concat", {info({2, 3}), info({2})}, attrs({{"axis", int64_t(0)}}));
      },
      ErrorCode::InvalidModel, "ranks differ");
  require_error(
      [] {
        infer("Concat", {info({2, 3}), info(DType::i64, {2, 3})}, attrs({{"axis", int64_t(0)}}));
      },
      ErrorCode::InvalidModel, "same dtype");
  require_error(
      [] {
        infer("Concat", {info({2, 3})});
      },
      ErrorCode::InvalidModel, "attribute axis is missing");
  require_error(
      [] {
        infer("Concat", {info({2, 3})}, attrs({{"axis", int64_t(-3)}}));
      },
      ErrorCode::InvalidModel, "axis -3 is out of range for rank 2");
}

TEST_CASE("Gather reference: axes, negative indices, index dtypes", "[ops]") {
  Tensor data = iota({3, 4});
  require_close_to(ref1("Gather", {data, i64({2, 2}, {0, -1, 1, 1})}), {2, 2, 4},
                   {0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 4, 5, 6, 7});
  require_close_to(ref1("Gather", {data, i32({2}, {2, -4})}, attrs({{"axis", int64_t(1)}})), {3, 2},
                   {2, 0, 6, 4, 10, 8});
  // A scalar index drops the axis: shape[1] in a shape subgraph.
  require_values<int64_t>(ref1("Gather", {i64({4}, {1, 3, 224, 224}), i64({}, {1})}), {}, {3});
  require_error(
      [&] {
        ref1("Gather", {data, i64({1}, {3})});
      },
      ErrorCode::InvalidArgument, "index 3 is out of range for axis 0 of size 3");
  require_error(
      [&] {
        ref1("Gather", {data, i64({1}, {-5})}, attrs({{"axis", int64_t(1)}}));
      },
      ErrorCode::InvalidArgument, "index -5 is out of range for axis 1 of size 4");
}

TEST_CASE("Gather inference and errors", "[ops]") {
  auto out = infer("Gather", {info(sym({-1, 10, 64}, {"N"})), info(DType::i64, {2, 3})},
                   attrs({{"axis", int64_t(1)}}));
  CHECK(shape_str(out[0]) == "[N,2,3,64]");
  out = infer("Gather", {info(DType::i64, {4}), info(DType::i64, {})});
  CHECK(out[0].dtype == DType::i64);
  CHECK(shape_str(out[0]) == "[]");
  require_error(
      [] {
        infer("Gather", {info({3}), info({1})});
      },
      ErrorCode::InvalidModel, "Gather supports i32, i64");
  require_error(
      [] {
        infer("Gather", {info({3}), info(DType::i64, {1})}, attrs({{"axis", int64_t(1)}}));
      },
      ErrorCode::InvalidModel, "axis 1 is out of range for rank 1");
}
