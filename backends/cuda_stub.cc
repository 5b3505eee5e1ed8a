// Built when MINFER_WITH_CUDA is OFF: the CUDA backend is absent, and asking for it says so.
#include "backends/cuda_api.h"
#include "minfer/registry.h"
#include "runtime/device_backend.h"

namespace minfer {

void register_cuda_kernels(OpRegistry&) {}

std::unique_ptr<DeviceBackend> make_cuda_device_backend() { return nullptr; }

namespace cuda {
bool available() { return false; }
int device_count() { return 0; }
std::shared_ptr<DeviceContext> create_context(int) {
  throw Error(ErrorCode::Device,
              "this build of minfer has no CUDA backend (configure with -DMINFER_WITH_CUDA=ON "
              "on a machine with nvcc)");
}

[[noreturn]] static void no_cuda() {
  throw Error(ErrorCode::Device, "this build of minfer has no CUDA backend");
}
void* device_alloc(DeviceContext&, size_t) { no_cuda(); }
void device_free(DeviceContext&, void*) {}
void copy_to_device(DeviceContext&, void*, const void*, size_t) { no_cuda(); }
void copy_to_host(DeviceContext&, void*, const void*, size_t) { no_cuda(); }
void copy_on_device(DeviceContext&, void*, const void*, size_t) { no_cuda(); }
void synchronize(DeviceContext&) {}
void copy_any(DeviceContext&, void*, const void*, size_t) { no_cuda(); }
void wait_for_stream(DeviceContext&, void*) { no_cuda(); }
void* stream_of(DeviceContext&) { no_cuda(); }
void signal_stream(DeviceContext&, void*) { no_cuda(); }
size_t device_free_memory(DeviceContext&) { no_cuda(); }
void* pinned_alloc(DeviceContext&, size_t) { no_cuda(); }
void pinned_free(DeviceContext&, void*) {}
std::unique_lock<std::mutex> lock_stream(DeviceContext&) { return {}; }
void begin_capture(DeviceContext&) { no_cuda(); }
void* end_capture(DeviceContext&) { no_cuda(); }
void abort_capture(DeviceContext&) noexcept {}
void launch_graph(DeviceContext&, void*) { no_cuda(); }
void destroy_graph(void*) noexcept {}
}  // namespace cuda

}  // namespace minfer
