// The channels-last ops (com.minfer) that the channels-last pass (graph/passes/
// channels_last.cpp) makes for CPU float32 sessions:
//
//   NhwcConv(X, W, [B], [Z]) = act(Conv(X, W, B) + Z)   with X, Z and Y channels last
//   NhwcGlobalAveragePool(X) = GlobalAveragePool of an NHWC X [N, H, W, C]: Y [N, C, 1, 1]
//                              (the same bytes as NHWC [N, 1, 1, C])
//
// NhwcConv's X [N, H, W, C] and Z, Y [N, OH, OW, M] are NHWC; W [M, C / group, KH, KW] and
// B [M] are FusedConv's, and so are the attributes (activation included), plus `nchw_input`
// (default 0): 1 reads an NCHW X, for a depthwise conv where NHWC activations begin (its
// kernel transposes its input anyway). The reference kernels are FusedConv's and
// GlobalAveragePool's on the NCHW transposes.
#pragma once

#include "minfer/registry.h"
#include "ops/conv_geometry.h"

namespace minfer {

// The two convolutions that the CPU kernel of NhwcConv runs, and so the only ones the pass
// converts: a pointwise conv (1x1, stride 1, unpadded, one group) is a GEMM on the NHWC rows;
// a depthwise 3x3 or 5x5 at stride 1 or 2, dilation d on both dims (K / 2 * d padding before,
// at most that after) reads 8 or 16 channels of a pixel as one vector.
enum class NhwcConvKind { None, Pointwise, Depthwise };
NhwcConvKind nhwc_conv_kind(const ConvGeometry& g);

// Registers the ops above; needs FusedConv and GlobalAveragePool registered.
void register_nhwc_ops(OpRegistry& registry);

}  // namespace minfer
