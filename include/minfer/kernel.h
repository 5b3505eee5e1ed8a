// Kernel: an implementation of one op on one device. prepare() once per plan, run() per call.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

#include "minfer/op_schema.h"

namespace minfer {

struct DeviceContext;  // per-session device state (CUDA stream, handles); null on the CPU

// What kernels derive from constant inputs (packed weights, uploaded tables), kept once per
// session and device and shared by the plans of every input shape. An entry lives while a
// plan holds it. The session implements it; see PrepareContext::share.
class SharedConstants {
 public:
  virtual ~SharedConstants() = default;
  // The entry of (node, device, key), or the one `make` returns, stored and counted as
  // `bytes`. Throws Error(OutOfMemory) before calling `make` when the session's memory limit
  // would be passed.
  virtual std::shared_ptr<const void> find_or_make(
      const Node& node, const Device& device, const std::string& key, size_t bytes,
      const std::function<std::shared_ptr<const void>()>& make) = 0;
};

// Everything known when a kernel is prepared: concrete shapes and dtypes, and the values of
// constant inputs (weights) so that the kernel can pack them.
struct PrepareContext {
  PrepareContext(const Node& n, std::vector<TensorInfo> in, std::vector<TensorInfo> out)
      : node(n), inputs(std::move(in)), outputs(std::move(out)) {}
  const Node& node;
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;
  int threads = 1;
  Device device;
  DeviceContext* device_context = nullptr;
  size_t workspace_bytes = 0;  // the kernel sets this: scratch memory it needs per run
  // The kernel may add indices of constant inputs that it copied into its own form at
  // prepare and never reads at run time; the planner then does not upload them to the device
  // (run() still gets the host tensor there).
  std::vector<int> packed_inputs;
  // The kernel may name an input that it reads only where it writes its output, each element
  // before writing the output's element at the same place (a conv's fused residual): the
  // planner then gives the output that input's buffer where nothing reads it afterwards (one
  // stream less through the caches, one activation less in the arena).
  int overwrites_input = -1;
  SharedConstants* shared = nullptr;  // null outside a session: share() then just makes

  // Packed weights shared with every plan of the session: `make` (returning shared_ptr<T>)
  // runs only when no plan made them yet under this `key`, which must name everything the
  // packing depends on besides the node's constant inputs. `bytes` is their size, checked
  // against the memory limit before packing.
  template <typename T, typename Make>
  std::shared_ptr<const T> share(const std::string& key, size_t bytes, Make make) {
    if (!shared) return make();
    return std::static_pointer_cast<const T>(shared->find_or_make(
        node, device, key + "#" + typeid(T).name(), bytes,
        [&]() -> std::shared_ptr<const void> { return make(); }));
  }

  [[noreturn]] void fail(const std::string& message) const;  // InvalidModel naming the node
};

// The buffers of one run. Outputs are allocated (from the arena) before run() is called.
struct RunContext {
  std::vector<const Tensor*> inputs;  // null for absent optional inputs
  std::vector<Tensor*> outputs;
  void* workspace = nullptr;
  int threads = 1;
  DeviceContext* device_context = nullptr;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Validates what the kernel needs, packs weights, sets ctx.workspace_bytes.
  virtual void prepare(PrepareContext& ctx) { (void)ctx; }
  // Must be safe to call from several threads at once (all mutable state is in ctx).
  virtual void run(RunContext& ctx) const = 0;
  // Which variant prepare() chose, shown after the kernel's name by --verbose, inspect and
  // bench (e.g. the CPU ISA level "avx512vnni"); empty when there is only one.
  virtual std::string variant() const { return {}; }
};

}  // namespace minfer
