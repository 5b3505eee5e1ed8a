// The registry of device backends (runtime/device_backend.h).
#include "runtime/device_backend.h"

#include <map>

#include "minfer/error.h"

namespace minfer {

namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<DeviceBackend>> backends;
};

// Built on first use, with the backends of this build: as OpRegistry::global() registers the
// built-in kernels, so that no static initializer (nor the linker dropping one) is involved.
Registry& registry() {
  static Registry* r = [] {
    auto* made = new Registry();  // never destroyed: plans may free device memory at exit
    if (auto cuda = make_cuda_device_backend()) made->backends["cuda"] = std::move(cuda);
    return made;
  }();
  return *r;
}

std::string registered_names(const Registry& r) {
  std::string names;
  for (const auto& [name, backend] : r.backends) names += (names.empty() ? "" : ", ") + name;
  return names.empty() ? "none" : names;
}

}  // namespace

void register_device_backend(const std::string& name, std::unique_ptr<DeviceBackend> backend) {
  check(!name.empty() && backend != nullptr, ErrorCode::InvalidArgument,
        "register_device_backend: needs a name and a backend");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  check(!r.backends.count(name), ErrorCode::InvalidArgument,
        "a device backend named '" + name + "' is already registered");
  r.backends[name] = std::move(backend);
}

DeviceBackend* find_device_backend(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.backends.find(name);
  return it == r.backends.end() ? nullptr : it->second.get();
}

DeviceBackend& device_backend(const std::string& name) {
  if (DeviceBackend* b = find_device_backend(name)) return *b;
  if (name == "cuda")  // the one a build may leave out: say how to get it
    throw Error(ErrorCode::Device,
                "this build of minfer has no CUDA backend (configure with -DMINFER_WITH_CUDA=ON "
                "on a machine with nvcc)");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  throw Error(ErrorCode::Device, "this build of minfer has no device backend named '" + name +
                                     "' (registered: " + registered_names(r) + ")");
}

DeviceBackend& device_backend(const Device& device) {
  switch (device.type) {
    case Device::Type::CUDA:
      return device_backend("cuda");
    case Device::Type::CPU:
      break;
  }
  throw Error(ErrorCode::Internal, "the CPU has no device backend: its memory is the host's");
}

bool device_available(const std::string& name) {
  DeviceBackend* b = find_device_backend(name);
  return b && b->device_count() > 0;
}

}  // namespace minfer
