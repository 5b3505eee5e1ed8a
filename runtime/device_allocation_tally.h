// Counts the device memory that backends hand out on the calling thread while a tally lives.
// Plain host bookkeeping, whatever backends the build has.
#pragma once

#include <cstddef>

namespace minfer {

// Tallies nest: an inner one's bytes count in the outer one too. The planner keeps one while
// it builds a plan, so that a plan knows what its weights and constants cost on the device.
class DeviceAllocationTally {
 public:
  DeviceAllocationTally();
  ~DeviceAllocationTally();
  DeviceAllocationTally(const DeviceAllocationTally&) = delete;
  DeviceAllocationTally& operator=(const DeviceAllocationTally&) = delete;
  size_t bytes() const { return bytes_; }

 private:
  friend void count_device_allocation(size_t bytes);
  DeviceAllocationTally* outer_;
  size_t bytes_ = 0;
};

// Called by a backend's device_alloc (DeviceBackend::device_alloc) for what it allocated.
void count_device_allocation(size_t bytes);

}  // namespace minfer
