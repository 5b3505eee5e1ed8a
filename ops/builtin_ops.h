// Internal: the per-family registration functions that register_builtin_ops calls, and the
// wrapper that gives every built-in schema the same arity and validation checks.
#pragma once

#include "minfer/registry.h"

namespace minfer {

// Registers `schema` after wrapping it:
// * infer first checks the input/output counts against min/max and that the first
//   min_inputs inputs are present;
// * reference first runs that inference on the actual input tensors (so a reference kernel
//   sees only validated shapes and dtypes), pads absent trailing optional inputs with
//   undefined tensors up to max_inputs, and checks its results against the inferred outputs.
void add_builtin_op(OpRegistry& registry, OpSchema schema);

void register_conv_ops(OpRegistry& registry);         // Conv
void register_matmul_ops(OpRegistry& registry);       // Gemm, MatMul
void register_elementwise_ops(OpRegistry& registry);  // Relu, Sigmoid, Clip, Add, ..., Sum, Mean
void register_pool_ops(OpRegistry& registry);         // MaxPool, AveragePool, GlobalAveragePool
void register_norm_ops(OpRegistry& registry);         // BatchNormalization, Softmax
void register_shape_ops(OpRegistry& registry);  // Flatten, Reshape, Transpose, Identity, Shape,
                                                // Unsqueeze
void register_concat_gather_ops(OpRegistry& registry);  // Concat, Gather
void register_slice_pad_ops(OpRegistry& registry);      // Slice, Pad
void register_compare_where_ops(OpRegistry& registry);  // Less, Greater, Equal, Where
void register_reduce_ops(OpRegistry& registry);  // ReduceMax, ReduceMin, ReduceSum, ReduceMean
void register_cast_ops(OpRegistry& registry);     // Cast, CastLike
void register_integer_ops(OpRegistry& registry);  // {Conv,MatMul}Integer, DynamicQuantizeLinear
void register_generator_ops(OpRegistry& registry);  // ConstantOfShape, Range
void register_dropout_op(OpRegistry& registry);     // Dropout (inference)
void register_lrn_op(OpRegistry& registry);         // LRN
void register_math_ops(OpRegistry& registry);  // Sqrt, Tanh, Erf, HardSigmoid, HardSwish, Gelu, Pow
void register_squeeze_split_ops(OpRegistry& registry);  // Squeeze, Split
void register_expand_tile_ops(OpRegistry& registry);    // Expand, Tile
void register_layer_norm_op(OpRegistry& registry);      // LayerNormalization
void register_resize_op(OpRegistry& registry);          // Resize
void register_mod_not_ops(OpRegistry& registry);        // Mod, Not
void register_scatter_nd_op(OpRegistry& registry);      // ScatterND

}  // namespace minfer
