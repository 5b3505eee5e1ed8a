#include "backends/cpu/conv.h"

#include <Eigen/Core>
#include <algorithm>
#include <string>
#include <type_traits>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "backends/cpu/conv_gemm.h"
#include "backends/cpu/env_switch.h"
#include "backends/cpu/isa.h"
#include "backends/cpu/packed_gemm.h"
#include "backends/cpu/padded_rows.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/sgemm.h"
#include "ops/conv_geometry.h"

namespace minfer::cpu {

namespace {

constexpr int64_t kTileAlign = 24;  // rows of Eigen's fp32 AVX micro-kernel
constexpr int64_t kSmallPlaneAvx2MinDepth = 512;  // see ConvKernel::prepare

// Output columns [lo, hi) of a row whose input column ow * stride + offset lies in [0, width).
struct Span {
  int64_t lo, hi;
};
Span valid_span(int64_t offset, int64_t stride, int64_t width, int64_t out_begin, int64_t out_end) {
  int64_t lo, hi;
  if (stride == 1) {  // the common case, without divisions
    lo = std::max<int64_t>(0, -offset);
    hi = width - offset;
  } else {
    lo = offset >= 0 ? 0 : ceil_div(-offset, stride);
    hi = floor_div(width - 1 - offset, stride) + 1;
  }
  lo = std::clamp(lo, out_begin, out_end);
  return {lo, std::clamp(hi, lo, out_end)};
}

// dst[i] = src[2 * i] for i < n: a stride-2 conv's im2col row. (GCC leaves the plain loop
// scalar; 8 outputs from two loads and two shuffles made the stem's im2col ~3x faster.) Only
// src[0, 2n - 1) is read: past it may lie the end of the input.
void copy_even(const float* src, int64_t n, float* dst) {
  int64_t i = 0;
#if defined(__AVX2__)
  // dst[at, at + 8) = the lanes of s[0, 16) that `pick` takes (0x88: the even ones; 0xdd: the
  // odd ones), by one shuffle and one permute.
  auto eight = [&](const float* s, int64_t at, auto pick) {
    const __m256 a = _mm256_loadu_ps(s), b = _mm256_loadu_ps(s + 8);
    const __m256 v = _mm256_shuffle_ps(a, b, decltype(pick)::value);  // a0 a2 b0 b2 | a4 a6 ..
    _mm256_storeu_ps(dst + at,
                     _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(v), 0xd8)));
  };
  using Even = std::integral_constant<int, 0x88>;
  using Odd = std::integral_constant<int, 0xdd>;
  for (; i + 8 < n; i += 8) eight(src + 2 * i, i, Even{});  // the last read: 2i + 15 < 2n - 1
  // The last 8 (overlapping the ones before) as the odd lanes of src[2n - 17, 2n - 1), not
  // one by one: a 14x14 output's rows were 6 of 14 scalar (ResNet's stride-2 3x3 convs).
  if (i < n && n > 8) {
    eight(src + 2 * n - 17, n - 8, Odd{});
    return;
  }
#endif
  for (; i < n; ++i) dst[i] = src[2 * i];
}

// False when the environment sets MINFER_CPU_CONV_IMPLICIT=0 (A/B benchmarks, tests): stride-2
// convs of small depth then go through im2col too.
bool implicit_enabled() { return env_switch("MINFER_CPU_CONV_IMPLICIT", true); }

bool is_static_f32(const TensorInfo& t) {
  return t.present && t.dtype == DType::f32 && t.shape.is_static();
}

}  // namespace

bool ConvKernel::supports(const PrepareContext& ctx) {
  if (ctx.inputs.size() < 2 || !is_static_f32(ctx.inputs[0]) || !is_static_f32(ctx.inputs[1]))
    return false;
  size_t rank = ctx.inputs[0].shape.rank();
  if (rank != 3 && rank != 4) return false;
  if (ctx.inputs.size() > 2 && ctx.inputs[2].present && ctx.inputs[2].dtype != DType::f32)
    return false;
  if (ctx.inputs.size() > 3 && ctx.inputs[3].present) {
    if (!is_static_f32(ctx.inputs[3]) || ctx.outputs.empty() ||
        ctx.inputs[3].shape != ctx.outputs[0].shape)
      return false;
  }
  return ctx.inputs.size() <= 4;
}

