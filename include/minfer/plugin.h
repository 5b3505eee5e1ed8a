// Plugins: ops (schemas, reference and optimized kernels) in a shared library that a program,
// or `minfer run --plugin libmyops.so MODEL`, loads at run time.
//
// A plugin registers its ops with the same public calls a program uses (see
// examples/custom_op), and exports one entry point, defined with MINFER_PLUGIN:
//
//   #include "minfer/plugin.h"
//   void register_my_ops(minfer::OpRegistry& registry) { registry.register_op(...); ... }
//   MINFER_PLUGIN(register_my_ops)
//
// Build it against the same minfer headers as the program, without linking minfer itself: its
// minfer symbols resolve to the program's copy when it is loaded (a program that links the
// static library must export its symbols: CMake's ENABLE_EXPORTS, or -rdynamic). A plugin stays
// loaded until the process ends, since the registry holds its functions.
#pragma once

#include <string>

#include "minfer/registry.h"

// Bumped whenever a change to the public headers breaks plugins built against older ones.
#define MINFER_PLUGIN_ABI_VERSION 1
// The name of the entry point (extern "C", so that it is not mangled).
#define MINFER_PLUGIN_ENTRY_POINT "minfer_plugin_register"

namespace minfer {

// The entry point's type. The loader passes its registry and its ABI version; the plugin
// registers its ops and returns 0, or, when the versions differ, returns the version it was
// built for without touching the registry.
using PluginEntryPoint = int (*)(OpRegistry* registry, int abi_version);

// Loads the plugin at `path` and lets it register its ops with `registry`. Throws
// Error(InvalidArgument) naming the path when the file cannot be loaded (with the loader's
// reason), has no entry point, was built for another ABI version, or fails to register (for
// example an op that is already registered); ops registered before such a failure stay.
void load_plugin(const std::string& path, OpRegistry& registry = OpRegistry::global());

}  // namespace minfer

// Defines the entry point of a plugin whose ops `register_fn(minfer::OpRegistry&)` registers.
#define MINFER_PLUGIN(register_fn)                                                  \
  extern "C" __attribute__((visibility("default"))) int minfer_plugin_register(     \
      ::minfer::OpRegistry* registry, int abi_version) {                            \
    if (abi_version != MINFER_PLUGIN_ABI_VERSION) return MINFER_PLUGIN_ABI_VERSION; \
    register_fn(*registry);                                                         \
    return 0;                                                                       \
  }
