// The fp16 ops made by the fp16 lowering pass (graph/passes/fp16_lowering.cpp), com.minfer
// domain. Activations are float16 in NHWC (channels last) between them; weights and biases
// stay float32 constants in the graph and are converted once when a kernel is planned.
//
//   ToHalfNhwc(X f32 NCHW)            -> f16 NHWC
//   FromHalfNhwc(X f16 NHWC)          -> f32 NCHW
//   HConv(X, W, [B], [Z])             -> f16 NHWC: act(Conv(X, W, B) + Z), FusedConv's attributes
//   HMaxPool(X f16 NHWC)              -> f16 NHWC, MaxPool's attributes
//   HGlobalAveragePool(X f16 NHWC)    -> f32 [N, C, 1, 1] (the same bytes as NHWC [N, 1, 1, C])
//
// The reference kernels compute in float32 from the fp16 values and round the output to fp16
// once, which is what the CUDA kernels do with fp32 accumulation.
#pragma once

#include "minfer/registry.h"

namespace minfer {

// Registers the ops above; needs FusedConv, MaxPool and GlobalAveragePool registered.
void register_fp16_ops(OpRegistry& registry);

namespace fp16 {
// Float32 NCHW <-> float16 NHWC, rounding to nearest even (rank 3 to 5).
Tensor to_half_nhwc(const Tensor& x);
Tensor from_half_nhwc(const Tensor& x);
}  // namespace fp16

}  // namespace minfer
