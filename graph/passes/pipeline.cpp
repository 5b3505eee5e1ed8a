// The default pass pipeline, as a plain list. Levels follow ONNX Runtime's: 1 basic cleanups,
// 2 fusions and the int8 folding (which must come before constant folding). Level 3 is
// accepted and today runs the same passes as 2.
#include "backends/cpu/conv_nhwc.h"
#include "graph/passes/passes.h"
#include "graph/passes/quantize.h"

namespace minfer {

namespace passes {
bool infer_shapes(Graph& g, PassLog&) {
  g.infer_shapes();
  return false;
}
}  // namespace passes

const PassManager& default_pipeline() {
  static const PassManager pm({
      {"int8-qdq-folding", 2, passes::fold_qdq, {}},  // before constant folding eats weight DQs
      {"constant-folding", 1, passes::fold_constants, {}},
      {"dropout-elimination", 1, passes::eliminate_dropout, {}},
      {"identity-elimination", 1, passes::eliminate_identities, {}},
      {"dead-code-elimination", 1, passes::eliminate_dead_code, {}},
      {"shape-inference", 1, passes::infer_shapes, {}},
      {"transpose-to-reshape", 1, passes::transposes_to_reshapes, {}},
      {"conv-tap-trimming", 2, passes::trim_conv_taps, {}},
      {"batchnorm-folding", 2, passes::fold_batchnorm, {}},
      // The CPU's depthwise loop runs it in one pass with the Relu; CUDA keeps BatchNorm.
      {"batchnorm-to-depthwise", 2, passes::batchnorm_to_depthwise,
       [](const SessionOptions& o) { return o.device.is_cpu(); }},
      {"conv-bias-fusion", 2, passes::fuse_conv_bias, {}},
      {"conv-residual-fusion", 2, passes::fuse_conv_residual, {}},
      {"conv-activation-fusion", 2, passes::fuse_conv_activation, {}},
      {"pad-pool-fusion", 2, passes::fuse_pad_into_pool, {}},
      // After pad-pool-fusion: DenseNet's transition pools come with a Pad of zeros.
      {"pool-before-pointwise-conv", 2, passes::pool_before_pointwise_conv, {}},
      // Before the smooth activations' fusions, which take its Gelu.
      {"gelu-fusion", 2, passes::fuse_gelu, {}},
      // Only the CPU kernels apply these in their epilogue (the CUDA ones clamp).
      {"conv-smooth-activation-fusion", 2, passes::fuse_conv_smooth_activation,
       [](const SessionOptions& o) { return o.device.is_cpu(); }},
      {"int8-smooth-activation-fusion", 2, passes::fuse_int8_smooth_activation,
       [](const SessionOptions& o) { return o.device.is_cpu(); }},
      // com.minfer:GatedQuantize has a CPU kernel only.
      {"gated-quantize-fusion", 2, passes::fuse_gated_quantize,
       [](const SessionOptions& o) { return o.device.is_cpu(); }},
      // QGlobalAveragePool on floats has a CPU kernel only.
      {"quantize-pool-fusion", 2, passes::fuse_quantize_global_pool,
       [](const SessionOptions& o) { return o.device.is_cpu(); }},
      {"layernorm-fusion", 2, passes::fuse_layer_norm, {}},
      {"gemm-fusion", 2, passes::fuse_gemm, {}},
      // com.minfer:FusedMatMul has a CPU kernel only.
      {"matmul-bias-fusion", 2, passes::fuse_matmul_bias,
       [](const SessionOptions& o) { return o.device.is_cpu(); }},
      // After the fusions, so that whole FusedConvs go to NHWC; where it pays (conv_nhwc.h).
      {"channels-last", 2, passes::to_channels_last,
       [](const SessionOptions& o) {
         return o.device.is_cpu() && o.precision == Precision::fp32 && cpu::channels_last_pays();
       }},
      // After the fusions, so that whole FusedConvs (bias, residual, activation) go to fp16.
      {"fp16-lowering", 0, passes::lower_to_fp16,
       [](const SessionOptions& o) { return o.precision == Precision::fp16; }},
      {"stem-space-to-depth", 2, passes::space_to_depth_stems,
       [](const SessionOptions& o) { return !o.device.is_cpu(); }},
      {"stem-channel-padding", 2, passes::pad_stem_channels,
       [](const SessionOptions& o) { return !o.device.is_cpu(); }},
      {"dead-code-elimination-final", 2, passes::eliminate_dead_code, {}},
  });
  return pm;
}

std::vector<PassReport> optimize(Graph& g, const SessionOptions& options) {
#ifdef NDEBUG
  const bool verify_each = false;
#else
  const bool verify_each = true;
#endif
  return default_pipeline().run(g, options, verify_each);
}

}  // namespace minfer
