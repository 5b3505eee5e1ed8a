// Paper costs of a plan step for the profiler: FLOPs, bytes moved, and what a fused node fused.
#pragma once

#include <string>

#include "minfer/registry.h"
#include "runtime/plan.h"

namespace minfer::profiler {

// Arithmetic of one run of the step: 2 per multiply-accumulate (Conv, Gemm, MatMul), about
// one per element for element-wise ops and pooling windows; 0 for pure data movement.
double step_flops(const Plan& plan, const Step& st);
// Bytes of every input (weights included) and output, each counted once.
double step_bytes(const Plan& plan, const Step& st);
// "Conv + Add + Relu" for a FusedConv with a residual and an activation; "" for plain ops.
std::string fused_description(const Node& n);

}  // namespace minfer::profiler
