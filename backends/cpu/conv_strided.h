// Strided convolutions (a ResNet's 3x3 stride-2 convs and its 7x7 stem) and grouped ones (a
// ResNeXt's 3x3 convs of 4-32 channels a group, stride 1 or 2) as an implicit GEMM with the
// output channels in the vector lanes:
//
//   Y^T [p, M] = im2col(X)^T [p, K] * W^T [K, M]        (p = output positions of an image)
//
// (per group: K = the group's channels x kh x kw) without the im2col: the input is copied once
// into zero-padded NCHW planes, and a tile of up to 14 positions of an output row (up to 8 of a
// longer row; sw floats apart in a row of that copy; on 16 registers, up to 6, which may end
// one row and start the next) broadcasts each position's input per step of (channel, ky, kx)
// against the step's weights of 2 vectors of output channels (backends/cpu/isa/
// strided_conv.cpp). Groups of fewer output channels than a vector's lanes share a vector, 2
// or 4 of them side by side, their padded planes interleaved likewise so that one load
// broadcasts all of their inputs. The weights are packed once into blocks of those channels,
// k-major; the tile's sums go to NCHW through 8 x 8 transposes with the bias, the residual and
// the clamp. ConvGemm (output positions in the lanes) wrote and re-read a [K, p] im2col matrix
// for these convs (1152 x 784 floats for ResNet-50's 28x28 one) and left lanes of its tiles
// empty on 14x14 planes; for a grouped conv it ran one small product per group (ResNeXt-50's
// 3x3 convs at 45 GFLOP/s).
#pragma once

#include <cstdint>
#include <memory>

#include "backends/cpu/conv_shape.h"
#include "backends/cpu/epilogue.h"
#include "backends/cpu/isa.h"
#include "backends/cpu/isa/isa_kernels.h"
#include "minfer/kernel.h"

namespace minfer::cpu {

// Whether the path is offered: on AMD CPUs, unless the environment sets MINFER_CPU_STRIDED=0;
// =1 offers it on any CPU (A/B benchmarks, tests).
bool strided_conv_enabled();
// Whether grouped convs are offered to it (MINFER_CPU_GROUPED=0 turns them off).
bool grouped_conv_enabled();

class StridedConv {
 public:
  using Shape = Conv2dShape;

  // Whether it takes the conv at ISA level `isa`: no dilation, a kernel larger than 1x1, and
  // either groups (of at least kMinGroupDepth steps, column stride 1 or 2) or a depth of at
  // least kMinDepth and a column stride of 2 with more than kMaxSmallPlane output positions
  // (smaller planes are SmallPlaneConv's), on any level, or of 1 with more than
  // kMinStride1Plane (all of SmallPlaneConv's range) on the 512-bit levels (see
  // conv_strided.cpp for the measurements).
  static constexpr int64_t kMinDepth = 64, kMaxSmallPlane = 64, kMinGroupDepth = 36;
  static constexpr int64_t kMinStride1Plane = 128;
  static bool pays(const Shape& s, Isa isa);
  // Whether blocks that 512-bit vectors fill poorly (two groups of 8 channels, 17-24 channels)
  // run on 256-bit vectors (StridedRows::halves): on CPUs that split 512-bit operations
  // (cpu_splits_512_bit), unless the environment sets MINFER_CPU_STRIDED_HALVES=0; =1 turns it
  // on anywhere (tests, A/B benchmarks).
  static bool halves_pay();

  // Packs W [M, C, kh, kw] (shared through ctx with the session's other plans) and returns the
  // workspace floats that a run needs (all threads together).
  int64_t prepare(PrepareContext& ctx, const Shape& s, const float* weights);
  // y = act(conv(x) + b + z); b and z may be null.
  void run(const float* x, const float* b, const float* z, float* y, const Activation& act,
           float* workspace, int threads) const;
  Isa isa() const { return kernels_->isa; }

 private:
  // The output rows whose input rows (s.sh new rows of every channel each) fit in kBandBytes:
  // where the whole input outgrows L2 (ResNet-50's 56x56 -> 28x28 conv of 128 channels, 1.7
  // MB), each block of channels otherwise streamed all of it from L3 (at MINFER_ISA=avx2, 8
  // blocks of 16 channels, 2 threads: 0.94 -> 0.90 of Eigen's path's time; even on AVX-512).
  static constexpr int64_t kBandBytes = int64_t{256} << 10;
  int64_t band_rows() const;
  // The output rows whose positions are cut into tiles together, where the tiles may span rows
  // (kernels.spans_rows): the fewest, up to kMaxSpan, that fill the tiles best. At
  // MINFER_ISA=avx2 (tiles of 6) rows of 14 went as 5, 5, 4: 3 rows of them make 7 tiles of 6
  // (ResNet-50's 3x3 conv of 256 channels, 28x28 -> 14x14, alone at 1 thread of a Zen 5: 2.00
  // -> 1.89 ms; its 28x28 output, rows of 6, 6, 6, 5, 5, 0.98 of the time in the model).
  static constexpr int64_t kMaxSpan = 3;
  static int64_t span_rows(int64_t width, const f32::StridedConvKernels& kernels);
  // The output rows of a unit of work: span_, or for grouped convs as many whole spans as leave
  // about 8 units a thread.
  int64_t unit_rows(int threads) const;
  // The padded copy of one image: per plane ph_ rows of pw_ positions (of interleave_ floats),
  // plane_ floats apart.
  void pad_image(const float* x, float* xp, int threads) const;

  int64_t k() const { return s_.c / s_.group * s_.kh * s_.kw; }  // a group's steps
  // The padded copy's planes: one per input channel, or with interleaved groups one per
  // channel of each block of groups.
  int64_t planes() const;

  Shape s_{};
  const f32::StridedConvKernels* kernels_ = nullptr;
  const f32::PaddedPlaneKernels* pad_ = nullptr;
  // Groups of fewer output channels than a vector's lanes (a divisor of them) go 2 or 4 to a
  // block, side by side in the lanes and in the padded copy (StridedRows::interleave); else 1.
  int64_t interleave_ = 1;
  bool halves_ = false;       // halves_pay(), on a 512-bit level
  int64_t group_blocks_ = 1;  // blocks per group, where interleave_ is 1
  int64_t blocks_ = 1;
  int64_t ph_ = 0, pw_ = 0, plane_ = 0;
  int64_t span_ = 1;  // span_rows()
  // Blocks of kernels_->nr output channels, each K steps of nr floats (zeros past M), 64-byte
  // aligned (sharing the ownership of the session's packing).
  std::shared_ptr<const float> w_;
  // Weights larger than this come from memory in a model's run (as ConvGemm's: conv_gemm.h).
  static constexpr size_t kPrefetchBytes = size_t{128} << 10;
  bool prefetch_ = false;
};

}  // namespace minfer::cpu