void ConvKernel::prepare(PrepareContext& ctx) {
  const Shape& xs = ctx.inputs[0].shape;
  const Shape& ws = ctx.inputs[1].shape;
  ConvGeometry g = conv_geometry(ctx.node, xs, ws);
  if (!g.is_static()) ctx.fail("the CPU Conv kernel needs static shapes");
  const bool two_d = g.rank() == 2;
  Dims& d = d_;
  d.n = g.batch;
  d.c = g.in_channels;
  d.h = two_d ? g.in_h() : 1;
  d.w = g.input.back();
  d.m = g.out_channels;
  d.oh = two_d ? g.out_h() : 1;
  d.ow = g.output.back();
  d.group = g.group;
  d.cg = g.in_channels_per_group();
  d.mg = g.out_channels_per_group();
  d.kh = two_d ? g.kernel_h() : 1;
  d.kw = g.kernel.back();
  d.sh = two_d ? g.stride_h() : 1;
  d.sw = g.strides.back();
  d.dh = two_d ? g.dilation_h() : 1;
  d.dw = g.dilations.back();
  d.pad_t = two_d ? g.pad_top() : 0;
  d.pad_l = g.pads_begin.back();

  bool unpadded = true;
  for (size_t i = 0; i < g.rank(); ++i)
    unpadded = unpadded && g.pads_begin[i] == 0 && g.pads_end[i] == 0;
  if (d.cg == 1 && d.group > 1)
    method_ = Method::Depthwise;
  else if (d.kh == 1 && d.kw == 1 && d.sh == 1 && d.sw == 1 && unpadded)
    method_ = Method::Gemm1x1;
  else
    method_ = Method::Im2col;

  act_ = parse_activation(ctx.node);
  has_bias_ = ctx.inputs.size() > 2 && ctx.inputs[2].present;
  has_residual_ = ctx.inputs.size() > 3 && ctx.inputs[3].present;
  // Every path but the depthwise ones reads each residual element just before writing the
  // output there (ConvGemm's tiles, Winograd's output transform, fill_output, SmallPlaneConv's
  // transpose): the output may take the residual's buffer.
  if (has_residual_ && method_ != Method::Depthwise) ctx.overwrites_input = 3;
  // The ONNX weight layout [M, C/group, kH, kW] is the row-major GEMM operand W_g[M/group, K];
  // the tensor is kept (shared, not copied) for the depthwise loop.
  weight_ = ctx.inputs[1].constant ? *ctx.inputs[1].constant : Tensor();
  bias_ = has_bias_ && ctx.inputs[2].constant ? *ctx.inputs[2].constant : Tensor();
  threads_ = std::max(1, ctx.threads);
  // An empty output (a zero-sized dimension): nothing to pack, nothing to compute.
  empty_ = d.n * d.m * d.p() == 0;
  if (empty_) {
    packed_ = std::make_shared<const std::vector<PackedWeights>>();
    return;
  }

  // One output position per image (an SE block's FC layers): rows are images, the output
  // channels the lanes. (EfficientNet-B0's 32: 0.62 -> 0.29 ms at 1 thread of a Zen 4.)
  if (method_ == Method::Gemm1x1 && d.p() == 1 && d.group == 1 && !has_residual_ &&
      weight_.defined() && has_any_isa()) {
    method_ = Method::Vector;
    packed_ = std::make_shared<const std::vector<PackedWeights>>();
    vector_ = share_packed_rhs(ctx, "cpu.conv.vector", weight_, d.c, d.m, true);
    return;
  }

  // Winograd where it applies and pays (winograd.h); the im2col packing is then not made.
  // Its output transform inlines clamps only (Relu, Clip), not the smooth activations.
  const WinogradShape ws_shape{d.n, d.c, d.h, d.w, d.m, d.oh, d.ow, d.pad_t, d.pad_l};
  if (method_ == Method::Im2col && two_d && d.group == 1 && d.kh == 3 && d.kw == 3 &&
      act_.is_clamp() &&
      d.sh == 1 && d.sw == 1 && d.dh == 1 && d.dw == 1 && weight_.defined() &&
      winograd_pays(ws_shape) && winograd_enabled()) {
    method_ = Method::Winograd;
    packed_ = std::make_shared<const std::vector<PackedWeights>>();
    slice_floats_ = winograd_.prepare(ctx, ws_shape, weight_.data<float>());
    ctx.workspace_bytes = size_t(threads_) * size_t(slice_floats_) * sizeof(float);
    return;
  }

  // Strided convs as an implicit GEMM with the output channels in the lanes (conv_strided.h).
  const Conv2dShape shape{d.n,  d.c,  d.h,  d.w,  d.m,     d.oh,    d.ow,   d.kh,
                          d.kw, d.sh, d.sw, d.dh, d.dw, d.pad_t, d.pad_l, d.group};
  if (method_ != Method::Depthwise && two_d && weight_.defined() &&
      has_any_isa() && StridedConv::pays(shape, fp32_micro_kernels().isa)) {
    method_ = Method::Strided;
    packed_ = std::make_shared<const std::vector<PackedWeights>>();
    slice_floats_ = strided_.prepare(ctx, shape, weight_.data<float>());
    ctx.workspace_bytes = size_t(slice_floats_) * sizeof(float);  // one for all threads
    return;
  }

  // Dilated 3x3 convs as Winograd on their phase planes (winograd_dilated.h).
  if (method_ == Method::Im2col && two_d && d.group == 1 && act_.is_clamp() && weight_.defined() &&
      DilatedWinograd::pays(shape)) {
    method_ = Method::DilatedWinograd;
    packed_ = std::make_shared<const std::vector<PackedWeights>>();
    slice_floats_ = dilated_winograd_.prepare(ctx, shape, weight_.data<float>(), has_residual_,
                                              threads_);
    ctx.workspace_bytes = size_t(slice_floats_) * sizeof(float);  // one for all threads
    return;
  }

  // Dilated convs whose taps read mostly padding, only the taps that read the input
  // (conv_regions.h).
  if (method_ == Method::Im2col && two_d && d.group == 1 && !has_residual_ && weight_.defined() &&
      has_any_isa() && RegionConv::pays(shape)) {
    method_ = Method::Regions;
    packed_ = std::make_shared<const std::vector<PackedWeights>>();
    slice_floats_ = regions_.prepare(ctx, shape, weight_.data<float>());
    ctx.workspace_bytes = size_t(threads_) * size_t(slice_floats_) * sizeof(float);
    return;
  }

  // Small planes with the output channels in the lanes (conv_small_plane.h), in place of
  // ConvGemm's position tiles; on AVX2, in place of Eigen's GEMM from a depth of 512 (on a Zen
  // 5 at MINFER_ISA=avx2 ResNet-50's 7x7 convs of K = 512-2304 ran 5-23 % faster, a 1x1 of
  // K = 256 at stride 2 6 % slower; a Zen 4 had measured them even). F(2x2, 3x3) everywhere:
  // at MINFER_ISA=avx2 ResNet-18's 7x7 convs 2.8 -> 1.8 ms.
  if (method_ != Method::Depthwise && two_d && d.group == 1 && weight_.defined() &&
      has_any_isa() &&
      (ConvGemm::pays_deep(d.k(), kSmallPlaneAvx2MinDepth, fp32_micro_kernels().isa) ||
       SmallPlaneConv::winograd_pays(shape)) &&
      SmallPlaneConv::pays(shape, fp32_micro_kernels().nr) && small_plane_enabled()) {
    method_ = Method::SmallPlane;
    packed_ = std::make_shared<const std::vector<PackedWeights>>();
    slice_floats_ = small_plane_.prepare(ctx, shape, weight_.data<float>());
    ctx.workspace_bytes = size_t(slice_floats_) * sizeof(float);  // one for all threads
    return;
  }

  // Tiles of output positions whose im2col block (K x tile floats) stays in the L2 cache;
  // at least 256 columns, below which the GEMM loses efficiency. Multiples of the GEMM
  // micro-kernel's 24 rows (kTileAlign) keep its slower remainder paths out of the loop.
  const int64_t p = d.p(), k = d.k();
  int64_t target = std::max<int64_t>(256, (int64_t{1} << 17) / std::max<int64_t>(k, 1));
  int64_t tiles = ceil_div(p, target);
  tile_cols_ = std::min(p, round_up(ceil_div(p, tiles), kTileAlign));

  // Where the output outweighs the arithmetic (small depths, large planes): ConvGemm on the
  // input itself (1x1) or on a row-major im2col tile (conv_gemm.h).
  // (Where the tiles are wider than Eigen's AVX2, every conv; the deep ones pack X. On AMD's
  // cores at AVX2 also the strided and the deepest 1x1 convs: ConvGemm::pays_1x1.)
  const bool one_by_one = d.kh == 1 && d.kw == 1 && d.group == 1;
  const Isa tiles_isa = fp32_micro_kernels().isa;
  if (method_ != Method::Depthwise && weight_.defined() && has_any_isa() &&
      (one_by_one ? ConvGemm::pays_1x1(k, p, d.sh * d.sw > 1, tiles_isa)
                  : ConvGemm::pays(k, p, tiles_isa))) {
    const int64_t groups = d.group, mg = d.mg;
    const float* w = weight_.data<float>();
    const f32::MicroKernels& tiles = fp32_micro_kernels();
    direct_ = ctx.share<std::vector<ConvGemm>>(
        std::string("cpu.conv.direct.") + isa_name(tiles.isa),
        size_t(d.m) * size_t(k) * sizeof(float), [&] {
          auto gemms = std::make_shared<std::vector<ConvGemm>>();
          for (int64_t g = 0; g < groups; ++g) gemms->emplace_back(w + g * mg * k, mg, k, tiles);
          return gemms;
        });
    packed_ = std::make_shared<const std::vector<PackedWeights>>();
  } else if (method_ != Method::Depthwise && weight_.defined()) {
    // Otherwise constant weights are packed once for the GEMM micro-kernel, one block per group.
    // The packing depends on the tile width only (not on the batch): plans of every batch size
    // share it.
    const int64_t groups = d.group, mg = d.mg, tile = tile_cols_;
    const float* w = weight_.data<float>();
    packed_ = ctx.share<std::vector<PackedWeights>>(
        "cpu.conv.tile" + std::to_string(tile), size_t(d.m) * size_t(k) * sizeof(float), [&] {
          auto packs = std::make_shared<std::vector<PackedWeights>>();
          for (int64_t g = 0; g < groups; ++g) packs->emplace_back(w + g * mg * k, mg, k, k, tile);
          return packs;
        });
  } else {
    packed_ = std::make_shared<const std::vector<PackedWeights>>();
  }
  // Per thread: the im2col tile (packed for the GEMM, or row-major for run-time weights), the
  // padded input copy that the packed im2col reads, and the GEMM's packing scratch for the
  // 1x1 path. (Tiles may end up to kTileAlign longer than tile_cols_ when run() rebalances
  // them.)
  const int64_t max_cols = std::min(p, tile_cols_ + kTileAlign);
  const bool packed_im2col = method_ == Method::Im2col && !packed_->empty();
  col_floats_ = method_ != Method::Im2col ? 0
                : packed_im2col           ? round_up((*packed_)[0].packed_floats(max_cols), 16)
                                          : round_up(k * max_cols, 16);
  // The padded input copy: the input rows of the output rows a tile touches (at most
  // ceil(max_cols / ow) + 1), and the columns that any output column reads.
  pad_w_ = (d.ow - 1) * d.sw + (d.kw - 1) * d.dw + 1;
  pad_rows_ = std::min(d.oh, ceil_div(max_cols, std::max<int64_t>(d.ow, 1)) + 1) * d.sh +
              (d.kh - 1) * d.dh;
  pad_floats_ = packed_im2col ? round_up(d.cg * pad_rows_ * pad_w_, 16) : 0;
  tap_offset_.clear();
  for (int64_t i = 0; i < d.kh; ++i)
    for (int64_t j = 0; j < d.kw; ++j) tap_offset_.push_back(i * d.dh * pad_w_ + j * d.dw);
  const int64_t scratch = !packed_->empty() && !packed_im2col ? (*packed_)[0].scratch_floats()
                          : direct_                          ? (*direct_)[0].scratch_floats()
                                                             : 0;
  slice_floats_ = col_floats_ + pad_floats_ + round_up(scratch, 16);
  if (method_ == Method::Depthwise) {
    depthwise_plane_ = depthwise_plane_kernel(d.kh, d.kw, d.sh, d.sw, d.dh, d.dw, d.pad_t, d.pad_l,
                                              d.h, d.w, d.oh, d.ow);
    depthwise_isa_ = depthwise_plane_isa();
    if (depthwise_plane_ && depthwise_channels_pays(d.kh, d.oh, d.ow)) {
      const DepthwiseChannelsKernel channels =
          depthwise_channels_kernel(d.kh, d.sh, d.h, d.w, d.oh, d.ow);
      depthwise_channels_ = channels.fn;
      if (channels.fn) {
        depthwise_isa_ = channels.isa;
        depthwise_lanes_ = channels.lanes;
        slice_floats_ = round_up(int64_t(channels.scratch_floats), 16);
      }
    }
    if (!depthwise_channels_ && depthwise_plane_)
      slice_floats_ = round_up(int64_t(depthwise_scratch_floats(d.h, d.w, d.kh)), 16);
  }
  ctx.workspace_bytes = size_t(threads_) * size_t(slice_floats_) * sizeof(float);

  implicit_ = direct_ && two_d && d.group == 1 && d.sw == 2 && d.dw == 1 && d.dh == 1 &&
              k <= ConvGemm::kMaxDepth && d.ow >= 32 && implicit_enabled();
  if (implicit_) {
    phase_rows_ = (d.oh - 1) * d.sh + d.kh;
    phase_w_ = ((d.ow - 1) * 2 + d.kw + 1) / 2;
    for (int64_t phase = 0; phase < 2; ++phase) {
      // The columns u whose input column 2u + phase - pad_l lies in [0, w).
      phase_lo_[phase] = std::clamp<int64_t>((d.pad_l - phase + 1) / 2, 0, phase_w_);
      phase_hi_[phase] =
          std::clamp<int64_t>((d.w + d.pad_l - phase + 1) / 2, phase_lo_[phase], phase_w_);
    }
    tap_rows_.clear();
    for (int64_t c = 0; c < d.c; ++c)
      for (int64_t i = 0; i < d.kh; ++i)
        for (int64_t j = 0; j < d.kw; ++j)
          tap_rows_.push_back(((c * 2 + j % 2) * phase_rows_ + i) * phase_w_ + j / 2);
    ctx.workspace_bytes = size_t(d.c * 2 * phase_rows_ * phase_w_) * sizeof(float);
  }
}

