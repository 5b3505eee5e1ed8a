#include "runtime/device_allocation_tally.h"

namespace minfer {

namespace {
thread_local DeviceAllocationTally* innermost = nullptr;
}

DeviceAllocationTally::DeviceAllocationTally() : outer_(innermost) { innermost = this; }

DeviceAllocationTally::~DeviceAllocationTally() { innermost = outer_; }

void count_device_allocation(size_t bytes) {
  for (DeviceAllocationTally* t = innermost; t; t = t->outer_) t->bytes_ += bytes;
}

}  // namespace minfer
