// The fp32 NCHW convolution kernel, shared by ONNX Conv and com.minfer:FusedConv:
//
//   Y = act(conv(X, W) + B + Z)
//
// Inputs: 0 X [N, C, (H,) W]; 1 W [M, C/group, (kH,) kW]; 2 B [M] (optional);
//         3 Z (optional residual, Y's shape), added before the activation.
// Attributes: the ONNX Conv ones, plus `activation` ("", "Relu", "Clip"), `activation_min`
// and `activation_max` (see epilogue.h). Plain ONNX Conv has none of the extras.
//
// Strategy: a 1x1, stride-1, unpadded conv is a GEMM on the input itself; depthwise convs
// (one input channel per group) use a direct loop (3x3, 5x5 and 7x7 at stride 1 or 2 with K/2 of
// padding: the vectorized plane kernels of depthwise.h, or on small planes the kernel of
// depthwise_channels.h, 8 or 16 channels per vector); everything else is im2col into the
// workspace, a tile of output columns at a time, followed by a GEMM. Constant weights are
// packed once at prepare for the GEMM micro-kernel (packed_gemm.h), and im2col then writes
// the tile straight in the micro-kernel's packed format, from a zero-padded copy of the input
// rows it reads; run-time weights go through the plain GEMM. Output tiles are pre-filled
// with bias (+ residual) so that the GEMM accumulates onto them, and the clamp runs while the
// tile is still in cache. Convs of small depth (K <= 192) on planes of 28x28 and more take
// ConvGemm instead (conv_gemm.h: the input or a row-major im2col tile read in place, the whole
// epilogue in registers; variant() "direct <isa>"), and so does every conv where ConvGemm's
// tiles are AVX-512 (Eigen is built for AVX2; ConvGemm::pays). 3x3 stride-1 convs with
// constant weights, at least 32 channels in and out and output planes of at least 12x12 run
// Winograd F(4x4, 3x3) instead (winograd.h: 36 GEMMs on transformed tiles, 4x fewer
// multiplications, on ConvGemm's tiles under the same rule; MINFER_CPU_WINOGRAD=0 turns it
// off); its variant() then says "winograd" ("winograd <isa>" on ConvGemm's tiles). Ungrouped
// convs with constant weights whose output plane would leave lanes of those tiles empty (7x7)
// put the output channels in the lanes instead (conv_small_plane.h; "small-plane <isa>";
// MINFER_CPU_SMALL_PLANE=0 turns it off), and so do larger planes' stride-2 convs on AVX-512
// (AMD's cores), as an implicit GEMM on a padded copy of the input with no im2col
// (conv_strided.h; "strided <isa>"; MINFER_CPU_STRIDED=0/1 turns it off or on), and grouped
// convs larger than 1x1 on every CPU, per group (MINFER_CPU_GROUPED=0 turns them off). A 1x1
// conv on a 1x1 plane (the fully connected layers of squeeze-and-excitation blocks) is a product of
// [N, C] with W^T: PackedRhs's tiles with the output channels in the lanes ("vector <isa>"),
// where ConvGemm's tiles would spend all but one of their columns on nothing. Dilated convs
// whose taps read mostly padding (a DeepLabv3's ASPP) sum only the taps that read the input,
// rectangle by rectangle of the output (conv_regions.h; "regions <isa>"); dilated 3x3 convs
// with large enough phase planes (FCN's and DeepLabv3's ResNet stages) run Winograd on them
// (winograd_dilated.h; "winograd-dilated <isa>").
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/conv_gemm.h"
#include "backends/cpu/conv_regions.h"
#include "backends/cpu/conv_small_plane.h"
#include "backends/cpu/conv_strided.h"
#include "backends/cpu/depthwise.h"
#include "backends/cpu/depthwise_channels.h"
#include "backends/cpu/epilogue.h"
#include "backends/cpu/packed_gemm.h"
#include "backends/cpu/packed_rhs_gemm.h"
#include "backends/cpu/winograd.h"
#include "backends/cpu/winograd_dilated.h"
#include "minfer/kernel.h"

namespace minfer::cpu {

class ConvKernel final : public Kernel {
 public:
  // 1-D and 2-D f32 convolutions with static shapes (others take the reference kernel).
  static bool supports(const PrepareContext& ctx);

  void prepare(PrepareContext& ctx) override;
  void run(RunContext& ctx) const override;
  std::string variant() const override;  // "winograd", "direct <isa>" (ConvGemm), else empty

 private:
  enum class Method {
    Gemm1x1,
    Im2col,
    Depthwise,
    Winograd,
    DilatedWinograd,
    SmallPlane,
    Strided,
    Regions,
    Vector
  };

  // The convolution's geometry (a 1-D conv has h = oh = kh = 1), sizes in elements.
  struct Dims {
    int64_t n, c, h, w;     // input
    int64_t m, oh, ow;      // output
    int64_t group, cg, mg;  // channels per group (input, output)
    int64_t kh, kw, sh, sw, dh, dw, pad_t, pad_l;
    int64_t p() const { return oh * ow; }
    int64_t k() const { return cg * kh * kw; }  // GEMM depth
  };