void ConvKernel::run(RunContext& ctx) const {
  if (empty_) return;
  Operands op;
  op.x = ctx.inputs[0]->data<float>();
  op.w = weight_.defined() ? weight_.data<float>() : ctx.inputs[1]->data<float>();
  op.b = !has_bias_        ? nullptr
         : bias_.defined() ? bias_.data<float>()
                           : ctx.inputs[2]->data<float>();
  op.z = has_residual_ ? ctx.inputs[3]->data<float>() : nullptr;
  op.y = ctx.outputs[0]->data<float>();
  const int threads = std::clamp(ctx.threads, 1, threads_);
  if (method_ == Method::Vector)
    vector_->multiply(op.x, d_.n, d_.c, op.y, d_.m, threads, op.b, &act_);
  else if (method_ == Method::Winograd)
    winograd_.run(op.x, op.b, op.z, op.y, act_, static_cast<float*>(ctx.workspace), threads);
  else if (method_ == Method::SmallPlane)
    small_plane_.run(op.x, op.b, op.z, op.y, act_, static_cast<float*>(ctx.workspace), threads);
  else if (method_ == Method::Strided)
    strided_.run(op.x, op.b, op.z, op.y, act_, static_cast<float*>(ctx.workspace), threads);
  else if (method_ == Method::DilatedWinograd)
    dilated_winograd_.run(op.x, op.b, op.z, op.y, act_, static_cast<float*>(ctx.workspace),
                          threads);
  else if (method_ == Method::Regions)
    regions_.run(op.x, op.b, op.y, act_, static_cast<float*>(ctx.workspace), threads);
  else if (depthwise_channels_)
    run_depthwise_channels(op, static_cast<float*>(ctx.workspace), threads);
  else if (depthwise_plane_)
    run_depthwise_planes(op, static_cast<float*>(ctx.workspace), threads);
  else if (method_ == Method::Depthwise)
    run_depthwise(op, threads);
  else
    run_gemm(op, static_cast<float*>(ctx.workspace), threads);
}

