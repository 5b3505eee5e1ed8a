// Plan-time choice of the implicit GEMM's plan (tile and K split) for one convolution: each
// candidate is timed on scratch buffers of the conv's size and the fastest is kept, once per
// conv shape and device for the process (TensorRT calls these tactics). The heuristic
// (igemm_plan) misses by a few percent per layer, and by more where a wave of blocks is
// left half empty. Every candidate computes the same values (int8: exact integer sums in any
// order; fp16: the candidates share one K split, and within a split each output's sum runs in
// the same K order whatever the tile), so the choice changes speed only.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/launch.h"

namespace minfer::cuda {

// Bytes of each buffer one launch reads or writes (0: none).
struct IgemmScratchSizes {
  size_t x = 0, y = 0, z = 0, workspace = 0;
};
struct IgemmScratch {
  void *x = nullptr, *y = nullptr, *z = nullptr, *workspace = nullptr;
};
// Enqueues one run of the conv with `plan` on `stream` (shared memory already allowed).
using IgemmLaunch =
    std::function<void(const IgemmPlan& plan, const IgemmScratch& buffers, cudaStream_t stream)>;
// Lets `plan`'s kernels use their shared memory (igemm_prepare or hconv_prepare).
using IgemmAllow = std::function<void(const IgemmPlan& plan)>;

// The fastest of `candidates` (the first is the fallback: returned untimed when tuning is off,
// when the scratch buffers would take more than a quarter of the free device memory, or when
// anything fails). `key` names the conv's shape and kind; results are cached under it.
// MINFER_CUDA_TUNE=0 turns timing off (the fallback is used).
IgemmPlan tuned_igemm_plan(DeviceContext& dc, const std::string& key,
                           const std::vector<IgemmPlan>& candidates,
                           const IgemmScratchSizes& sizes, const IgemmAllow& allow,
                           const IgemmLaunch& launch);

// The plan named by MINFER_IGEMM_PLAN ("128x64", or "32x64/8" for K split over 8 blocks), for
// tests and experiments; nullopt when unset. Throws Error(InvalidArgument) for a bad value.
std::optional<IgemmPlan> forced_igemm_plan();

// "128x64", or "32x64/4" with K split over 4 blocks (MINFER_IGEMM_PLAN's format).
std::string igemm_plan_name(const IgemmPlan& plan);

// A cache key part for a conv: its sizes and window.
std::string igemm_key(const IgemmConv& cv);

}  // namespace minfer::cuda
