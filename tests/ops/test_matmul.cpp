// Gemm and MatMul: reference values (computed with ONNX Runtime from the same inputs, pasted
// in), shape inference with symbolic dims, and error paths.
#include "op_test_util.h"

using namespace minfer;
using namespace minfer::test;

namespace {
Tensor a23() { return iota({2, 3}); }
Tensor b43() { return iota({4, 3}, -5); }  // arange(12).reshape(4,3) - 5
Tensor transposed(const Tensor& t) { return ref1("Transpose", {t}); }
}  // namespace

TEST_CASE("Gemm reference: transB, alpha, beta, C of shape [N]", "[ops]") {
  Tensor y = ref1("Gemm", {a23(), b43(), f32({4}, {1, 2, 3, 4})},
                  attrs({{"transB", int64_t(1)}, {"alpha", 0.5f}, {"beta", 2.0f}}));
  require_close_to(y, {2, 4}, {-3, 3.5, 10, 16.5, -21, -1, 19, 39});
}

TEST_CASE("Gemm reference: transA, C of shape [M,1], scalar C, no C", "[ops]") {
  Tensor y = ref1("Gemm", {transposed(a23()), transposed(b43()), f32({2, 1}, {10, 20})},
                  attrs({{"transA", int64_t(1)}}));
  require_close_to(y, {2, 4}, {0, 9, 18, 27, -26, 10, 46, 82});
  y = ref1("Gemm", {a23(), transposed(b43()), Tensor::scalar(3.f)});
  require_close_to(y, {2, 4}, {-7, 2, 11, 20, -43, -7, 29, 65});
  y = ref1("Gemm", {a23(), transposed(b43())});
  require_close_to(y, {2, 4}, {-10, -1, 8, 17, -46, -10, 26, 62});
}

TEST_CASE("Gemm inference: symbolic batch, C broadcast checks", "[ops]") {
  auto out = infer("Gemm", {info(sym({-1, 64}, {"N"})), info({10, 64}), info({10})},
                   attrs({{"transB", int64_t(1)}}));
  CHECK(shape_str(out[0]) == "[N,10]");
  require_error(
      [] {
        infer("Gemm", {info({2, 64}), info({10, 63})}, attrs({{"transB", int64_t(1)}}));
      },
      ErrorCode::InvalidModel, "has K = 64 but B [10,63] (transposed) has K = 63");
  require_error(
      [] {
        infer("Gemm", {info({2, 3}), info({3, 4}), info({3})});
      },
      ErrorCode::InvalidModel, "C has shape [3], which does not broadcast");
  require_error(
      [] {
        infer("Gemm", {info({2, 3, 1}), info({3, 4})});
      },
      ErrorCode::InvalidModel, "A has shape [2,3,1]; expected rank 2");
  require_error(
      [] {
        infer("Gemm", {info({2, 3}), info(DType::i64, {3, 4})});
      },
      ErrorCode::InvalidModel, "same dtype");
}

TEST_CASE("MatMul reference: batched with broadcast, 1-D promotion", "[ops]") {
  Tensor b(DType::f32, Shape{3, 3, 2});
  for (int i = 0; i < 18; ++i) b.data<float>()[i] = float(i % 4);
  Tensor y = ref1("MatMul", {iota({2, 1, 2, 3}), b});
  require_close_to(y, {2, 3, 2, 2}, {2,  5,  8,  20, 4,  7,  16, 28, 2,  5,  8,  20,
                                     14, 35, 20, 50, 28, 49, 40, 70, 14, 35, 20, 50});
  Tensor b0 = ref1("Gather", {b, i64({}, {0})});  // b[0]: [3,2]
  require_close_to(ref1("MatMul", {f32({3}, {1, 2, 3}), b0}), {2}, {4, 10});
  require_close_to(ref1("MatMul", {iota({2, 3}), f32({3}, {1, -1, 2})}), {2}, {3, 9});
  require_close_to(ref1("MatMul", {f32({3}, {1, 2, 3}), f32({3}, {1, -1, 2})}), {}, {5});
}

TEST_CASE("MatMul inference: symbolic dims and errors", "[ops]") {
  auto out = infer("MatMul", {info(sym({-1, -1, 768}, {"B", "S"})), info({768, 3072})});
  CHECK(shape_str(out[0]) == "[B,S,3072]");
  out = infer("MatMul", {info({5, 1, 2, 3}), info({4, 3, 7})});
  CHECK(shape_str(out[0]) == "[5,4,2,7]");
  out = infer("MatMul", {info({3}), info({2, 3, 7})});
  CHECK(shape_str(out[0]) == "[2,7]");
  require_error(
      [] {
        infer("MatMul", {info({2, 3}), info({4, 5})});
      },
      ErrorCode::InvalidModel, "A [2,3] has K = 3 but B [4,5] has K = 4");
  require_error(
      [] {
        infer("MatMul", {info({2, 2, 3}), info({3, 3, 5})});
      },
      ErrorCode::InvalidModel, "cannot broadcast");
  require_error(
      [] {
        infer("MatMul", {info({}), info({3})});
      },
      ErrorCode::InvalidModel, "rank >= 1");
}
