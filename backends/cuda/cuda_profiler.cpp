// CUDA events and the GPU's peak for the profiler (see cuda_profiler.h).
#include "backends/cuda/cuda_profiler.h"

#include <algorithm>

#include "backends/cuda/cuda_context.h"

namespace minfer::cuda {

void* event_create() {
  cudaEvent_t e = nullptr;
  MINFER_CUDA_CHECK(cudaEventCreate(&e));
  return e;
}

void event_destroy(void* event) noexcept {
  if (event) cudaEventDestroy(static_cast<cudaEvent_t>(event));
}

void event_record(void* event, DeviceContext& ctx) {
  MINFER_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event), ctx.stream));
}

float event_elapsed_ms(void* start, void* end) {
  MINFER_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(end)));
  float ms = 0;
  MINFER_CUDA_CHECK(
      cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start), static_cast<cudaEvent_t>(end)));
  return ms;
}

MachinePeak measure_gpu_peak(int device) {
  std::shared_ptr<DeviceContext> ctx = create_context(device);
  DeviceContext& dc = *ctx;
  // Arithmetic: best of a few 4096^3 SGEMMs (TF32 off: cuBLAS's default math).
  const int n = 4096;
  const size_t matrix = size_t(n) * n * sizeof(float);
  float* a = static_cast<float*>(device_alloc(dc, matrix));
  float* b = static_cast<float*>(device_alloc(dc, matrix));
  float* c = static_cast<float*>(device_alloc(dc, matrix));
  MINFER_CUDA_CHECK(cudaMemsetAsync(a, 0, matrix, dc.stream));
  MINFER_CUDA_CHECK(cudaMemsetAsync(b, 0, matrix, dc.stream));
  void* start = event_create();
  void* end = event_create();
  const float one = 1, zero = 0;
  double best_gemm = 1e30;
  for (int i = 0; i < 5; ++i) {
    event_record(start, dc);
    MINFER_CUBLAS_CHECK(
        cublasSgemm(dc.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n));
    event_record(end, dc);
    best_gemm = std::min<double>(best_gemm, event_elapsed_ms(start, end));
  }
  // Bandwidth: best of a few 1 GiB device-to-device copies (read + write counted).
  const size_t bytes = size_t(1) << 30;
  void* src = device_alloc(dc, bytes);
  void* dst = device_alloc(dc, bytes);
  double best_copy = 1e30;
  for (int i = 0; i < 5; ++i) {
    event_record(start, dc);
    MINFER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, dc.stream));
    event_record(end, dc);
    best_copy = std::min<double>(best_copy, event_elapsed_ms(start, end));
  }
  event_destroy(start);
  event_destroy(end);
  for (void* p : {static_cast<void*>(a), static_cast<void*>(b), static_cast<void*>(c), src, dst})
    device_free(dc, p);
  MachinePeak peak;
  peak.gflops = 2.0 * n * n * n / (best_gemm / 1000) / 1e9;
  peak.gbps = 2.0 * double(bytes) / (best_copy / 1000) / 1e9;
  peak.method = "measured on " + dc.device_name +
                ": cuBLAS SGEMM 4096^3 (fp32 FMA, no tensor cores) and a 1 GiB device-to-device "
                "copy, best of 5 each";
  return peak;
}

}  // namespace minfer::cuda
