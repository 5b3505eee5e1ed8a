// The fused ops made by graph/passes (com.minfer domain).
#pragma once

#include "minfer/registry.h"

namespace minfer {

// Registers com.minfer:FusedConv and com.minfer:FusedGemm; needs Conv and Gemm registered.
void register_fused_ops(OpRegistry& registry);

}  // namespace minfer
