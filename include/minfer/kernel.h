// Kernel: an implementation of one op on one device. prepare() once per plan, run() per call.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "minfer/op_schema.h"

namespace minfer {

struct DeviceContext;  // per-session device state (CUDA stream, handles); null on the CPU

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