  struct Operands {
    const float* x;
    const float* w;
    const float* b;  // null = no bias
    const float* z;  // null = no residual
    float* y;
  };

  void run_gemm(const Operands& op, float* workspace, int threads) const;
  // The implicit GEMM of a stride-2 conv of small depth (implicit_): the input's columns split
  // by parity into `phases`, then each output row's taps read in place from them.
  void run_implicit(const Operands& op, float* phases, int threads) const;
  void run_depthwise(const Operands& op, int threads) const;
  // Through depthwise_plane_ (depthwise.h): one plane per work unit, scratch per part.
  void run_depthwise_planes(const Operands& op, float* workspace, int threads) const;
  // Through depthwise_channels_ (run_depthwise_channel_ranges in depthwise_channels.h).
  void run_depthwise_channels(const Operands& op, float* workspace, int threads) const;
  // Rows [k0, k1) of the im2col matrix of one image and group (x: its first input channel)
  // for output positions [p0, p0 + np), written to col with row stride np.
  void im2col(const float* x, int64_t k0, int64_t k1, int64_t p0, int64_t np, float* col) const;
  // The input rows that output positions [p0, p0 + np) read, all channels of the group,
  // copied with their zero padding into pad (pad_rows_ rows of pad_w_ floats per channel), so
  // that im2col_packed needs no bounds checks. Returns the first output row of the tile.
  int64_t pad_input(const float* x, int64_t p0, int64_t np, float* pad) const;
  // The im2col matrix of those positions, read from pad_input's copy and written straight into
  // the packed layout of PackedWeights::multiply_packed (depth blocks of kc rows): the GEMM
  // then skips its own packing pass over the tile.
  void im2col_packed(const float* pad, int64_t oh0, int64_t p0, int64_t np, int64_t kc,
                     float* dst) const;
  // Pre-fills Y rows [m0, m1) (absolute channels), columns [p0, p0+np) of image n.
  void fill_output(const Operands& op, int64_t n, int64_t m0, int64_t m1, int64_t p0,
                   int64_t np) const;
  void finish_output(const Operands& op, int64_t n, int64_t m0, int64_t m1, int64_t p0,
                     int64_t np) const;

  Dims d_{};
  Method method_ = Method::Im2col;
  DepthwisePlaneFn depthwise_plane_ = nullptr;  // the fast depthwise kernel, where it applies
  int depthwise_isa_ = -1;                       // its ISA level (for variant())
  int depthwise_lanes_ = 8;                      // the channels kernel's channels per vector
  DepthwiseChannelsFn depthwise_channels_ = nullptr;  // instead of it on small planes
  WinogradConv winograd_;                       // Method::Winograd's weights and run loop
  SmallPlaneConv small_plane_;                  // Method::SmallPlane's
  StridedConv strided_;                         // Method::Strided's
  RegionConv regions_;                          // Method::Regions's
  DilatedWinograd dilated_winograd_;            // Method::DilatedWinograd's
  Activation act_;
  int64_t tile_cols_ = 0;                      // output positions per tile (run() may rebalance)
  int threads_ = 1;                            // workspace is sized for this many threads
  int64_t col_floats_ = 0, slice_floats_ = 0;  // per-thread workspace: im2col tile + scratch
  int64_t pad_rows_ = 0, pad_w_ = 0, pad_floats_ = 0;  // pad_input's copy (per thread)
  std::vector<int64_t> tap_offset_;  // per kernel tap: its offset in a channel of that copy
  Tensor weight_, bias_;  // constant inputs (shared, not copied); undefined = read per run
  // Constant weights packed per group for the GEMM (shared by the session's plans); never null.
  std::shared_ptr<const std::vector<PackedWeights>> packed_;
  // Instead, per group, for the 1x1 convs where ConvGemm::pays(); null otherwise.
  std::shared_ptr<const std::vector<ConvGemm>> direct_;
  // A stride-2 conv of K <= ConvGemm::kMaxDepth with output rows of 32 or more (a stem) runs on
  // direct_ without im2col: the padded input's even and odd columns as two planes per channel
  // (phase_rows_ x phase_w_ each, in the workspace), in which an output row's tap (c, i, j) is
  // a contiguous run at tap_rows_[k] + oh * sh * phase_w_. (ResNet's 7x7 stem wrote and read
  // back a 147 x 12544 im2col matrix, 7 MB.)
  bool implicit_ = false;
  int64_t phase_rows_ = 0, phase_w_ = 0;
  int64_t phase_lo_[2] = {}, phase_hi_[2] = {};  // a phase plane's columns that hold input
  std::vector<int64_t> tap_rows_;
  // Method::Vector's W^T, packed for PackedRhs; null otherwise.
  std::shared_ptr<const PackedRhs> vector_;
  bool has_bias_ = false, has_residual_ = false;
  bool empty_ = false;  // the output has no elements
};

}  // namespace minfer::cpu