std::string ConvKernel::variant() const {
  if (method_ == Method::Winograd)  // "winograd <isa>": the level of its transforms (and tiles)
    return winograd_.isa() ? std::string("winograd ") + winograd_.isa() : "winograd";
  if (method_ == Method::SmallPlane)
    return std::string("small-plane ") + (small_plane_.winograd() ? "winograd " : "") +
           isa_name(small_plane_.isa());
  if (method_ == Method::Vector) return std::string("vector ") + isa_name(vector_->isa());
  if (method_ == Method::Strided) return std::string("strided ") + isa_name(strided_.isa());
  if (method_ == Method::Regions) return std::string("regions ") + isa_name(regions_.isa());
  if (method_ == Method::DilatedWinograd)
    return dilated_winograd_.isa() ? std::string("winograd-dilated ") + dilated_winograd_.isa()
                                   : "winograd-dilated";
  // ConvGemm's tiles and the depthwise kernels say their ISA level (the other paths are
  // Eigen's, built for the baseline).
  if (depthwise_plane_ && depthwise_isa_ >= 0)
    return std::string(depthwise_channels_ ? "depthwise-channels " : "depthwise ") +
           isa_name(static_cast<Isa>(depthwise_isa_));
  return direct_ && !direct_->empty() ? std::string("direct ") + isa_name((*direct_)[0].isa())
                                      : std::string();
}

