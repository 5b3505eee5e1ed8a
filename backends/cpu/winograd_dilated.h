// Dilated 3x3 stride-1 convolutions (dilation d, d of padding: the backbones of FCN and
// DeepLabv3 with ResNets, whose last stages trade strides for dilations 2 and 4) as Winograd
// F(4x4, 3x3): output pixel (i * d + a, j * d + b) reads only input pixels of the same phase
// (a, b), so the conv is d x d undilated 3x3 convs, one on each phase plane (every d-th row
// and column from (a, b)), with 1 of padding. The phases of each image are gathered into a
// batch of d * d planes (the plane extended with zeros to a multiple of d, which is the
// padding they would read there), run through WinogradConv, and scattered back; the residual
// is gathered the same way, so that the epilogue stays in WinogradConv's output transform.
// im2col + GEMM did 2.25x the multiplications and copied every activation 9 times.
#pragma once

#include <cstdint>

#include "backends/cpu/conv_shape.h"
#include "backends/cpu/epilogue.h"
#include "backends/cpu/winograd.h"
#include "minfer/kernel.h"

namespace minfer::cpu {

class DilatedWinograd {
 public:
  using Shape = Conv2dShape;

  // Whether it takes the conv: 3x3, stride 1, the same dilation d > 1 on both dims, d of
  // padding before each dim and an output of the input's size, and phase planes that
  // winograd_pays().
  static bool pays(const Shape& s);

  // Packs the weights through WinogradConv and returns the workspace floats a run needs with
  // `threads` threads (the phase planes, then WinogradConv's per-thread scratch).
  int64_t prepare(PrepareContext& ctx, const Shape& s, const float* weights, bool residual,
                  int threads);
  // y = act(conv(x) + b + z); b and z may be null.
  void run(const float* x, const float* b, const float* z, float* y, const Activation& act,
           float* workspace, int threads) const;
  const char* isa() const { return winograd_.isa(); }

 private:
  static WinogradShape phase_shape(const Shape& s);
  // x [n, c, h, w] -> its phases [n * d * d, c, ph, pw] (zero past the plane), or back.
  void gather(const float* x, int64_t c, float* phases, int threads) const;
  void scatter(const float* phases, int64_t c, float* y, int threads) const;

  Shape s_{};
  int64_t d_ = 1, ph_ = 0, pw_ = 0;  // the dilation and a phase plane's size
  int64_t slice_ = 0;                // WinogradConv's floats per thread
  bool residual_ = false;            // the workspace holds the residual's phases
  WinogradConv winograd_;
};

}  // namespace minfer::cpu
