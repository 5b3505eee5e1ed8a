// The built-in passes; each returns true if it changed the graph. Listed, in order and by
// level, in graph/passes/pipeline.cpp.
#pragma once

#include "graph/pass.h"

namespace minfer::passes {

bool infer_shapes(Graph& g, PassLog& log);
bool fold_constants(Graph& g, PassLog& log);        // nodes whose inputs are all constants
bool eliminate_dead_code(Graph& g, PassLog& log);   // nodes no output depends on
bool eliminate_identities(Graph& g, PassLog& log);  // Identity, no-op Reshape/Transpose/...
bool eliminate_dropout(Graph& g, PassLog& log);     // Dropout in inference mode, mask unused
bool transposes_to_reshapes(Graph& g, PassLog& log);  // Transposes of dims of size 1 only
// Conv kernel rows/columns that read only padding (dilated convs on small planes)
bool trim_conv_taps(Graph& g, PassLog& log);
bool fold_batchnorm(Graph& g, PassLog& log);        // Conv/Gemm + BatchNormalization
// A BatchNormalization (not after a conv) + Relu -> a 1x1 depthwise Conv, which the Relu fuses
bool batchnorm_to_depthwise(Graph& g, PassLog& log);
bool fuse_conv_bias(Graph& g, PassLog& log);        // Conv + Add(per-channel constant)
bool fuse_conv_residual(Graph& g, PassLog& log);    // Conv + Add(shortcut) [+ Relu]
bool fuse_conv_activation(Graph& g, PassLog& log);  // Conv + Relu/Clip
bool fuse_pad_into_pool(Graph& g, PassLog& log);    // Pad(zeros) + AveragePool -> its pads
// 1x1 Conv + AveragePool (unpadded) -> the pool, then the conv (DenseNet's transitions)
bool pool_before_pointwise_conv(Graph& g, PassLog& log);
// Conv + Sigmoid/HardSigmoid/HardSwish/Gelu, x * Sigmoid(x) (SiLU), x * HardSigmoid(x) (HardSwish)
bool fuse_conv_smooth_activation(Graph& g, PassLog& log);
// QConv/QGemm with a float output + the same smooth activations (int8 EfficientNet's SiLU),
// and the int8 QuantizeLinear after them if that is their only user
bool fuse_int8_smooth_activation(Graph& g, PassLog& log);
// Mul(x, per-channel gate) + int8 QuantizeLinear -> com.minfer:GatedQuantize (SE blocks)
bool fuse_gated_quantize(Graph& g, PassLog& log);
// int8 QuantizeLinear + QGlobalAveragePool -> the pool on the floats (SE blocks)
bool fuse_quantize_global_pool(Graph& g, PassLog& log);
bool fuse_layer_norm(Graph& g, PassLog& log);      // decomposed LayerNorm -> one node
bool fuse_gelu(Graph& g, PassLog& log);            // x * 0.5 * (1 + Erf(x / sqrt 2)) -> Gelu
bool fuse_gemm(Graph& g, PassLog& log);             // MatMul + Add -> Gemm; Gemm + Relu/Clip
bool fuse_matmul_bias(Graph& g, PassLog& log);  // rank-3+ MatMul + Add(bias) [+ Gelu]
// Small-plane pointwise/depthwise convs to NHWC (CPU fp32)
bool to_channels_last(Graph& g, PassLog& log);
bool lower_to_fp16(Graph& g, PassLog& log);         // convs and pools to fp16 NHWC (precision fp16)
bool space_to_depth_stems(Graph& g, PassLog& log);  // stride-2 RGB stems as stride 1 (CUDA)
bool pad_stem_channels(Graph& g, PassLog& log);     // NHWC int8/fp16 stems to 4 channels (CUDA)

}  // namespace minfer::passes