void ConvKernel::fill_output(const Operands& op, int64_t n, int64_t m0, int64_t m1, int64_t p0,
                             int64_t np) const {
  const int64_t p = d_.p();
  for (int64_t m = m0; m < m1; ++m) {
    const int64_t offset = (n * d_.m + m) * p + p0;
    float* y = op.y + offset;
    const float b = op.b ? op.b[m] : 0.f;
    if (op.z) {
      const float* z = op.z + offset;
      for (int64_t i = 0; i < np; ++i) y[i] = z[i] + b;
    } else {
      std::fill(y, y + np, b);
    }
  }
}

void ConvKernel::finish_output(const Operands& op, int64_t n, int64_t m0, int64_t m1, int64_t p0,
                               int64_t np) const {
  if (!act_.enabled) return;
  for (int64_t m = m0; m < m1; ++m) act_.apply(op.y + (n * d_.m + m) * d_.p() + p0, np);
}

void ConvKernel::im2col(const float* x, int64_t k0, int64_t k1, int64_t p0, int64_t np,
                        float* col) const {
  const Dims& d = d_;
  const int64_t taps = d.kh * d.kw;
  const int64_t oh_begin = p0 / d.ow, ow_begin = p0 % d.ow;
  // Row k of the matrix is input channel c, kernel tap (i, j); counted without divisions.
  int64_t c = k0 / taps, i = k0 % taps / d.kw, j = k0 % d.kw;
  for (int64_t k = k0; k < k1; ++k, ++j) {
    if (j == d.kw) j = 0, ++i;
    if (i == d.kh) i = 0, ++c;
    const float* xc = x + c * d.h * d.w;
    const int64_t offset = j * d.dw - d.pad_l;                // input column = ow * sw + offset
    const Span row = valid_span(offset, d.sw, d.w, 0, d.ow);  // the same for every row
    float* dst = col + (k - k0) * np;
    // Output rows oh, columns [ow0, ow1) of the tile, written at dst[0 .. ow1 - ow0).
    int64_t oh = oh_begin, ow0 = ow_begin;
    for (int64_t left = np; left > 0; ++oh, ow0 = 0) {
      const int64_t ow1 = std::min(d.ow, ow0 + left);
      const int64_t ih = oh * d.sh - d.pad_t + i * d.dh;
      if (ih < 0 || ih >= d.h) {
        std::fill(dst, dst + (ow1 - ow0), 0.f);
      } else {
        const float* xrow = xc + ih * d.w;
        const int64_t lo = std::clamp(row.lo, ow0, ow1), hi = std::clamp(row.hi, lo, ow1);
        for (int64_t ow = ow0; ow < lo; ++ow) dst[ow - ow0] = 0.f;  // padding: a few columns
        if (d.sw == 1) {
          // Rows are short (7 to 112 floats): an inline vector copy beats a memcpy call.
          Eigen::Map<Eigen::ArrayXf>(dst + (lo - ow0), hi - lo) =
              Eigen::Map<const Eigen::ArrayXf>(xrow + lo + offset, hi - lo);
        } else if (d.sw == 2) {
          copy_even(xrow + lo * 2 + offset, hi - lo, dst + (lo - ow0));
        } else {
          for (int64_t ow = lo; ow < hi; ++ow) dst[ow - ow0] = xrow[ow * d.sw + offset];
        }
        for (int64_t ow = hi; ow < ow1; ++ow) dst[ow - ow0] = 0.f;
      }
      dst += ow1 - ow0;
      left -= ow1 - ow0;
    }
  }
}

int64_t ConvKernel::pad_input(const float* x, int64_t p0, int64_t np, float* pad) const {
  const Dims& d = d_;
  const int64_t oh0 = p0 / d.ow, oh1 = (p0 + np - 1) / d.ow;  // output rows, inclusive
  const int64_t rows = (oh1 - oh0) * d.sh + (d.kh - 1) * d.dh + 1;
  const int64_t ih0 = oh0 * d.sh - d.pad_t;
  for (int64_t c = 0; c < d.cg; ++c)
    copy_padded_rows(x + c * d.h * d.w, d.h, d.w, ih0, rows, d.pad_l, pad + c * pad_rows_ * pad_w_,
                     pad_w_);
  return oh0;
}

