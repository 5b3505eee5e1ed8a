// cuda::DeviceAllocationTally (backends/cuda_api.h): plain host bookkeeping, built with or
// without the CUDA backend.
#include "backends/cuda_api.h"

namespace minfer::cuda {

namespace {
thread_local DeviceAllocationTally* innermost = nullptr;
}

DeviceAllocationTally::DeviceAllocationTally() : outer_(innermost) { innermost = this; }

DeviceAllocationTally::~DeviceAllocationTally() { innermost = outer_; }

void count_device_allocation(size_t bytes) {
  for (DeviceAllocationTally* t = innermost; t; t = t->outer_) t->bytes_ += bytes;
}

}  // namespace minfer::cuda
