// An exact int8 GEMM through cuBLASLt (tensor-core IMMA): C = A^T B with int8 A, B and int32
// C, in int32 arithmetic (integer products and sums, so the result is the exact integer, the
// same as any other int32 accumulation). Column-major, "TN": A is [k, m] (ld lda), B [k, n]
// (ld ldb), C [m, n] (ld ldc); m, k, lda, ldb, ldc multiples of 4 (cuBLASLt's int8 rules).
#pragma once

#include <cublasLt.h>

#include <cstddef>
#include <cstdint>

#include "backends/cuda/cuda_context.h"

namespace minfer::cuda {

class LtInt8Gemm {
 public:
  LtInt8Gemm() = default;
  ~LtInt8Gemm();
  LtInt8Gemm(const LtInt8Gemm&) = delete;
  LtInt8Gemm& operator=(const LtInt8Gemm&) = delete;

  // Describes the problem and asks cuBLASLt for an algorithm using at most `max_workspace`
  // bytes, for A and C aligned to 256 bytes and B to `b_alignment`; false when it has none
  // (the caller then uses another GEMM). The workspace must be 256-byte aligned.
  bool plan(DeviceContext& ctx, int m, int n, int k, int lda, int ldb, int ldc,
            uint32_t b_alignment, size_t max_workspace);
  size_t workspace_bytes() const { return workspace_; }
  // Enqueues C = A^T B on the context's stream. `workspace`: workspace_bytes() of device memory.
  void run(DeviceContext& ctx, const int8_t* a, const int8_t* b, int32_t* c, void* workspace) const;

 private:
  void release();

  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  size_t workspace_ = 0;
};

}  // namespace minfer::cuda