void ConvKernel::im2col_packed(const float* pad, int64_t oh0, int64_t p0, int64_t np,
                               int64_t kc, float* dst) const {
  const Dims& d = d_;
  const int64_t k = d.k(), taps = d.kh * d.kw;
  const int64_t block_stride = PackedWeights::packed_stride(np);
  const int64_t plane = pad_rows_ * pad_w_, sw = d.sw;
  const int64_t* tap_offset = tap_offset_.data();
  // A panel's columns are output positions, cut into runs along output rows: n columns that
  // read pad[... + base + tap offset], every sw-th float, and go to the panel's columns q...
  struct Run {
    int64_t base, n, q;
  };
  Run runs[PackedWeights::kMaxPanelWidth];
  for (int64_t q0 = 0; q0 < np;) {
    const int64_t w = PackedWeights::panel_width(np, q0);
    int nruns = 0;
    int64_t oh = (p0 + q0) / d.ow, ow0 = (p0 + q0) % d.ow;
    for (int64_t left = w, q = 0; left > 0; ++oh, ow0 = 0) {
      const int64_t n = std::min(d.ow - ow0, left);
      runs[nruns++] = {(oh - oh0) * d.sh * pad_w_ + ow0 * sw, n, q};
      q += n;
      left -= n;
    }
    for (int64_t k2 = 0; k2 < k; k2 += kc) {
      const int64_t kb = std::min(kc, k - k2);
      float* out = dst + k2 * block_stride + q0 * kb;
      // Row k of the matrix is input channel c, kernel tap t; counted without divisions.
      int64_t t = k2 % taps;
      const float* xc = pad + k2 / taps * plane;
      if (nruns == 1 && w == 24 && sw == 1) {  // the common case: fixed-size copies
        const float* src = xc + runs[0].base;
        for (int64_t kk = 0; kk < kb; ++kk, ++t, out += 24) {
          if (t == taps) t = 0, src += plane;
          const float* s = src + tap_offset[t];
          for (int e = 0; e < 24; ++e) out[e] = s[e];
        }
        continue;
      }
      for (int64_t kk = 0; kk < kb; ++kk, ++t, out += w) {
        if (t == taps) t = 0, xc += plane;
        const float* src = xc + tap_offset[t];
        for (int r = 0; r < nruns; ++r) {
          const float* s = src + runs[r].base;
          float* o = out + runs[r].q;
          const int64_t n = runs[r].n;
          if (sw == 1) {
            for (int64_t e = 0; e < n; ++e) o[e] = s[e];
          } else if (sw == 2) {  // a constant stride lets the compiler vectorize the gather
            for (int64_t e = 0; e < n; ++e) o[e] = s[2 * e];
          } else {
            for (int64_t e = 0; e < n; ++e) o[e] = s[e * sw];
          }
        }
      }
    }
    q0 += w;
  }
}

void ConvKernel::run_implicit(const Operands& op, float* phases, int threads) const {
  const Dims& d = d_;
  const int64_t p = d.p(), rows = phase_rows_, width = phase_w_;
  for (int64_t n = 0; n < d.n; ++n) {
    const float* x = op.x + n * d.c * d.h * d.w;
    // Plane (c, phase) row r, column u: padded input row r, column 2u + phase (0 outside).
    parallel_for(threads_for(d.c * rows * width * 2, threads), d.c * rows, [&](int64_t cr) {
      const int64_t c = cr / rows, r = cr % rows, ih = r - d.pad_t;
      for (int64_t phase = 0; phase < 2; ++phase) {
        float* dst = phases + ((c * 2 + phase) * rows + r) * width;
        const int64_t lo = phase_lo_[phase], hi = phase_hi_[phase];
        if (ih < 0 || ih >= d.h || hi == lo) {
          std::fill(dst, dst + width, 0.f);
          continue;
        }
        std::fill(dst, dst + lo, 0.f);
        copy_even(x + (c * d.h + ih) * d.w + 2 * lo + phase - d.pad_l, hi - lo, dst + lo);
        std::fill(dst + hi, dst + width, 0.f);
      }
    });
    parallel_for(threads_for(d.m * p * d.k(), threads), d.oh, [&](int64_t oh) {
      const int64_t out = n * d.m * p + oh * d.ow;
      (*direct_)[0].run_at(phases + oh * d.sh * width, tap_rows_.data(), d.ow, op.b,
                           op.z ? op.z + out : nullptr, op.y + out, p, act_);
    });
  }
}

