// OpRegistry: op name -> OpSchema, and (op, device, dtype) -> kernel factory. Open to users.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "minfer/kernel.h"
#include "minfer/op_schema.h"

namespace minfer {

inline constexpr const char* kMinferDomain = "com.minfer";

struct KernelDef {
  std::string domain;
  std::string op_type;
  Device::Type device = Device::Type::CPU;
  std::vector<DType> dtypes;  // accepted dtypes of input 0; empty = any
  std::string name;           // shown by `minfer ops`, e.g. "eigen-im2col"
  // Optional finer check (attributes, shapes): false lets another kernel take the node.
  std::function<bool(const PrepareContext&)> supports;
  std::function<std::unique_ptr<Kernel>()> create;
  // A CUDA kernel whose run() only enqueues work on the context's stream (no waiting on the
  // GPU, no host data read at run time): the session may capture it into a CUDA graph and
  // replay it. Plans with a kernel that is not run every step eagerly.
  bool graph_capturable = false;
  // An element-wise kernel that reads each element of its inputs before writing that element
  // of its output: the output may take the buffer of an input of the same shape and dtype
  // that nothing reads afterwards (the planner does so where memory matters, in calibration).
  bool in_place = false;
  // A kernel whose output is input 0's bytes unchanged (Reshape, Flatten, Squeeze): the planner
  // gives the output input 0's buffer where nothing reads that input afterwards, and the kernel
  // then has nothing to copy (it must check for that: out.raw() == in.raw()).
  bool aliases_input = false;
};

class OpRegistry {
 public:
  // The process-wide registry, holding the built-in ops and kernels.
  static OpRegistry& global();

  // Throws InvalidArgument if an op of that domain and name is already registered.
  void register_op(OpSchema schema);
  void register_kernel(KernelDef def);

  const OpSchema* find_op(const std::string& domain, const std::string& name) const;
  // Throws Unsupported naming the op and domain, and suggesting --plugin.
  const OpSchema& get_op(const std::string& domain, const std::string& name) const;
  // The first registered kernel that accepts the node on the device, or null.
  const KernelDef* find_kernel(const PrepareContext& ctx, Device::Type device) const;
  std::vector<const OpSchema*> ops() const;
  std::vector<const KernelDef*> kernels(const std::string& domain, const std::string& name) const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<OpSchema>> ops_;
  std::vector<std::unique_ptr<KernelDef>> kernels_;
};

// Explicit registration functions (no static initializers: a static link would drop them).
void register_builtin_ops(OpRegistry& registry);   // ops/: schemas + reference kernels
void register_cpu_kernels(OpRegistry& registry);   // backends/cpu
void register_cuda_kernels(OpRegistry& registry);  // backends/cuda; no-op without CUDA

// A kernel that runs an op's reference function: the fallback where no fast kernel exists.
std::unique_ptr<Kernel> make_reference_kernel(const OpSchema& schema);

}  // namespace minfer
