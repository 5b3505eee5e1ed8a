// The CUDA backend as the runtime sees it (runtime/device_backend.h): each function forwards to
// the CUDA API of backends/cuda_api.h and cuda_profiler.h. Made when the registry is first
// used; it touches no CUDA function until one is called, so a CPU run never loads the driver.
#include "backends/cuda/cuda_profiler.h"
#include "backends/cuda_api.h"
#include "runtime/device_backend.h"

namespace minfer {

namespace {

class CudaBackend final : public DeviceBackend {
 public:
  int device_count() override { return cuda::device_count(); }
  std::shared_ptr<DeviceContext> create_context(int device) override {
    return cuda::create_context(device);
  }
  void* device_alloc(DeviceContext& ctx, size_t bytes) override {
    return cuda::device_alloc(ctx, bytes);
  }
  void device_free(DeviceContext& ctx, void* ptr) override { cuda::device_free(ctx, ptr); }
  void copy_to_device(DeviceContext& ctx, void* dst, const void* src, size_t bytes) override {
    cuda::copy_to_device(ctx, dst, src, bytes);
  }
  void copy_to_host(DeviceContext& ctx, void* dst, const void* src, size_t bytes) override {
    cuda::copy_to_host(ctx, dst, src, bytes);
  }
  void copy_on_device(DeviceContext& ctx, void* dst, const void* src, size_t bytes) override {
    cuda::copy_on_device(ctx, dst, src, bytes);
  }
  void copy_any(DeviceContext& ctx, void* dst, const void* src, size_t bytes) override {
    cuda::copy_any(ctx, dst, src, bytes);
  }
  void synchronize(DeviceContext& ctx) override { cuda::synchronize(ctx); }
  size_t device_free_memory(DeviceContext& ctx) override { return cuda::device_free_memory(ctx); }

  void* stream_of(DeviceContext& ctx) override { return cuda::stream_of(ctx); }
  void wait_for_stream(DeviceContext& ctx, void* stream) override {
    cuda::wait_for_stream(ctx, stream);
  }
  void signal_stream(DeviceContext& ctx, void* stream) override {
    cuda::signal_stream(ctx, stream);
  }
  std::unique_lock<std::mutex> lock_stream(DeviceContext& ctx) override {
    return cuda::lock_stream(ctx);
  }

  void* pinned_alloc(DeviceContext& ctx, size_t bytes) override {
    return cuda::pinned_alloc(ctx, bytes);
  }
  void pinned_free(DeviceContext& ctx, void* ptr) override { cuda::pinned_free(ctx, ptr); }

  void begin_capture(DeviceContext& ctx) override { cuda::begin_capture(ctx); }
  void* end_capture(DeviceContext& ctx) override { return cuda::end_capture(ctx); }
  void abort_capture(DeviceContext& ctx) noexcept override { cuda::abort_capture(ctx); }
  void launch_graph(DeviceContext& ctx, void* graph) override { cuda::launch_graph(ctx, graph); }
  void destroy_graph(void* graph) noexcept override { cuda::destroy_graph(graph); }

  void* event_create() override { return cuda::event_create(); }
  void event_destroy(void* event) noexcept override { cuda::event_destroy(event); }
  void event_record(void* event, DeviceContext& ctx) override { cuda::event_record(event, ctx); }
  float event_elapsed_ms(void* start, void* end) override {
    return cuda::event_elapsed_ms(start, end);
  }
  MachinePeak measure_peak(int device) override { return cuda::measure_gpu_peak(device); }
};

}  // namespace

std::unique_ptr<DeviceBackend> make_cuda_device_backend() {
  return std::make_unique<CudaBackend>();
}

}  // namespace minfer
