// Internal to the CUDA backend: the per-family registration functions that
// register_cuda_kernels calls, and helpers their kernels share.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/cuda_context.h"
#include "backends/cuda/launch.h"
#include "minfer/registry.h"
#include "ops/conv_geometry.h"

namespace minfer::cuda {

void register_conv_kernels(OpRegistry& registry);       // Conv, FusedConv
void register_gemm_kernels(OpRegistry& registry);       // Gemm, FusedGemm
void register_fp32_kernels(OpRegistry& registry);       // MaxPool, GlobalAveragePool, Relu, Add
void register_layout_kernels(OpRegistry& registry);     // Flatten..Identity, Transpose, Slice, Pad
void register_int8_conv_kernels(OpRegistry& registry);  // QConv, QGemm
void register_int8_kernels(OpRegistry& registry);       // Q/DQ, QAdd, QMaxPool, QGlobalAveragePool
void register_half_kernels(OpRegistry& registry);       // the fp16 ops: HConv, HMaxPool, ...
void register_space_to_depth_kernel(OpRegistry& registry);  // SpaceToDepthNhwc

// The most elements a CUDA kernel takes in one tensor: its device code indexes with int.
inline constexpr int64_t kMaxElements = (int64_t{1} << 31) - 1;

// Input i is present, of dtype t, of static shape and small enough for int indexing.
bool is_static(const PrepareContext& ctx, size_t i, DType t);
// Every present output has a static shape small enough for int indexing.
bool outputs_fit(const PrepareContext& ctx);

// The session's CUDA context (fails naming the node when there is none).
DeviceContext& device_context(const PrepareContext& ctx);
// A device copy of `bytes` host bytes; returns once the copy is done, so the host data may go.
DeviceBuffer upload(DeviceContext& ctx, const void* data, size_t bytes);
template <typename T>
DeviceBuffer upload(DeviceContext& ctx, const std::vector<T>& v) {
  return upload(ctx, v.data(), v.size() * sizeof(T));
}

// The node's fused activation as a clamp; fails naming the node for the smooth activations
// (Sigmoid, Silu, ...), which only the CPU kernels fuse (their pass runs for CPU sessions).
Clamp fused_clamp(const PrepareContext& ctx);

// The window of a 1-D or 2-D conv or pool as the CUDA kernels take it (1-D: height 1).
Window2d window_2d(const WindowGeometry& g);

// A CUDA KernelDef.
KernelDef kernel_def(const std::string& domain, const std::string& op, std::vector<DType> dtypes,
                     const std::string& name, std::function<bool(const PrepareContext&)> supports,
                     std::function<std::unique_ptr<Kernel>()> create);

// Rounds n up to a multiple of m.
inline int64_t round_up(int64_t n, int64_t m) { return (n + m - 1) / m * m; }

}  // namespace minfer::cuda
