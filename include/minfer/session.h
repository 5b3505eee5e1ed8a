// Session: load a model, optimize it, plan it once, run it many times.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "minfer/graph.h"
#include "minfer/tensor.h"

namespace minfer {

// int8 asks for a quantized graph (see minfer/calibrate.h: Calibrator, then quantize_graph):
// the Session checks that it is one and folds it into int8 kernels, and refuses an fp32 graph
// rather than silently running it in fp32. A quantized graph runs in int8 either way.
// fp16 (CUDA only) runs the convolutions and pools of an fp32 graph in float16, channels
// last, with float32 accumulation; weights are converted once when the plan is made.
enum class Precision { fp32, int8, fp16 };

struct SessionOptions {
  Device device = Device::cpu();
  Precision precision = Precision::fp32;
  int threads = 0;          // 0 = all hardware threads
  int optimization_level = 2;  // 0 none .. 3 all (see graph/passes/pipeline.cpp)
  std::vector<std::string> disabled_passes;
  bool verbose = false;     // per-pass log on stderr
  // On CUDA, each plan's GPU work is captured once as a CUDA graph and replayed (a plan with
  // a CPU step, or a kernel that cannot be captured, runs step by step instead).
  bool cuda_graphs = true;

  // Memory. A plan whose run would need more than memory_limit bytes on a device (the
  // session's weights and constants there, the plan's arena and workspace, and on the host its
  // inputs and outputs) is refused with Error(OutOfMemory) while planning, before its memory
  // is allocated. 0: the machine's physical memory on the host, the device's free memory on a
  // GPU.
  size_t memory_limit = 0;
  // Plans are cached per input shape; beyond these bounds the least recently used one is
  // dropped (plan_cache_bytes: the sum of the cached plans' arenas, host and device; 0 = no
  // bound). Packed weights are shared by all plans, so a dropped plan frees only its own part.
  size_t plan_cache_plans = 16;
  size_t plan_cache_bytes = 0;
};

// What a session holds now (Session::memory_stats).
struct MemoryStats {
  size_t plans = 0;                // cached plans
  size_t graph_constant_bytes = 0; // the optimized graph's constants (weights as loaded)
  size_t packed_bytes = 0;         // weights packed by kernels, shared by the plans (host)
  size_t device_packed_bytes = 0;  // the same, and the constants uploaded, on the GPU
  size_t buffer_bytes = 0;         // host working buffers (arenas), idle or in use
  size_t idle_bytes = 0;           // of which idle, and idle runs' device arenas
  // The buffers of run()'s latest outputs, one per output: a later run writes its outputs into
  // them again once the caller has dropped them (the caller's tensors stay as returned while
  // held); trim() lets them go.
  size_t output_bytes = 0;
};

struct PlanStats {
  size_t arena_bytes = 0;  // one arena for all intermediate tensors, from liveness
  size_t naive_bytes = 0;  // the sum of all intermediate tensor sizes
  size_t node_count = 0;
  // CUDA: GPU memory of the plan: the session's weights and constants as packed for the GPU
  // (shared by all its plans) plus one run's device arena (each concurrent run adds an
  // arena); CUDA's own libraries not counted.
  size_t device_bytes = 0;
  // A CUDA session replays the plan's GPU work as one CUDA graph (false: step by step, because
  // of SessionOptions::cuda_graphs, a CPU step, a kernel that cannot be captured, or a failed
  // capture).
  bool cuda_graph = false;
  // Steps per kernel, by the kernel's name and chosen variant ("cpu-int8-gemm [avx512vnni]").
  std::map<std::string, size_t> kernels;
};

using NamedTensors = std::map<std::string, Tensor>;

struct RunOptions {
  // CUDA: the caller's cudaStream_t. The run starts after the work already queued on that
  // stream, and work queued on it afterwards starts after the run. When the run's outputs are
  // all computed on the GPU and the plan replays as a CUDA graph (PlanStats::cuda_graph), the
  // call returns as soon as the run is queued: synchronize the stream before reading the
  // outputs, and keep the inputs and outputs valid until then. Otherwise it returns when the
  // run is done. Null (the default): the call returns when the run is done.
  void* cuda_stream = nullptr;
};

class Session {
 public:
  Session(Graph graph, SessionOptions options = {});
  static Session from_file(const std::string& onnx_path, SessionOptions options = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  // Runs the model. Inputs by name; every graph input must be given (batch may vary when
  // the model's batch dimension is symbolic). Returns every graph output by name, on the CPU.
  // On a CUDA session an input may also be a view of memory on the session's GPU
  // (Tensor::view(ptr, dtype, shape, Device::cuda(i))): it is then copied on the device, never
  // through the host. Safe to call from several threads at once. The outputs' buffers are the
  // session's to reuse once every tensor sharing them is dropped (a view of one, made with
  // raw(), must not outlive them): a loop of runs pays no new allocation for them.
  NamedTensors run(const NamedTensors& inputs) const;
  // Convenience for single-input models.
  Tensor run_one(const Tensor& input) const;
  // Runs the model into the caller's memory: `outputs` holds one tensor per graph output, by
  // name, of the output's dtype and shape: a CPU tensor (copies of a Tensor share its buffer)
  // or a view (Tensor::view) of host memory or of memory on the session's GPU. Device outputs are
  // copied on the device, never through the host; with device inputs too, a pipeline on the GPU
  // pays no host copy at all. See RunOptions for running on the caller's CUDA stream.
  void run_into(const NamedTensors& inputs, const NamedTensors& outputs,
                const RunOptions& run_options = {}) const;

  const Graph& graph() const;  // the optimized graph
  const std::vector<std::string>& input_names() const;
  const std::vector<std::string>& output_names() const;
  // Plan statistics for the given input shapes (planned on demand if not yet). A model whose
  // shapes depend on the values of integer inputs (a Reshape target given as an input) gives
  // Error(Unsupported) here: plan it from the inputs themselves with the overload below.
  PlanStats plan_stats(const std::map<std::string, Shape>& input_shapes) const;
  PlanStats plan_stats(const NamedTensors& inputs) const;
  const SessionOptions& options() const;

  // Gives memory back: drops the cached plans that are not running (the weights they packed
  // go with the last plan using them; the next run plans and packs again) and frees the idle
  // working buffers and the output buffers kept for reuse. Safe to call while other threads
  // run.
  void trim() const;
  MemoryStats memory_stats() const;

 private:
  friend struct SessionAccess;  // runtime-internal uses (calibration's streaming runs)
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace minfer
