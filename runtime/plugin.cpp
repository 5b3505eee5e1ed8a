#include "minfer/plugin.h"

#include <dlfcn.h>

#include <exception>
#include <filesystem>

namespace minfer {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw Error(ErrorCode::InvalidArgument, "plugin '" + path + "': " + why);
}

std::string dl_error() {
  const char* e = dlerror();
  return e ? e : "unknown error";
}

}  // namespace

void load_plugin(const std::string& path, OpRegistry& registry) {
  if (!std::filesystem::exists(path)) fail(path, "no such file");
  // RTLD_NOW: a missing symbol is reported here, not as a crash in the middle of a run.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) fail(path, "cannot load it: " + dl_error());

  dlerror();
  auto entry = reinterpret_cast<PluginEntryPoint>(dlsym(handle, MINFER_PLUGIN_ENTRY_POINT));
  if (!entry) {
    std::string why = dl_error();
    dlclose(handle);
    fail(path, std::string("it does not export the entry point '") + MINFER_PLUGIN_ENTRY_POINT +
                   "' (define it with MINFER_PLUGIN from minfer/plugin.h): " + why);
  }

  // From here on the plugin's code may be referenced by the registry: never dlclose it.
  int status = 0;
  try {
    status = entry(&registry, MINFER_PLUGIN_ABI_VERSION);
  } catch (const Error& e) {
    throw Error(e.code(), "plugin '" + path + "': " + e.what());
  } catch (const std::exception& e) {
    fail(path, std::string("registration failed: ") + e.what());
  }
  if (status != 0) {
    dlclose(handle);  // by the protocol, a plugin that refuses the version registered nothing
    fail(path, "it was built for minfer plugin ABI version " + std::to_string(status) +
                   ", but this minfer has version " + std::to_string(MINFER_PLUGIN_ABI_VERSION) +
                   "; rebuild it against this minfer's headers");
  }
}

}  // namespace minfer
