// The fp32 Gemm kernel, shared by ONNX Gemm and fused variants:
//
//   Y = act(alpha * op(A) * op(B) + beta * C)
//
// Inputs: 0 A, 1 B (2-D; transA/transB), 2 C (optional, unidirectionally broadcast to Y).
// Attributes: alpha, beta, transA, transB, plus the fused `activation`, `activation_min` and
// `activation_max` (see epilogue.h). Y is pre-filled with beta * C and the GEMM accumulates
// onto it, so the bias costs no extra pass. A constant B with more than one row of A (a Linear
// layer over tokens) runs on PackedRhs instead (packed_rhs_gemm.h: B packed once at prepare),
// with alpha, C and the activation applied in one pass after it; variant() is then "packed
// <isa>" (the ISA level of its tiles).
#pragma once

#include <cstdint>
#include <memory>

#include "backends/cpu/epilogue.h"
#include "backends/cpu/packed_rhs_gemm.h"
#include "minfer/kernel.h"
#include "ops/matmul.h"

namespace minfer::cpu {

class GemmKernel final : public Kernel {
 public:
  static bool supports(const PrepareContext& ctx);

  void prepare(PrepareContext& ctx) override;
  void run(RunContext& ctx) const override;
  std::string variant() const override;

 private:
  GemmSizes g_;
  bool bias_row_ = false;  // C is one row added to every row of Y
  Activation act_;
  Tensor b_;                                 // constant B (shared); undefined = read per run
  std::shared_ptr<const PackedRhs> packed_;  // B packed, when constant
};

}  // namespace minfer::cpu
