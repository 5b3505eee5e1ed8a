// An execution plan: the graph specialized to concrete input shapes, with a kernel per node,
// a device per node, and every intermediate tensor at a fixed offset in an arena.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "minfer/kernel.h"
#include "minfer/session.h"
#include "runtime/buffer_pool.h"
#include "runtime/memory_budget.h"
#include "runtime/output_buffers.h"
#include "runtime/shared_constants.h"

namespace minfer {

// Where a tensor of the plan lives.
struct Slot {
  enum class Kind { Input, Constant, Arena };
  Kind kind = Kind::Arena;
  DType dtype = DType::f32;
  Shape shape;
  Device device;
  const Tensor* constant = nullptr;  // Kind::Constant (on the CPU)
  const void* device_constant = nullptr;  // Kind::Constant uploaded to the GPU (shared)
  int input_index = -1;              // Kind::Input: index into the graph inputs
  size_t offset = 0;                 // Kind::Arena: offset in the arena of `device`
  std::string name;
};

struct Step {
  enum class Kind { Kernel, CopyToDevice, CopyToHost };
  Kind kind = Kind::Kernel;
  const Node* node = nullptr;          // Kind::Kernel
  std::unique_ptr<Kernel> kernel;      // Kind::Kernel
  std::string kernel_name;             // for logs and inspect
  bool graph_capturable = false;       // KernelDef::graph_capturable
  bool in_place = false;               // KernelDef::in_place, taken (observing plans only)
  bool aliases_input = false;          // KernelDef::aliases_input
  int overwrites_input = -1;           // PrepareContext::overwrites_input
  Device device;
  std::vector<int> inputs;             // slot ids, -1 for absent optional inputs
  std::vector<int> outputs;            // slot ids
  size_t workspace_offset = 0, workspace_bytes = 0;  // in the arena of `device`
};

struct ExecContext;
class DeviceBackend;

struct Plan {
  std::vector<Slot> slots;
  std::vector<Step> steps;
  std::vector<int> output_slots;  // one per graph output
  // Per graph output: the device slot that its host copy (output_slots) is made from, or -1
  // when the output is made on the host (Session::run_into copies device outputs from here).
  std::vector<int> output_sources;
  std::vector<std::unique_ptr<Tensor>> folded;  // plan-time constants (e.g. Shape outputs)
  size_t arena_bytes[2] = {0, 0};               // [cpu, cuda]
  PlanStats stats;
  DeviceContext* device_context = nullptr;
  DeviceBackend* backend = nullptr;  // the device_context's (runtime/device_backend.h)
  // Constants uploaded to the device, shared with the session's other plans.
  std::vector<std::shared_ptr<const void>> uploads;
  // The session's pool of host arenas (null: each execution context allocates its own).
  BufferPool* host_buffers = nullptr;
  MemoryNeeds host_needs, device_needs;  // what one run of the plan needs (checked at build)
  // Every step but the copies of graph inputs is a capturable CUDA kernel or a copy to the
  // host: each execution context captures them once as a CUDA graph and replays it.
  bool use_cuda_graph = false;
  std::atomic<bool> capture_failed{false};  // a capture failed: run step by step from now on
  // Per graph input: a CPU kernel reads it directly (so it must be given as a CPU tensor).
  std::vector<bool> input_read_on_cpu;
  // Graph outputs are observed as they are computed instead of copied out (calibration): they
  // then live only until their last reader. outputs_after_step[i]: the outputs step i makes.
  bool observe_outputs = false;
  std::vector<std::vector<int>> outputs_after_step;

  // Execution contexts (arena + tensor views), reused across runs; one per concurrent run.
  std::unique_ptr<ExecContext> acquire();
  void release(std::unique_ptr<ExecContext> ctx);
  // Frees the idle execution contexts (their device arenas, pinned host arenas and CUDA graphs).
  void trim();
  size_t idle_context_bytes() const;  // memory the idle contexts hold (not from host_buffers)
  ~Plan();

 private:
  mutable std::mutex pool_mutex_;
  std::vector<std::unique_ptr<ExecContext>> pool_;
  size_t contexts_ = 0;  // made and not trimmed: in the pool or running
};

// Whether a graph input may be baked into a plan as a constant: a small integer tensor, such
// as the target shape of a Reshape that is a graph input. Plans specialized on such values
// are cached by value as well as by shape.
bool is_shape_like_input(DType dtype, const Shape& shape);

// Thrown by build_plan when an output shape depends on the value of a shape-like input that
// it was not given; the caller retries with the values.
struct NeedsInputValues {};

// What a session lends the plans it builds: shared constants, the host arena pool and the
// memory budget. All may be left empty (a plan outside a session).
struct PlanEnvironment {
  SessionConstants* constants = nullptr;
  BufferPool* host_buffers = nullptr;
  size_t graph_constant_bytes = 0;  // the graph's own constants, already in host memory
  size_t host_limit = SIZE_MAX;
  size_t device_limit = 0;          // 0: the device's free memory when planning
  std::string limit_source = "the memory limit";
  bool observe_outputs = false;  // see Plan::observe_outputs
};

// Called with (graph output index, its value) by execute_plan on a plan that observes outputs.
using OutputObserver = std::function<void(size_t, const Tensor&)>;

// Builds the plan of `g` (already optimized) for the given input shapes. `input_values`
// (empty, or one entry per input, nullptr where unknown) are baked in as constants. Throws
// Error(OutOfMemory), before allocating the plan's memory, when a run of it would pass the
// environment's limits.
std::unique_ptr<Plan> build_plan(const Graph& g, const std::vector<Shape>& input_shapes,
                                 const std::vector<const Tensor*>& input_values,
                                 const SessionOptions& options, int threads,
                                 DeviceContext* device_context, const PlanEnvironment& env = {});

// Called around each step of an observed run (the profiler, minfer/profile.h). Such a run
// goes step by step, never through a CUDA graph, so that each step can be timed.
struct StepObserver {
  virtual ~StepObserver() = default;
  virtual void before_step(const Plan& plan, size_t step) = 0;
  virtual void after_step(const Plan& plan, size_t step) = 0;
};

// While one lives, the runs made on this thread (Session::run runs on its caller's thread)
// are observed by `observer`: the profiler's hook, which leaves the Session API alone.
class ObserveSteps {
 public:
  explicit ObserveSteps(StepObserver& observer);
  ~ObserveSteps();
  ObserveSteps(const ObserveSteps&) = delete;
  ObserveSteps& operator=(const ObserveSteps&) = delete;

 private:
  StepObserver* outer_;
};

// Where Session::run_into wants a run's outputs: caller memory (host or device), one tensor of
// the output's dtype and shape per graph output, and the caller's CUDA stream, if any.
struct RunTargets {
  std::vector<const Tensor*> outputs;
  void* cuda_stream = nullptr;
};

// Runs the plan with the given inputs (in graph-input order); returns outputs in order, in
// buffers of `outputs` where given (else new ones). A plan that observes its outputs hands them
// to `observe` instead (and returns none); with `targets`, the outputs go into the targets'
// memory (and none are returned).
std::vector<Tensor> execute_plan(Plan& plan, const std::vector<const Tensor*>& inputs, int threads,
                                 const OutputObserver& observe = nullptr,
                                 const RunTargets* targets = nullptr,
                                 OutputBuffers* outputs = nullptr);

}  // namespace minfer
