// Depthwise K x K convolutions (K = 3, 5 or 7, stride 1 or 2, dilation 1, K/2 zeros of padding
// before each dimension): one channel plane at a time, copied once into a zero-padded
// scratch plane (for stride 2, split into its even and odd columns), so that every output row
// is a sum of K * K shifted rows with no bounds checks, vectorized across the row and written
// once, with the bias, residual and clamp applied in registers (3x3: two output rows at a time,
// sharing their input rows' loads; on AVX-512 3x3 reads the input rows themselves, its loads
// masked to the row's columns, no copy). ConvKernel
// uses them on output planes larger than 32x32; smaller ones, whose short rows leave these
// kernels mostly scalar tails and copies, take depthwise_channels.h (channels as the lanes).
// Other geometries take ConvKernel's general depthwise loop.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/epilogue.h"

namespace minfer::cpu {

struct DepthwisePlane {
  const float* x;  // [h, w] input channel
  int64_t h, w;
  const float* weights;  // [K, K]
  float bias;
  const float* residual;  // [oh, ow] added before the activation, or null
  const Activation* act;
  float* y;  // [oh, ow]
  int64_t oh, ow;
  float* scratch;  // depthwise_scratch_floats(h, w, K) floats
  int64_t r0, r1;  // the output rows to compute: [r0, r1) (threads may split a plane's rows)
};

using DepthwisePlaneFn = void (*)(const DepthwisePlane&);

// The plane kernel for this geometry at the active ISA level (backends/cpu/isa/
// depthwise_plane.cpp: rows 8 floats at a time on AVX2, 16 on AVX-512), or
// null when it has none.
DepthwisePlaneFn depthwise_plane_kernel(int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh,
                                        int64_t dw, int64_t pad_t, int64_t pad_l, int64_t h,
                                        int64_t w, int64_t oh, int64_t ow);
// The ISA level depthwise_plane_kernel picks now (for the kernel's name), or -1 when this
// build or CPU has none.
int depthwise_plane_isa();
size_t depthwise_scratch_floats(int64_t h, int64_t w, int64_t k);

// Depthwise planes with a channels-last output (NhwcConv with `nchw_input`, where the
// channels-last region begins): the plane kernel on `kBlock` channels at a time into a scratch,
// whose planes are then transposed into the output's pixels. Channel m reads input channel m.
struct DepthwisePlanesNhwc {
  const float* x;        // [images, c, h, w]
  const float* weights;  // [c, K, K]
  const float* bias;     // [c], or null
  const Activation* act;
  float* y;  // [images, oh, ow, c]
  int64_t images, c, k, h, w, oh, ow;
  static constexpr int64_t kBlock = 16;
};
// At batch 1, where the input (input_bytes an image) fits in a core's L2, a plane's output rows
// split over up to `parts` parts (each part's rows of every channel: the rows that the convs
// before and after, which split a plane's positions, wrote or read on the same core), else 1;
// depthwise_row_split(oh, row_parts, i) is where part i begins (even rows, for the 3x3
// kernels' pairs of rows; i = row_parts: oh).
int64_t depthwise_row_parts(int64_t images, int64_t input_bytes, int64_t oh, int parts);
int64_t depthwise_row_split(int64_t oh, int64_t row_parts, int64_t i);
// The scratch floats one part of the work needs.
size_t depthwise_planes_nhwc_scratch(const DepthwisePlanesNhwc& a);
// fn over every channel of every image, the blocks split over `parts` parts (part p's scratch
// at workspace + p * scratch_floats).
void run_depthwise_planes_nhwc(DepthwisePlaneFn fn, const DepthwisePlanesNhwc& a, int parts,
                               float* workspace, int64_t scratch_floats);

// Floats per row of a plane's scratch: the padded row, or for stride 2 its even columns then
// its odd ones, each (w + 2P + 1) / 2 long. (static: the per-ISA sources use it too, and must
// not share inline code with other levels.)
static constexpr int64_t depthwise_scratch_row(int64_t w, int64_t k, int64_t stride) {
  const int64_t padded = w + 2 * (k / 2);
  return stride == 1 ? padded : 2 * ((padded + 1) / 2);
}

}  // namespace minfer::cpu
