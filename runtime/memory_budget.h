// How much memory a session may use, and the OutOfMemory error that names what would pass it.
#pragma once

#include <cstddef>
#include <string>

#include "minfer/tensor.h"

namespace minfer {

size_t physical_memory_bytes();          // the machine's RAM (or its cgroup's limit, if lower)
std::string memory_size(size_t bytes);   // "1.50 GiB"
// Parses "64MB", "1.5GiB", "2G", "123" (bytes) as the command line's --memory-limit takes
// it (decimal and binary units both 1024-based, K/M/G/T); throws Error(InvalidArgument).
size_t parse_memory_size(const std::string& text);

// The memory one plan needs on one device, in parts, with the tensor that needs most.
struct MemoryNeeds {
  Device device;
  size_t weights = 0;    // the session's constants and packed weights on the device
  size_t arena = 0;      // intermediate tensors and workspace of one run
  size_t io = 0;         // inputs and outputs of one run (host)
  size_t largest_tensor = 0;
  std::string largest_name, largest_node;
  size_t total() const { return weights + arena + io; }
};

// Throws Error(OutOfMemory) when `needs` pass `limit`; `limit_source` says where it came from.
void check_memory_needs(const MemoryNeeds& needs, size_t limit, const std::string& limit_source,
                        const std::string& what);

}  // namespace minfer
