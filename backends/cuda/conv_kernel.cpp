// fp32 Conv and com.minfer:FusedConv on CUDA (NCHW, 1-D and 2-D):
//
//   Y = act(Conv(X, W, B) + Z)
//
// Per group, a cuBLAS SGEMM of the weights W_g [M/group, K] (the ONNX layout, used as is) by
// the im2col matrix [K, OH*OW] of each image, batched over the images of a chunk; a 1x1,
// stride-1, unpadded conv multiplies the input itself. One epilogue kernel then adds the bias
// and the residual and applies the activation. The weights are read from the device copy the
// planner makes of constant inputs.
#include <algorithm>

#include "backends/cuda/kernels.h"
#include "ops/conv_geometry.h"

namespace minfer::cuda {

namespace {

constexpr int64_t kColFloats = int64_t{16} << 20;  // im2col workspace per chunk: 64 MiB

class ConvCuda final : public Kernel {
 public:
  static bool supports(const PrepareContext& ctx) {
    if (ctx.inputs.size() < 2 || ctx.inputs.size() > 4 || !is_static(ctx, 0, DType::f32) ||
        !is_static(ctx, 1, DType::f32) || !outputs_fit(ctx))
      return false;
    const size_t rank = ctx.inputs[0].shape.rank();
    if (rank != 3 && rank != 4) return false;
    if (ctx.inputs.size() > 2 && ctx.inputs[2].present && !is_static(ctx, 2, DType::f32))
      return false;
    if (ctx.inputs.size() > 3 && ctx.inputs[3].present &&
        (!is_static(ctx, 3, DType::f32) || ctx.inputs[3].shape != ctx.outputs[0].shape))
      return false;
    return true;
  }

  void prepare(PrepareContext& ctx) override {
    device_context(ctx).cublas();  // now, not inside a CUDA graph capture
    ConvGeometry g = conv_geometry(ctx.node, ctx.inputs[0].shape, ctx.inputs[1].shape);
    if (!g.is_static()) ctx.fail("the CUDA Conv kernel needs static shapes");
    win_ = window_2d(g);
    images_ = int(g.batch);
    channels_ = int(g.in_channels);
    out_channels_ = int(g.out_channels);
    group_ = int(g.group);
    mg_ = int(g.out_channels_per_group());
    k_ = int(g.in_channels_per_group()) * win_.kh * win_.kw;
    plane_ = win_.oh * win_.ow;

    bool unpadded = true;
    for (size_t i = 0; i < g.rank(); ++i)
      unpadded = unpadded && g.pads_begin[i] == 0 && g.pads_end[i] == 0;
    direct_ = win_.kh == 1 && win_.kw == 1 && win_.sh == 1 && win_.sw == 1 && unpadded;
    act_ = fused_clamp(ctx);
    has_bias_ = ctx.inputs.size() > 2 && ctx.inputs[2].present;
    has_residual_ = ctx.inputs.size() > 3 && ctx.inputs[3].present;

    // Images per chunk: as many as keep the im2col matrix within kColFloats (at least one).
    const int64_t per_image = int64_t(k_) * group_ * plane_;
    if (per_image > kMaxElements) ctx.fail("the im2col matrix of one image is too large");
    chunk_ = direct_ ? std::max(images_, 1)
                     : int(std::clamp<int64_t>(kColFloats / std::max<int64_t>(per_image, 1), 1,
                                               std::max(images_, 1)));
    ctx.workspace_bytes = direct_ ? 0 : size_t(chunk_) * size_t(per_image) * sizeof(float);
  }

  void run(RunContext& ctx) const override {
    DeviceContext& dc = *ctx.device_context;
    DeviceGuard guard(dc.device);
    const float* x = static_cast<const float*>(ctx.inputs[0]->raw());
    const float* w = static_cast<const float*>(ctx.inputs[1]->raw());
    const float* bias = has_bias_ ? static_cast<const float*>(ctx.inputs[2]->raw()) : nullptr;
    const float* z = has_residual_ ? static_cast<const float*>(ctx.inputs[3]->raw()) : nullptr;
    float* y = static_cast<float*>(ctx.outputs[0]->raw());
    float* col = static_cast<float*>(ctx.workspace);
    cublasHandle_t handle = dc.cublas();
    const float one = 1.f, zero = 0.f;
    const int rows = k_ * group_;  // rows of the im2col matrix (or input channels, when direct)
    for (int n0 = 0; n0 < images_; n0 += chunk_) {
      const int count = std::min(chunk_, images_ - n0);
      const float* src = x + int64_t(n0) * channels_ * win_.h * win_.w;
      if (!direct_) {
        im2col_f32(src, count, channels_, win_, col, dc.stream);
        src = col;
      }
      // Column-major view: Y_g^T [P, mg] = col_g^T [P, K] * W_g^T [K, mg], per image.
      for (int g = 0; g < group_; ++g)
        MINFER_CUBLAS_CHECK(cublasSgemmStridedBatched(
            handle, CUBLAS_OP_N, CUBLAS_OP_N, plane_, mg_, k_, &one, src + int64_t(g) * k_ * plane_,
            plane_, int64_t(rows) * plane_, w + int64_t(g) * mg_ * k_, k_, 0, &zero,
            y + (int64_t(n0) * out_channels_ + int64_t(g) * mg_) * plane_, plane_,
            int64_t(out_channels_) * plane_, count));
    }
    conv_epilogue_f32(y, images_ * out_channels_, out_channels_, plane_, bias, z, act_, dc.stream);
  }

 private:
  Window2d win_;
  int images_ = 0, channels_ = 0, out_channels_ = 0, group_ = 1, mg_ = 0, k_ = 0, plane_ = 0;
  int chunk_ = 1;
  bool direct_ = false, has_bias_ = false, has_residual_ = false;
  Clamp act_;
};

}  // namespace

void register_conv_kernels(OpRegistry& registry) {
  for (const char* domain : {"", kMinferDomain}) {
    const std::string op = *domain ? "FusedConv" : "Conv";
    registry.register_kernel(kernel_def(domain, op, {DType::f32}, "cuda-cublas-im2col",
                                        ConvCuda::supports,
                                        [] { return std::make_unique<ConvCuda>(); }));
  }
}

}  // namespace minfer::cuda
