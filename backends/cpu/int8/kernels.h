// Internal: registration of the int8 CPU kernels besides QConv/QGemm.
#pragma once

#include "minfer/registry.h"

namespace minfer::cpu {

// QuantizeLinear, DequantizeLinear, QAdd (AVX2).
void register_int8_elementwise_kernels(OpRegistry& registry);
// QMaxPool, QAveragePool, QGlobalAveragePool in NHWC.
void register_int8_pool_kernels(OpRegistry& registry);

}  // namespace minfer::cpu
