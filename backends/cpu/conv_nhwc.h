// The CPU kernel of com.minfer:NhwcConv (ops/nhwc_ops.h): convolutions on channels-last
// activations, which the channels-last pass gives the small planes of MobileNet- and
// EfficientNet-style blocks (graph/passes/channels_last.cpp).
//
//   pointwise: Y [N*H*W, M] = X [N*H*W, C] * W^T, a PackedRhs GEMM with X read in place (the
//              output channels in the lanes: a 7x7 plane wastes none of them), bias and
//              activation in its epilogue, a residual added after it;
//   depthwise: depthwise_channels.h's channels-last kernel, 8 or 16 channels of a pixel per
//              vector, with no transposes (the NCHW kernel transposes in and out), dilated
//              or not; with `nchw_input` (undilated only), that NCHW kernel with its output
//              left channels last, or where the plane kernel is faster (AVX-512's 3x3 on
//              outputs of 14x14 and more, depthwise_channels_pays) and there is no residual,
//              depthwise.h's planes transposed into channels last 16 channels at a time.
//
// Constant weights only (the pass converts no other). Callers check has_any_isa().
#pragma once

#include <memory>

#include "backends/cpu/depthwise.h"
#include "backends/cpu/depthwise_channels.h"
#include "backends/cpu/epilogue.h"
#include "backends/cpu/packed_rhs_gemm.h"
#include "minfer/kernel.h"
#include "ops/nhwc_ops.h"

namespace minfer::cpu {

// Whether the channels-last pass pays: at every ISA level with kernels. (AVX2 had kept NCHW,
// where it had measured even or slower on a Zen 4; with today's kernels it is 4-8 % faster at
// MINFER_ISA=avx2 on a Zen 5 and 5-11 % on a Xeon: MobileNet v2, EfficientNet-B0.)
// MINFER_CPU_CHANNELS_LAST=0 turns it off, =1 on.
bool channels_last_pays();

class NhwcConvKernel final : public Kernel {
 public:
  static bool supports(const PrepareContext& ctx);

  void prepare(PrepareContext& ctx) override;
  void run(RunContext& ctx) const override;
  std::string variant() const override;  // "pointwise <isa>" or "depthwise <isa>"

 private:
  void run_depthwise(const float* x, const float* z, float* y, int threads) const;
  void run_depthwise_nchw_input(const float* x, const float* z, float* y, float* workspace,
                                int threads) const;
  void add_residual(const float* z, float* y, int threads) const;

  NhwcConvKind kind_ = NhwcConvKind::None;
  int64_t n_ = 0, h_ = 0, w_ = 0, c_ = 0, m_ = 0, oh_ = 0, ow_ = 0;
  Activation act_;
  Tensor weight_, bias_;  // constants (shared, not copied)
  std::shared_ptr<const PackedRhs> packed_;  // pointwise: W^T packed once
  DepthwiseNhwcFn depthwise_ = nullptr;
  DepthwiseChannelsFn from_nchw_ = nullptr;  // with nchw_input
  DepthwisePlaneFn planes_ = nullptr;         // with nchw_input, where it pays
  DepthwisePlanesNhwc planes_args_{};         // its arguments but x and y
  int64_t scratch_floats_ = 0;                // its scratch per part
  int threads_ = 1;                           // the workspace holds this many parts
  int depthwise_isa_ = -1, lanes_ = 8;
  int64_t dilation_ = 1;
};

}  // namespace minfer::cpu