void ConvKernel::run_gemm(const Operands& op, float* workspace, int threads) const {
  if (implicit_) return run_implicit(op, workspace, threads);
  const Dims& d = d_;
  const int64_t p = d.p(), k = d.k();
  const int64_t groups_total = d.n * d.group;

  // Work units are (image, group, tile of output positions), split over the threads in
  // contiguous ranges with no synchronization. When the units do not divide evenly over few
  // threads (batch 1), smaller tiles that do are preferred; each thread then packs its own
  // positions and reads all of the (shared, packed) weights.
  int64_t tiles = ceil_div(p, tile_cols_);
  // A packed 1x1 conv at batch 1 with more output channels than positions (14x14 and 7x7
  // planes) splits its channels instead: each thread then reads half the weights rather than
  // all of them, and its GEMM tile keeps every column (MobileNet v2's 7x7 expansion, 160 ->
  // 960 channels, 2 threads of a Zen 3: 0.149 -> 0.124 ms; with fewer channels than positions
  // it lost).
  // ConvGemm splits them too, also on an im2col tile (each thread then writes its own copy).
  const bool split_rows = threads > 1 &&
                          ((method_ == Method::Gemm1x1 && !packed_->empty()) || direct_) &&
                          groups_total * tiles < threads && d.mg > p && d.mg >= 16 * threads;
  const int64_t row_parts = split_rows ? threads : 1;
  if (threads > 1 && groups_total * tiles < 8 * threads && !split_rows) {
    for (int64_t t = tiles; t < tiles + 2 * threads && p / t >= 8; ++t)
      if (groups_total * t % threads == 0) {
        tiles = t;
        break;
      }
  }
  const int64_t units = groups_total * tiles * row_parts;
  // Tile boundaries on multiples of the micro-kernel's rows where tiles are large enough.
  // (ConvGemm's tile width where tiles hold several: a boundary rounded down to a wide tile
  // could leave a thread no columns.)
  const int64_t wide = direct_ ? (*direct_)[0].tile_columns() : kTileAlign;
  const int64_t align = p / tiles >= 4 * wide ? wide : 8;
  auto boundary = [&](int64_t t) { return aligned_split_begin(p, tiles, t, align); };

  // A row part's output channels of its group, [r0, r1): multiples of the packed panels' rows
  // (4 for Eigen's, 6 for ConvGemm's).
  const int64_t panel_rows = direct_ ? ConvGemm::kPanelRows : 4;
  auto row_boundary = [&](int64_t r) {
    return aligned_split_begin(d.mg, row_parts, r, panel_rows);
  };
  auto locate = [&](int64_t u, int64_t& n, int64_t& g, int64_t& p0, int64_t& np, int64_t& r0,
                    int64_t& r1) {
    r0 = row_boundary(u % row_parts);
    r1 = row_boundary(u % row_parts + 1);
    u /= row_parts;
    n = u / (d.group * tiles);
    g = u / tiles % d.group;
    p0 = boundary(u % tiles);
    np = boundary(u % tiles + 1) - p0;
  };
  const bool use_col = method_ == Method::Im2col;
  const int64_t image_stride = d.c * d.h * d.w, group_stride = d.cg * d.h * d.w;
  if (direct_ && use_col && split_rows && units == row_parts) {
    // One tile (one image, one group, all positions) whose output channels the threads split
    // (row_parts == threads): its im2col is made once, shared, by all of them (64 rows of K a
    // task), not by each thread in full (ResNet-50's 3x3 stride-2 conv of 28x28 -> 14x14 took
    // 1.4x less time on 2 threads than on 1 that way). Thread 0's slice holds it.
    float* col = workspace;
    const int64_t k_rows = 64;
    parallel_for(threads_for(k * p, threads), ceil_div(k, k_rows), [&](int64_t i) {
      const int64_t k0 = i * k_rows, k1 = std::min(k, k0 + k_rows);
      im2col(op.x, k0, k1, 0, p, col + k0 * p);
    });
    parallel_region(threads, [&](int part, int) {
      const int64_t r0 = row_boundary(part), r1 = row_boundary(part + 1);
      float* scratch = workspace + part * slice_floats_ + col_floats_ + pad_floats_;
      if (r0 < r1)
        (*direct_)[0].run(col, p, p, op.b, op.z, op.y, p, act_, scratch, r0, r1);
    });
    return;
  }
  parallel_region(threads, [&](int tid, int nt) {
    float* col = use_col ? workspace + tid * slice_floats_ : nullptr;
    float* pad = workspace + tid * slice_floats_ + col_floats_;
    float* scratch = pad + pad_floats_;
    for (int64_t u = split_begin(units, nt, tid); u < split_begin(units, nt, tid + 1); ++u) {
      int64_t n, g, p0, np, r0, r1;
      locate(u, n, g, p0, np, r0, r1);
      if (np <= 0) continue;
      const float* x = op.x + n * image_stride + g * group_stride;
      const int64_t m0 = g * d.mg;
      const int64_t offset = (n * d.m + m0) * p + p0;  // of the tile's first output
      float* y = op.y + offset;
      if (direct_) {  // the epilogue in ConvGemm's registers, on X itself or an im2col tile
        if (col) im2col(x, 0, k, p0, np, col);
        (*direct_)[g].run(col ? col : x + p0, col ? np : p, np, op.b ? op.b + m0 : nullptr,
                          op.z ? op.z + offset : nullptr, y, p, act_, scratch, r0, r1);
        continue;
      }
      // Output channels [m0 + r0, m0 + r1) of the group: all of them unless split_rows.
      fill_output(op, n, m0 + r0, m0 + r1, p0, np);
      if (col && !packed_->empty()) {
        const int64_t oh0 = pad_input(x, p0, np, pad);
        im2col_packed(pad, oh0, p0, np, (*packed_)[g].depth_block(), col);
        (*packed_)[g].multiply_packed(r0, r1, col, np, y, p);
      } else {
        // im2col of the tile, unless the input itself is the GEMM operand (1x1).
        if (col) im2col(x, 0, k, p0, np, col);
        MatrixRef b = col ? MatrixRef{col, np} : MatrixRef{x + p0, p};
        if (!packed_->empty())
          (*packed_)[g].multiply(r0, r1, b.data, b.ld, np, y, p, scratch);
        else
          sgemm_acc(r1 - r0, np, k, 1.f, {op.w + (m0 + r0) * k, k}, b, y + r0 * p, p);
      }
      finish_output(op, n, m0 + r0, m0 + r1, p0, np);
    }
  });
}

