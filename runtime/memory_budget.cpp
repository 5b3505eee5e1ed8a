#include "runtime/memory_budget.h"

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "minfer/error.h"

namespace minfer {

size_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  size_t bytes = pages > 0 && page > 0 ? size_t(pages) * size_t(page) : SIZE_MAX;
  // A container's cgroup (v2) limit is what the kernel enforces before the machine's RAM.
  std::ifstream cgroup("/sys/fs/cgroup/memory.max");
  unsigned long long limit = 0;
  if (cgroup >> limit && limit > 0 && limit < bytes) bytes = size_t(limit);
  return bytes;
}

std::string memory_size(size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 6) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return buf;
}

size_t parse_memory_size(const std::string& text) {
  auto fail = [&]() -> size_t {
    throw Error(ErrorCode::InvalidArgument,
                "memory size '" + text + "': expected a number with an optional unit K, M, G "
                "or T (KB/KiB, MB/MiB, ... are the same, 1024-based), e.g. 512MB");
  };
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  if (i == 0) return fail();
  double value = 0;
  try {
    size_t used = 0;
    value = std::stod(text.substr(0, i), &used);
    if (used != i) return fail();
  } catch (const std::exception&) {
    return fail();
  }
  std::string unit;
  for (char c : text.substr(i))
    if (c != ' ') unit += char(std::toupper(static_cast<unsigned char>(c)));
  double scale = 1;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "K" || unit == "KB" || unit == "KIB") scale = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MIB") scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GIB") scale = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TB" || unit == "TIB") scale = 1024.0 * 1024 * 1024 * 1024;
  else return fail();
  const double bytes = value * scale;
  if (!(bytes >= 1) || bytes >= 9.2e18) return fail();
  return size_t(std::llround(bytes));
}

void check_memory_needs(const MemoryNeeds& n, size_t limit, const std::string& limit_source,
                        const std::string& what) {
  if (n.total() <= limit) return;
  std::string msg = "out of memory: " + what + " needs " + memory_size(n.total()) + " on " +
                    n.device.to_string() +
                    " (weights and constants " + memory_size(n.weights) + ", arena " +
                    memory_size(n.arena);
  if (n.io) msg += ", inputs and outputs " + memory_size(n.io);
  msg += "), more than " + limit_source + " of " + memory_size(limit);
  if (n.largest_tensor)
    msg += "; its largest tensor is '" + n.largest_name + "' (" + memory_size(n.largest_tensor) +
           ", " + n.largest_node + ")";
  throw Error(ErrorCode::OutOfMemory, msg);
}

}  // namespace minfer
