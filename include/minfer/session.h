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
};

struct PlanStats {
  size_t arena_bytes = 0;  // one arena for all intermediate tensors, from liveness
  size_t naive_bytes = 0;  // the sum of all intermediate tensor sizes
  size_t node_count = 0;
  // CUDA: GPU memory of the plan, its weights and constants as packed for the GPU plus one
  // run's device arena (each concurrent run adds an arena); CUDA's own libraries not counted.
  size_t device_bytes = 0;
  // A CUDA session replays the plan's GPU work as one CUDA graph (false: step by step, because
  // of SessionOptions::cuda_graphs, a CPU step, a kernel that cannot be captured, or a failed
  // capture).
  bool cuda_graph = false;
  // Steps per kernel, by the kernel's name and chosen variant ("cpu-int8-gemm [avx512vnni]").
  std::map<std::string, size_t> kernels;
};

using NamedTensors = std::map<std::string, Tensor>;

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
  // through the host. Safe to call from several threads at once.
  NamedTensors run(const NamedTensors& inputs) const;
  // Convenience for single-input models.
  Tensor run_one(const Tensor& input) const;

  const Graph& graph() const;  // the optimized graph
  const std::vector<std::string>& input_names() const;
  const std::vector<std::string>& output_names() const;
  // Plan statistics for the given input shapes (planned on demand if not yet). A model whose
  // shapes depend on the values of integer inputs (a Reshape target given as an input) gives
  // Error(Unsupported) here: plan it from the inputs themselves with the overload below.
  PlanStats plan_stats(const std::map<std::string, Shape>& input_shapes) const;
  PlanStats plan_stats(const NamedTensors& inputs) const;
  const SessionOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace minfer