void ConvKernel::run_depthwise(const Operands& op, int threads) const {
  const Dims& d = d_;
  const int64_t p = d.p(), taps = d.kh * d.kw;
  const int64_t planes = d.n * d.m;
  // A 1x1 depthwise conv (a BatchNormalization before a Relu, batchnorm-to-depthwise) is a
  // scale and a shift per plane: one pass, then the activation while the plane is in cache.
  const bool scale_shift = taps == 1 && d.sh == 1 && d.sw == 1 && d.pad_t == 0 &&
                           d.pad_l == 0 && d.oh == d.h && d.ow == d.w;
  parallel_for(threads_for(planes * p * taps, threads, 1 << 15), planes, [&](int64_t plane) {
    const int64_t n = plane / d.m, m = plane % d.m;
    const float* x = op.x + (n * d.c + m / d.mg) * d.h * d.w;  // one input channel per group
    const float* w = op.w + m * taps;
    if (scale_shift) {
      float* y = op.y + plane * p;
      const float* z = op.z ? op.z + plane * p : nullptr;
      const float s = w[0], b = op.b ? op.b[m] : 0.f;
      if (!z && act_.is_clamp()) {  // the clamp in the same pass (keeping a NaN, as Clip does)
        const float lo = act_.enabled ? act_.lo : -INFINITY, hi = act_.enabled ? act_.hi : INFINITY;
        for (int64_t i = 0; i < p; ++i) {
          const float v = s * x[i] + b, c = v < lo ? lo : v;
          y[i] = c > hi ? hi : c;
        }
        return;
      }
      for (int64_t i = 0; i < p; ++i) y[i] = s * x[i] + b + (z ? z[i] : 0.f);
      act_.apply(y, p);
      return;
    }
    fill_output(op, n, m, m + 1, 0, p);
    float* y = op.y + plane * p;
    for (int64_t oh = 0; oh < d.oh; ++oh) {
      float* yrow = y + oh * d.ow;
      for (int64_t i = 0; i < d.kh; ++i) {
        const int64_t ih = oh * d.sh - d.pad_t + i * d.dh;
        if (ih < 0 || ih >= d.h) continue;
        const float* xrow = x + ih * d.w;
        for (int64_t j = 0; j < d.kw; ++j) {
          const float wv = w[i * d.kw + j];
          const int64_t offset = j * d.dw - d.pad_l;
          Span s = valid_span(offset, d.sw, d.w, 0, d.ow);
          if (d.sw == 1) {
            for (int64_t ow = s.lo; ow < s.hi; ++ow) yrow[ow] += wv * xrow[ow + offset];
          } else {
            for (int64_t ow = s.lo; ow < s.hi; ++ow) yrow[ow] += wv * xrow[ow * d.sw + offset];
          }
        }
      }
    }
    finish_output(op, n, m, m + 1, 0, p);
  });
}

void ConvKernel::run_depthwise_planes(const Operands& op, float* workspace, int threads) const {
  const Dims& d = d_;
  const int64_t planes = d.n * d.m, p = d.p(), taps = d.kh * d.kw;
  const int parts = threads_for(planes * p * taps, threads, 1 << 15);
  // Units (image, row part, channel) in that order: at batch 1 each part takes its rows of
  // every plane, as the convs before and after split the positions (depthwise_row_parts).
  const int64_t row_parts =
      depthwise_row_parts(d.n, d.c * d.h * d.w * int64_t(sizeof(float)), d.oh, parts);
  const int64_t units = planes * row_parts;
  parallel_region(parts, [&](int part, int n_parts) {
    float* scratch = workspace + part * slice_floats_;
    for (int64_t u = split_begin(units, n_parts, part), end = split_begin(units, n_parts, part + 1);
         u < end; ++u) {
      const int64_t n = u / (row_parts * d.m), rp = u / d.m % row_parts, m = u % d.m;
      const int64_t plane = n * d.m + m;
      DepthwisePlane a;
      a.x = op.x + (n * d.c + m / d.mg) * d.h * d.w;  // one input channel per group
      a.h = d.h;
      a.w = d.w;
      a.weights = op.w + m * taps;
      a.bias = op.b ? op.b[m] : 0.f;
      a.residual = op.z ? op.z + plane * p : nullptr;
      a.act = &act_;
      a.y = op.y + plane * p;
      a.oh = d.oh;
      a.ow = d.ow;
      a.scratch = scratch;
      a.r0 = depthwise_row_split(d.oh, row_parts, rp);
      a.r1 = depthwise_row_split(d.oh, row_parts, rp + 1);
      depthwise_plane_(a);
    }
  });
}

void ConvKernel::run_depthwise_channels(const Operands& op, float* workspace, int threads) const {
  const Dims& d = d_;
  const int64_t p = d.p(), taps = d.kh * d.kw;
  DepthwiseChannels a;
  a.x = op.x;
  a.weights = op.w;
  a.bias = op.b;
  a.residual = op.z;
  a.y = op.y;
  a.m0 = 0, a.m1 = d.m, a.mg = d.mg;
  a.h = d.h, a.w = d.w, a.oh = d.oh, a.ow = d.ow;
  a.act = &act_;
  run_depthwise_channel_ranges(depthwise_channels_, a, d.n, d.c * d.h * d.w, d.m * p,
                               depthwise_lanes_,
                               threads_for(d.n * d.m * p * taps, threads, 1 << 15), workspace,
                               slice_floats_);
}

}  // namespace minfer::cpu
