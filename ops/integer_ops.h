// Internal to the integer-arithmetic ops (ConvInteger, MatMulInteger, DynamicQuantizeLinear):
// their registration functions and the small helpers they share.
#pragma once

#include <cstdint>
#include <vector>

#include "minfer/registry.h"
#include "ops/op_util.h"

namespace minfer {

void register_conv_integer_ops(OpRegistry& registry);      // ConvInteger
void register_matmul_integer_ops(OpRegistry& registry);    // MatMulInteger
void register_dynamic_quantize_ops(OpRegistry& registry);  // DynamicQuantizeLinear

// The 8-bit input types of ConvInteger and MatMulInteger.
inline const std::vector<DType>& int8_types() {
  static const std::vector<DType> types{DType::u8, DType::i8};
  return types;
}

// The elements of an i8 or u8 tensor minus `zero_points` (one per `inner`-element block,
// cycling: element i subtracts zero_points[(i / inner) % size]), widened to int32 so the
// kernels multiply without further conversions.
inline std::vector<int32_t> widen_minus(const Node& node, const Tensor& t,
                                        const std::vector<int32_t>& zero_points, int64_t inner) {
  std::vector<int32_t> out(static_cast<size_t>(t.numel()));
  const int64_t n = t.numel(), count = static_cast<int64_t>(zero_points.size());
  dispatch_types<int8_t, uint8_t>(node, t.dtype(), [&](auto zero) {
    const auto* p = t.data<decltype(zero)>();
    for (int64_t i = 0; i < n; ++i) out[i] = int32_t(p[i]) - zero_points[(i / inner) % count];
  });
  return out;
}

// The values of an optional i8/u8 zero-point tensor as int32 (`fallback` zeros when absent).
inline std::vector<int32_t> read_zero_points(const Node& node, const Tensor& z, size_t fallback) {
  if (!z.defined()) return std::vector<int32_t>(fallback, 0);
  return widen_minus(node, z, {0}, 1);
}

}  // namespace minfer
