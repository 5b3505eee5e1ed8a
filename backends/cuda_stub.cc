// Built when MINFER_WITH_CUDA is OFF: no CUDA kernels and no CUDA device backend, so that
// asking for a CUDA device says that this build has none (runtime/device_backend.cpp).
#include "minfer/registry.h"
#include "runtime/device_backend.h"

namespace minfer {

void register_cuda_kernels(OpRegistry&) {}

std::unique_ptr<DeviceBackend> make_cuda_device_backend() { return nullptr; }

}  // namespace minfer
