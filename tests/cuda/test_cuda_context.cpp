// The CUDA backend's plumbing: device discovery, contexts, memory and copies, error mapping.
// Tests that need a GPU return early with a warning where there is none (CI).
#include <cstring>
#include <vector>

#include "backends/cuda_api.h"
#include "test_util.h"

#ifdef MINFER_WITH_CUDA
#include "backends/cuda/cuda_context.h"
#endif

namespace minfer::test {
namespace {

TEST_CASE("cuda::available agrees with device_count and create_context explains failures",
          "[cuda]") {
  CHECK(cuda::available() == (cuda::device_count() > 0));
#ifndef MINFER_WITH_CUDA
  CHECK_FALSE(cuda::available());
#endif
  if (!cuda::available()) {
    // No GPU (or no CUDA in this build): asking for one is an error that says why.
    try {
      cuda::create_context(0);
      FAIL("create_context succeeded without a GPU");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::Device);
      CHECK(std::string(e.what()).size() > 20);
    }
    return;
  }
  REQUIRE_THROWS_AS(cuda::create_context(cuda::device_count()), Error);
  auto ctx = cuda::create_context(0);
  REQUIRE(ctx != nullptr);
}

TEST_CASE("cuda device memory round-trips through copies on the stream", "[cuda]") {
  if (!cuda::available()) {
    WARN("no GPU: skipping the CUDA memory test");
    return;
  }
  auto ctx = cuda::create_context(0);
  std::vector<int32_t> host(100003), back(host.size());
  for (size_t i = 0; i < host.size(); ++i) host[i] = int32_t(i * 7919);
  const size_t bytes = host.size() * sizeof(int32_t);
  void* a = cuda::device_alloc(*ctx, bytes);
  REQUIRE(a != nullptr);
  CHECK(cuda::device_alloc(*ctx, 0) == nullptr);
  cuda::copy_to_device(*ctx, a, host.data(), bytes);
#ifdef MINFER_WITH_CUDA
  cuda::DeviceBuffer b(*ctx, bytes);
  cuda::copy_on_device(*ctx, b.get(), a, bytes);
  cuda::copy_to_host(*ctx, back.data(), b.get(), bytes);
  CHECK(ctx->stream != nullptr);
  CHECK(ctx->sm_count > 0);
  CHECK(ctx->cublas() != nullptr);
  CHECK(ctx->cublas() == ctx->cublas());  // created once
#else
  cuda::copy_to_host(*ctx, back.data(), a, bytes);
#endif
  cuda::synchronize(*ctx);
  CHECK(back == host);
  cuda::device_free(*ctx, a);
  cuda::device_free(*ctx, nullptr);  // a no-op
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
