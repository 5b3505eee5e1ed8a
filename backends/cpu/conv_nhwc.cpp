#include "backends/cpu/conv_nhwc.h"

#include <algorithm>

#include "backends/cpu/env_switch.h"
#include "backends/cpu/isa.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"

namespace minfer::cpu {

namespace {

bool nchw_input(const Node& n) { return n.attrs.get_int("nchw_input", 0) != 0; }

// X's shape as NCHW, for the shared conv geometry.
Shape input_nchw(const PrepareContext& ctx) {
  const Shape& s = ctx.inputs[0].shape;
  return nchw_input(ctx.node) ? s : Shape{s[0], s[3], s[1], s[2]};
}

ConvGeometry geometry(const PrepareContext& ctx) {
  return conv_geometry(ctx.node, input_nchw(ctx), ctx.inputs[1].shape);
}

// The NCHW-input kernel (the transposing channels kernel) for this geometry.
DepthwiseChannelsKernel from_nchw_kernel(const ConvGeometry& g) {
  return depthwise_channels_kernel(g.kernel_h(), g.stride_h(), g.in_h(), g.in_w(), g.out_h(),
                                   g.out_w());
}

// The plane kernel, where it beats that one on this geometry; null otherwise.
DepthwisePlaneFn from_nchw_planes(const ConvGeometry& g) {
  if (depthwise_channels_pays(g.kernel_h(), g.out_h(), g.out_w())) return nullptr;
  return depthwise_plane_kernel(g.kernel_h(), g.kernel_w(), g.stride_h(), g.stride_w(),
                                g.dilation_h(), g.dilation_w(), g.pad_top(), g.pad_left(),
                                g.in_h(), g.in_w(), g.out_h(), g.out_w());
}

}  // namespace

bool channels_last_pays() {
  if (!has_any_isa()) return false;
  return env_switch("MINFER_CPU_CHANNELS_LAST", true);
}

bool NhwcConvKernel::supports(const PrepareContext& ctx) {
  if (!has_any_isa() || ctx.inputs.size() < 2 || ctx.inputs.size() > 4 ||
      !is_static_f32(ctx, 0) || !is_static_f32(ctx, 1) || !ctx.inputs[1].constant ||
      ctx.inputs[0].shape.rank() != 4 || ctx.inputs[1].shape.rank() != 4)
    return false;
  if (ctx.inputs.size() > 2 && ctx.inputs[2].present &&
      (!is_static_f32(ctx, 2) || !ctx.inputs[2].constant))
    return false;
  if (ctx.inputs.size() > 3 && ctx.inputs[3].present &&
      (!is_static_f32(ctx, 3) || ctx.outputs.empty() ||
       ctx.inputs[3].shape != ctx.outputs[0].shape))
    return false;
  const ConvGeometry g = geometry(ctx);
  const NhwcConvKind kind = nhwc_conv_kind(g);
  if (nchw_input(ctx.node))  // (the transposing kernels are undilated)
    return kind == NhwcConvKind::Depthwise && g.dilation_h() == 1 && from_nchw_kernel(g).fn;
  if (kind == NhwcConvKind::Depthwise)
    return depthwise_nhwc_kernel(g.kernel_h(), g.stride_h());
  return kind == NhwcConvKind::Pointwise;
}

void NhwcConvKernel::prepare(PrepareContext& ctx) {
  const ConvGeometry g = geometry(ctx);
  kind_ = nhwc_conv_kind(g);
  if (kind_ == NhwcConvKind::None) ctx.fail("not a pointwise or depthwise conv");
  n_ = g.batch, h_ = g.in_h(), w_ = g.in_w(), c_ = g.in_channels;
  m_ = g.out_channels, oh_ = g.out_h(), ow_ = g.out_w();
  act_ = parse_activation(ctx.node);
  weight_ = *ctx.inputs[1].constant;
  const bool has_bias = ctx.inputs.size() > 2 && ctx.inputs[2].present;
  bias_ = has_bias ? *ctx.inputs[2].constant : Tensor();
  if (kind_ == NhwcConvKind::Pointwise) {
    // W [M, C] is B^T of Y = X * B.
    packed_ = share_packed_rhs(ctx, "cpu.nhwc_conv.packed_rhs", weight_, c_, m_, true);
  } else {
    const DepthwiseChannelsKernel info = from_nchw_kernel(g);
    depthwise_isa_ = info.isa;
    lanes_ = info.lanes;
    dilation_ = g.dilation_h();
    if (nchw_input(ctx.node)) {
      if (dilation_ != 1) ctx.fail("an NCHW input is read only by undilated depthwise kernels");
      // The planes' outputs transposed to channels last: with no residual, which the plane
      // kernel would add before the transpose, laid out as NCHW.
      const bool residual = ctx.inputs.size() > 3 && ctx.inputs[3].present;
      planes_ = residual ? nullptr : from_nchw_planes(g);
      if (planes_) {
        const float* bias = bias_.defined() ? bias_.data<float>() : nullptr;
        planes_args_ = {nullptr, weight_.data<float>(), bias, &act_, nullptr, n_, m_,
                        g.kernel_h(), h_, w_, oh_, ow_};
        depthwise_isa_ = depthwise_plane_isa();
      }
      from_nchw_ = info.fn;
      const size_t scratch =
          planes_ ? depthwise_planes_nhwc_scratch(planes_args_) : info.scratch_floats;
      scratch_floats_ = (int64_t(scratch) + 15) / 16 * 16;
      threads_ = std::max(1, ctx.threads);
      ctx.workspace_bytes = size_t(threads_) * size_t(scratch_floats_) * sizeof(float);
    } else {
      depthwise_ = depthwise_nhwc_kernel(g.kernel_h(), g.stride_h());
    }
    if (!depthwise_ && !from_nchw_) ctx.fail("no depthwise kernel at this ISA level");
  }
}

void NhwcConvKernel::run(RunContext& ctx) const {
  const float* x = ctx.inputs[0]->data<float>();
  const bool has_residual = ctx.inputs.size() > 3 && ctx.inputs[3];
  const float* z = has_residual ? ctx.inputs[3]->data<float>() : nullptr;
  float* y = ctx.outputs[0]->data<float>();
  const int threads = std::max(1, ctx.threads);
  if (n_ * oh_ * ow_ * m_ == 0) return;  // an empty output
  if (planes_) {
    DepthwisePlanesNhwc a = planes_args_;
    a.x = x, a.y = y;
    return run_depthwise_planes_nhwc(planes_, a, std::min(threads, threads_),
                                     static_cast<float*>(ctx.workspace), scratch_floats_);
  }
  if (from_nchw_)
    return run_depthwise_nchw_input(x, z, y, static_cast<float*>(ctx.workspace), threads);
  if (kind_ == NhwcConvKind::Depthwise) return run_depthwise(x, z, y, threads);
  // The activation comes after the residual: in the GEMM's epilogue only without one.
  const float* bias = bias_.defined() ? bias_.data<float>() : nullptr;
  packed_->multiply(x, n_ * h_ * w_, c_, y, m_, threads, bias, z ? nullptr : &act_);
  if (z) add_residual(z, y, threads);
}

void NhwcConvKernel::add_residual(const float* z, float* y, int threads) const {
  const int64_t rows = n_ * oh_ * ow_, block = 64;
  parallel_for(threads_for(rows * m_, threads), (rows + block - 1) / block, [&](int64_t b) {
    const int64_t r0 = b * block, r1 = std::min(rows, r0 + block);
    float* p = y + r0 * m_;
    const float* q = z + r0 * m_;
    for (int64_t i = 0; i < (r1 - r0) * m_; ++i) p[i] += q[i];
    act_.apply(p, (r1 - r0) * m_);
  });
}

void NhwcConvKernel::run_depthwise(const float* x, const float* z, float* y, int threads) const {
  const int64_t block = 4 * lanes_, blocks = (c_ + block - 1) / block;
  DepthwiseNhwc a{};
  a.weights = weight_.data<float>();
  a.bias = bias_.defined() ? bias_.data<float>() : nullptr;
  a.c = c_, a.h = h_, a.w = w_, a.oh = oh_, a.ow = ow_;
  a.act = &act_;
  a.d = dilation_;
  // At batch 1, each thread its rows of every channel: the pixels that the pointwise convs
  // before and after, splitting their rows the same way (PackedRhs::multiply, where each part
  // has 96 rows or more), wrote or read on the same core (MobileNet v2's 28x28 planes at 2
  // threads 10-15 % faster, the model 2 %; Zen 5).
  const int64_t split =
      threads > 1 ? depthwise_row_parts(n_, h_ * w_ * c_ * int64_t(sizeof(float)), oh_, threads)
                  : 1;
  if (split > 1) {
    a.x = x, a.residual = z, a.y = y;
    a.c0 = 0, a.c1 = c_;
    return parallel_region(int(split), [&](int part, int parts) {
      DepthwiseNhwc u = a;
      u.r0 = depthwise_row_split(oh_, parts, part);
      u.r1 = depthwise_row_split(oh_, parts, part + 1);
      depthwise_(u);
    });
  }
  // Otherwise: one image's channels in blocks of 4 vectors, its rows split where the blocks
  // alone would leave threads idle.
  const int64_t row_parts =
      std::clamp<int64_t>((4 * threads + n_ * blocks - 1) / (n_ * blocks), 1, oh_);
  parallel_for(threads, n_ * blocks * row_parts, [&](int64_t unit) {
    const int64_t image = unit / (blocks * row_parts), b = unit / row_parts % blocks;
    const int64_t part = unit % row_parts;
    DepthwiseNhwc u = a;
    u.x = x + image * h_ * w_ * c_;
    u.residual = z ? z + image * oh_ * ow_ * c_ : nullptr;
    u.y = y + image * oh_ * ow_ * c_;
    u.c0 = b * block, u.c1 = std::min(c_, u.c0 + block);
    u.r0 = oh_ * part / row_parts, u.r1 = oh_ * (part + 1) / row_parts;
    depthwise_(u);
  });
}

void NhwcConvKernel::run_depthwise_nchw_input(const float* x, const float* z, float* y,
                                              float* workspace, int threads) const {
  DepthwiseChannels a;
  a.x = x;
  a.weights = weight_.data<float>();
  a.bias = bias_.defined() ? bias_.data<float>() : nullptr;
  a.residual = z;
  a.y = y;
  a.m0 = 0, a.m1 = m_, a.mg = 1;
  a.h = h_, a.w = w_, a.oh = oh_, a.ow = ow_;
  a.act = &act_;
  a.nhwc_out = true;
  a.m = m_;
  run_depthwise_channel_ranges(from_nchw_, a, n_, c_ * h_ * w_, m_ * oh_ * ow_, lanes_,
                               std::min(threads, threads_), workspace, scratch_floats_);
}

std::string NhwcConvKernel::variant() const {
  if (kind_ == NhwcConvKind::Pointwise) return std::string("pointwise ") + isa_name(packed_->isa());
  const char* kind = planes_       ? "depthwise-planes-to-nhwc "
                     : from_nchw_ ? "depthwise-from-nchw "
                                  : "depthwise ";
  return kind + std::string(isa_name(static_cast<Isa>(depthwise_isa_)));
}

}  // namespace minfer::cpu
