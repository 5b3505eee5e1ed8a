// com.minfer:SpaceToDepthNhwc, made by the stem-space-to-depth pass for CUDA sessions:
//
//   Y[n, by, bx, (sy * b + sx) * C + c] = X[n, c, by * b + sy, bx * b + sx]
//
// from an NCHW X [N, C, H, W] (H, W multiples of the block b) to an NHWC Y [N, H/b, W/b,
// channels], channels >= b * b * C, the channels past b * b * C holding `pad` (input 1, a
// scalar of Y's type; absent = 0). Attribute `half` = 1 reads a float32 X and writes float16
// (rounded to nearest even). Inputs 2 and 3, a float32 scale and an int8 zero point (scalars),
// quantize a float32 X to int8 as QuantizeLinear does (the int8 stem: one pass over the
// input instead of QuantizeLinear, Transpose and a copy). Otherwise Y has X's type. A stride-2 stem conv on X equals a
// stride-1 conv on Y with rearranged weights, whose 16-channel pixels the implicit GEMM loads
// as whole vectors.
#pragma once

#include "minfer/registry.h"

namespace minfer {

void register_space_to_depth_nhwc(OpRegistry& registry);

}  // namespace minfer
