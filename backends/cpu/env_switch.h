// The CPU kernels' switches in the environment (MINFER_CPU_WINOGRAD=0 and the like): for A/B
// benchmarks and tests, and as fallbacks. They are read when a plan is prepared.
#pragma once

#include <cstdlib>
#include <cstring>

namespace minfer::cpu {

// `fallback` where the variable `name` is unset or empty, else whether it is anything but "0".
inline bool env_switch(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strcmp(v, "0") != 0 : fallback;
}

}  // namespace minfer::cpu
