// Internal: the per-family registration functions that register_cpu_kernels calls.
#pragma once

#include "minfer/registry.h"

namespace minfer::cpu {

void register_matmul_kernels(OpRegistry& registry);       // MatMul
void register_elementwise_kernels(OpRegistry& registry);  // Relu, Clip, Sigmoid, Add..Div
void register_pool_kernels(OpRegistry& registry);         // MaxPool, AveragePool, GlobalAveragePool
void register_norm_kernels(OpRegistry& registry);         // BatchNormalization, Softmax
void register_layout_kernels(OpRegistry& registry);       // Transpose, Concat, reshape-like copies
void register_gather_kernel(OpRegistry& registry);        // Gather
void register_where_kernel(OpRegistry& registry);         // Where
void register_resize_kernels(OpRegistry& registry);       // Resize
void register_transformer_kernels(OpRegistry& registry);  // LayerNormalization, Gelu, Erf

// Gelu (x * Phi(x), or with `tanh` its tanh approximation) over p[0, n) in place: the Gelu
// kernel's arithmetic, for epilogues (FusedMatMul).
void gelu_in_place(float* p, int64_t n, bool tanh);

// True when input i is present, f32 and of static shape.
inline bool is_static_f32(const PrepareContext& ctx, size_t i) {
  return i < ctx.inputs.size() && ctx.inputs[i].present && ctx.inputs[i].dtype == DType::f32 &&
         ctx.inputs[i].shape.is_static();
}

}  // namespace minfer::cpu
