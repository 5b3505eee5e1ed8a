// The CUDA backend's plumbing: device discovery, contexts, memory and copies, error mapping.
// Tests that need a GPU return early with a warning where there is none (CI).
#include <cstring>
#include <vector>

#include "cuda/cuda_test_util.h"

#ifdef MINFER_WITH_CUDA
#include "backends/cuda/cuda_context.h"
#endif

namespace minfer::test {
namespace {

TEST_CASE("the CUDA backend's device count agrees with create_context, which explains failures",
          "[cuda]") {
  DeviceBackend* backend = find_device_backend("cuda");
  CHECK(cuda_available() == (backend && backend->device_count() > 0));
#ifndef MINFER_WITH_CUDA
  CHECK(backend == nullptr);
#endif
  if (!cuda_available()) {
    // No GPU (or no CUDA in this build): asking for one is an error that says why.
    try {
      cuda_backend().create_context(0);
      FAIL("create_context succeeded without a GPU");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::Device);
      CHECK(std::string(e.what()).size() > 20);
    }
    return;
  }
  REQUIRE_THROWS_AS(cuda_backend().create_context(cuda_backend().device_count()), Error);
  auto ctx = cuda_backend().create_context(0);
  REQUIRE(ctx != nullptr);
}

TEST_CASE("cuda device memory round-trips through copies on the stream", "[cuda]") {
  if (!cuda_available()) {
    WARN("no GPU: skipping the CUDA memory test");
    return;
  }
  auto ctx = cuda_backend().create_context(0);
  std::vector<int32_t> host(100003), back(host.size());
  for (size_t i = 0; i < host.size(); ++i) host[i] = int32_t(i * 7919);
  const size_t bytes = host.size() * sizeof(int32_t);
  void* a = cuda_backend().device_alloc(*ctx, bytes);
  REQUIRE(a != nullptr);
  CHECK(cuda_backend().device_alloc(*ctx, 0) == nullptr);
  cuda_backend().copy_to_device(*ctx, a, host.data(), bytes);
#ifdef MINFER_WITH_CUDA
  cuda::DeviceBuffer b(*ctx, bytes);
  cuda_backend().copy_on_device(*ctx, b.get(), a, bytes);
  cuda_backend().copy_to_host(*ctx, back.data(), b.get(), bytes);
  CHECK(ctx->stream != nullptr);
  CHECK(ctx->sm_count > 0);
  CHECK(ctx->cublas() != nullptr);
  CHECK(ctx->cublas() == ctx->cublas());  // created once
#else
  cuda_backend().copy_to_host(*ctx, back.data(), a, bytes);
#endif
  cuda_backend().synchronize(*ctx);
  CHECK(back == host);
  cuda_backend().device_free(*ctx, a);
  cuda_backend().device_free(*ctx, nullptr);  // a no-op
}

#ifdef MINFER_WITH_CUDA
TEST_CASE("MINFER_CUDA_CHECK turns CUDA errors into minfer errors naming the call", "[cuda]") {
  // Needs no GPU: only the mapping of a failed status is exercised.
  try {
    MINFER_CUDA_CHECK(cudaErrorInvalidValue);
    FAIL("no error");
  } catch (const Error& e) {
    std::string m = e.what();
    CHECK(e.code() == ErrorCode::Device);
    CHECK(m.find("test_cuda_context.cpp:") != std::string::npos);
    CHECK(m.find("cudaErrorInvalidValue") != std::string::npos);
    CHECK(m.find(cudaGetErrorString(cudaErrorInvalidValue)) != std::string::npos);
  }
  try {
    MINFER_CUDA_CHECK(cudaErrorMemoryAllocation);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::OutOfMemory);
  }
  try {
    MINFER_CUBLAS_CHECK(CUBLAS_STATUS_NOT_INITIALIZED);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::Device);
    CHECK(std::string(e.what()).find("CUBLAS_STATUS_NOT_INITIALIZED") != std::string::npos);
  }
}
#endif

}  // namespace
}  // namespace minfer::test
