// Per-layer profiling: where one run's time goes, step by step, and how far each step is from
// what the machine can do (its roofline).
//
//   Session s(build_model("resnet50"));
//   RunProfile p = profile_session(s, inputs);            // step by step, timed
//   MachinePeak peak = measure_peak(s.options().device, threads);  // once per process
#pragma once

#include <string>
#include <vector>

#include "minfer/session.h"

namespace minfer {

// One step of a plan: a node's kernel, or a copy between host and device.
struct StepProfile {
  std::string node;    // node name (for copies: the tensor copied)
  std::string op;      // op type ("FusedConv"), or "CopyToDevice" / "CopyToHost"
  std::string fused;   // what a fused node stands for ("Conv + Add + Relu"), else empty
  std::string kernel;  // the kernel the planner chose
  std::string device;  // "cpu", "cuda:0"
  std::vector<Shape> input_shapes, output_shapes;  // absent optional inputs left out
  double flops = 0;    // arithmetic of one run: 2 per multiply-accumulate, 1 per element op
  double bytes = 0;    // bytes read and written once: inputs (weights included) and outputs
  double ms = 0;       // median time over the runs: CPU clock, or CUDA events for GPU steps
  double mean_ms = 0;  // mean time: includes the runs in which the OS stalled this step
};

struct RunProfile {
  std::vector<StepProfile> steps;  // in execution order
  int runs = 0;                    // timed runs
  double run_ms = 0;               // median wall time of one profiled run
  double run_mean_ms = 0;          // mean wall time of one profiled run
  double steps_ms() const;         // the sum of the step medians
  double steps_mean_ms() const;    // the sum of the step means
};

// Runs `session` on `inputs` `warmup` + `runs` times with a timer around each plan step and
// returns each step's median (robust to the odd run that the OS preempts). These runs go step by
// step: a CUDA session does not replay its CUDA graph while profiled (a graph cannot be timed
// inside).
RunProfile profile_session(const Session& session, const NamedTensors& inputs, int runs = 10,
                           int warmup = 2);

// The machine's roofline: peak arithmetic (GFLOP/s) and memory bandwidth (GB/s), measured by
// a small built-in micro-benchmark the first time it is asked for (per device and thread
// count) and kept for the process. `method` says how each was measured.
struct MachinePeak {
  double gflops = 0;
  double gbps = 0;
  std::string method;
};
MachinePeak measure_peak(const Device& device, int threads);

// Attainable GFLOP/s at `flops`/`bytes` under `peak`: min(peak compute, intensity x bandwidth).
double roofline_gflops(const MachinePeak& peak, double flops, double bytes);

}  // namespace minfer
