// Row-major fp32 matrix products on Eigen's GEMM, with explicit control over threads.
#pragma once

#include <cstdint>

namespace minfer::cpu {

// One operand of a product: row-major storage with row stride `ld`, used as stored or
// transposed.
struct MatrixRef {
  const float* data;
  int64_t ld;
  bool transposed = false;
};

// C[m,n] += alpha * A[m,k] * B[k,n] on the calling thread only (C row-major, row stride ldc).
// Accumulating lets callers pre-fill C with a bias or residual, so that the epilogue costs
// no extra pass over memory.
void sgemm_acc(int64_t m, int64_t n, int64_t k, float alpha, MatrixRef a, MatrixRef b, float* c,
               int64_t ldc);

// The same, split over up to `threads` threads by blocks of rows or columns of C.
void sgemm_acc_parallel(int threads, int64_t m, int64_t n, int64_t k, float alpha, MatrixRef a,
                        MatrixRef b, float* c, int64_t ldc);

}  // namespace minfer::cpu
