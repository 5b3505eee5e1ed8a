// Depthwise K x K convolutions (K = 3, 5 or 7, stride 1 or 2) on small planes, W channels at a
// time with the channels as the vector lanes (W = 8 on AVX2, 16 on AVX-512: the kernels are
// compiled per ISA level, backends/cpu/isa/depthwise_channels.cpp): the W input planes are
// transposed into one zero-padded scratch plane of W-float pixels, each output pixel is then
// K * K vector FMAs (weights arranged per tap, W channels wide; at stride 1 a few neighbouring
// pixels at a time, sharing their window's loads), and the W-float output pixels are
// transposed back into the W output planes, with the residual added on the way.
//
// Why: the plane kernels of depthwise.h vectorize along a row, which on a 7x7 or 14x14 plane
// leaves scalar tails and per-plane copies that cost more than the arithmetic. Here every loop
// is 8 lanes wide whatever the plane size; the transposes are the price, and it pays on the
// small planes only (depthwise_channels_pays). The geometry must be one that
// depthwise_plane_kernel accepts (K / 2 padding before, none past the padded plane).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/epilogue.h"

namespace minfer::cpu {

// Output channels [m0, m1) of one image; output channel m reads input channel m / mg. (A range
// of whole vectors of channels wastes no lanes: ConvKernel cuts its work at multiples of
// DepthwiseChannelsKernel::lanes.)
struct DepthwiseChannels {
  const float* x;         // [C, h, w] the image's input
  const float* weights;   // [M, K, K]
  const float* bias;      // [M], or null
  const float* residual;  // [M, oh, ow] added before the activation, or null
  float* y;               // [M, oh, ow]
  int64_t m0, m1, mg;
  int64_t h, w, oh, ow;
  const Activation* act;
  float* scratch;  // DepthwiseChannelsKernel::scratch_floats floats
  // y (and the residual) channels last, [oh, ow, M]: the output pixels are stored as they
  // are, with no transpose back (the channels-last pass's way into NHWC).
  bool nhwc_out = false;
  int64_t m = 0;  // with nhwc_out: the output's channels (its pixel stride)
};

using DepthwiseChannelsFn = void (*)(const DepthwiseChannels&);

// Channels-last (one image): x [h, w, c] -> y [oh, ow, c], for channels [c0, c1) and output
// rows [r0, r1) (callers split the work over threads by either). With P = K / 2 * d, output
// (r, q) of channel m = act(bias[m] + sum over taps (i, j) of weights[m][i * K + j] *
//         x[r*S - P + i*d][q*S - P + j*d][m] (zero outside the plane) + residual[r][q][m]).
// The channels are already the vector lanes here: no transposes, no scratch. P zeros of
// padding before each dimension, any number after (taps outside the plane read nothing).
// Dilated convs (d > 1: DeepLabv3's last MobileNet blocks) sum one pixel at a time, each tap
// checked against the plane.
struct DepthwiseNhwc {
  const float* x;         // [h, w, c]
  const float* weights;   // [c, K, K]
  const float* bias;      // [c], or null
  const float* residual;  // [oh, ow, c] added before the activation, or null
  float* y;               // [oh, ow, c]
  int64_t c, c0, c1, h, w, oh, ow, r0, r1;
  const Activation* act;  // never null; act->enabled false means none
  int64_t d = 1;          // the dilation of both dims
};
using DepthwiseNhwcFn = void (*)(const DepthwiseNhwc&);
// The kernel for K x K (K = 3, 5 or 7) at stride s (1 or 2) at the active ISA level, or null.
DepthwiseNhwcFn depthwise_nhwc_kernel(int64_t k, int64_t s);

// The kernel for K x K at stride s (K = kh = kw, s = sh = sw) on an h x w plane with an oh x ow
// output, at the active ISA level: fn is null when there is none.
struct DepthwiseChannelsKernel {
  DepthwiseChannelsFn fn = nullptr;
  int lanes = 8;              // channels per vector
  int isa = -1;               // its ISA level (an Isa)
  size_t scratch_floats = 0;  // the scratch one call needs
};
DepthwiseChannelsKernel depthwise_channels_kernel(int64_t k, int64_t s, int64_t h, int64_t w,
                                                  int64_t oh, int64_t ow);
// Whether it beats the plane kernels on this K x K conv's output plane at the active ISA level.
bool depthwise_channels_pays(int64_t k, int64_t oh, int64_t ow);

// fn over `images` images, `a` filled for image 0 (x, residual, y its pointers; m1 = all the
// output channels). The work units are one vector of `lanes` channels of one image, split in
// contiguous ranges over `parts` parts (part p's scratch at workspace + p * scratch_floats),
// one kernel call per image a range touches. x_image and y_image: an image's floats.
void run_depthwise_channel_ranges(DepthwiseChannelsFn fn, const DepthwiseChannels& a,
                                  int64_t images, int64_t x_image, int64_t y_image,
                                  int64_t lanes, int parts, float* workspace,
                                  int64_t scratch_floats);

}  // namespace minfer::cpu
