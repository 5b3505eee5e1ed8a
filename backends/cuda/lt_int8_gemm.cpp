#include "backends/cuda/lt_int8_gemm.h"

namespace minfer::cuda {

LtInt8Gemm::~LtInt8Gemm() { release(); }

void LtInt8Gemm::release() {
  // Destroying descriptors cannot fail in a way worth reporting from a destructor.
  if (a_) cublasLtMatrixLayoutDestroy(a_);
  if (b_) cublasLtMatrixLayoutDestroy(b_);
  if (c_) cublasLtMatrixLayoutDestroy(c_);
  if (op_) cublasLtMatmulDescDestroy(op_);
  if (handle_) cublasLtDestroy(handle_);
  a_ = b_ = c_ = nullptr;
  op_ = nullptr;
  handle_ = nullptr;
}

bool LtInt8Gemm::plan(DeviceContext& ctx, int m, int n, int k, int lda, int ldb, int ldc,
                      uint32_t b_alignment, size_t max_workspace) {
  release();
  DeviceGuard guard(ctx.device);
  MINFER_CUBLAS_CHECK(cublasLtCreate(&handle_));
  MINFER_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32I, CUDA_R_32I));
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  MINFER_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  MINFER_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  MINFER_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&a_, CUDA_R_8I, k, m, lda));
  MINFER_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&b_, CUDA_R_8I, k, n, ldb));
  MINFER_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&c_, CUDA_R_32I, m, n, ldc));

  cublasLtMatmulPreference_t pref = nullptr;
  MINFER_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace, sizeof(max_workspace));
  // B may be a tensor of the arena, aligned less than the 256 bytes cuBLASLt assumes.
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                  &b_alignment, sizeof(b_alignment));
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulAlgoGetHeuristic(handle_, op_, a_, b_, c_, c_, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0 || result.state != CUBLAS_STATUS_SUCCESS) {
    release();
    return false;
  }
  algo_ = result.algo;
  workspace_ = result.workspaceSize;
  return true;
}

void LtInt8Gemm::run(DeviceContext& ctx, const int8_t* a, const int8_t* b, int32_t* c,
                     void* workspace) const {
  const int32_t one = 1, zero = 0;
  MINFER_CUBLAS_CHECK(cublasLtMatmul(handle_, op_, &one, a, a_, b, b_, &zero, c, c_, c, c_, &algo_,
                                     workspace, workspace_, ctx.stream));
}

}  // namespace minfer::cuda
