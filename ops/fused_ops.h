// The fused ops made by graph/passes (com.minfer domain).
#pragma once

#include "minfer/registry.h"

namespace minfer {

// Registers com.minfer:FusedConv and com.minfer:FusedGemm; needs Conv and Gemm registered.
void register_fused_ops(OpRegistry& registry);

// Applies node n's fused activation (attribute `activation` and its parameters; none when
// absent) to the float tensor y in place, in double: the reference of every fused op.
void apply_fused_activation(const Node& n, Tensor& y);

}  // namespace minfer
