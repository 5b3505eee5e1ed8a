// The CUDA backend's per-session state (minfer::DeviceContext) and small helpers that CUDA
// kernels use: device selection, device buffers, copies and synchronization on the stream.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <mutex>
#include <string>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda_api.h"

namespace minfer {

// One per session and device: kernels enqueue all their work on `stream`, so one run's work is
// ordered without extra synchronization, and a whole run can be captured as a CUDA graph.
struct DeviceContext {
  int device = 0;
  std::string device_name;  // "NVIDIA H100 80GB HBM3"
  int sm_count = 0;         // multiprocessors, for sizing grids
  cudaStream_t stream = nullptr;
  std::mutex stream_mutex;  // see cuda::lock_stream (backends/cuda_api.h)
  // For ordering `stream` with a caller's stream (cuda::wait_for_stream, signal_stream);
  // created on first use, under stream_mutex.
  cudaEvent_t caller_done = nullptr, run_done = nullptr;

  DeviceContext() = default;
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;
  ~DeviceContext();

  // The cuBLAS handle bound to `stream`, created on first use (most models never need it),
  // with a workspace of its own so that cuBLAS never allocates while a run is captured as a
  // CUDA graph (an allocation there would void the capture). Kernels that call cuBLAS ask for
  // it in prepare(), so that it is never created inside a capture either.
  cublasHandle_t cublas();

 private:
  std::once_flag cublas_once_;
  cublasHandle_t cublas_ = nullptr;
  void* cublas_workspace_ = nullptr;
};

namespace cuda {

// Makes `device` current for the calling thread for the guard's lifetime.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// Device memory owned by one object (freed when it goes away).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceContext& ctx, size_t bytes);
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }
  void reset();

 private:
  DeviceContext* ctx_ = nullptr;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace cuda
}  // namespace minfer
