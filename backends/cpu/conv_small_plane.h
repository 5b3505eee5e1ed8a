// Convolutions with a small output plane (7x7: the last stage of ResNets) computed with the
// output channels as the vector lanes:
//
//   Y^T [p, M] = im2col(X)^T [p, K] * W^T [K, M]        (p = output positions of an image)
//
// ConvGemm and Winograd put the output positions in the lanes, and 49 positions fill 49 of
// the 64 lanes of two 32-column tiles (77 %); here the 512 channels of a ResNet's last stage
// fill whole vectors and the 49 positions are 8 tiles of 6 rows and 1 of 1 (91 %). The input is
// moved to channels-last once, each position's taps are then whole rows of it (copies, tap-major
// k), the product runs on PackedRhs (W^T packed once, the bias in registers), and the epilogue
// adds the residual and applies the activation while moving the result back to NCHW.
//
// A 3x3 stride-1 conv runs as Winograd F(2x2, 3x3) on the same layout where that saves enough
// multiplications (a 7x7 plane: 16 tiles of 2x2 outputs, 16 x 16 products per channel pair
// instead of 49 x 9, 1.7x fewer): the 4x4 input tiles are transformed with the channels in the
// lanes into 16 matrices V_e [tiles, C], each multiplied by its transformed weights U_e^T
// [C, M] on PackedRhs, and each tile's 16 products transformed back to 2x2 outputs plus the
// bias. F(4x4, 3x3) (winograd.h) would need 36 weight matrices, 4x the weights, for 4 tiles.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backends/cpu/conv_shape.h"
#include "backends/cpu/epilogue.h"
#include "backends/cpu/packed_rhs_gemm.h"
#include "minfer/kernel.h"

namespace minfer::cpu {

// False when the environment sets MINFER_CPU_SMALL_PLANE=0 (A/B benchmarks).
bool small_plane_enabled();

class SmallPlaneConv {
 public:
  using Shape = Conv2dShape;

  // Whether it beats the position-lane tiles, for an output plane of at most 128 positions (the
  // output channels any number; F(2x2, 3x3) takes whole 16-lane vectors of them). (Up to 64
  // before: with 9x9 to 11x11 planes, Inception v3 at 96x96 ran 12 % faster at 1 thread and 7 %
  // at 2, ResNet-18 at 320x320 (10x10) 18 %, ResNet-50 at 288x288 (9x9) 2 %; Zen 5.) Either
  // - a plane that `tile_columns`-wide tiles would leave lanes of (or that F(2x2, 3x3) takes: a
  //   ResNet's 3x3 convs on 8x8, a 256x256 input's last stage), at least 64 output channels and
  //   at least 300 multiply-adds per value moved (the input to channels-last, the output back).
  //   Measured on a Zen 4 (in-model, in-process A/B): ResNet's 3x3 convs (4608 per moved value)
  //   and ResNet-50's 2048 -> 512 1x1 (500) ran 5-20 % faster; EfficientNet-B0's 1152 -> 192
  //   (165) 2-3 % slower; its 1x1 convs to 2048 channels (410; 341 at stride 2) 3-6 % faster
  //   once PackedRhs asked for B ahead of its row tiles;
  // - or what it saves against the tiles, at least 92 multiply-adds per moved value: they fill
  //   p of the lanes of the vectors of 16 that p positions take, so it saves products x (1 /
  //   that share - its own products per theirs, 16 per 2x2 tile against 9 per position for
  //   F(2x2, 3x3), else 1). On a Zen 5 (1 thread, 64x64 inputs): DenseNet-121's 3x3 convs of
  //   128 -> 32 channels on 8x8, 4x4 and 2x2 planes 2.7-3.5x faster (F(2x2, 3x3), 0.56 x 230
  //   per moved value), its 1x1 convs to 128 channels on 2x2 planes (4 of 16 lanes, 3 x 110)
  //   2.5x faster and GoogLeNet's 1.6-2.6x; on 4x4 planes (16 of 16: nothing saved, and below
  //   300) they stay on the tiles, where they ran 1.35x faster. SqueezeNet's classifier, 512 ->
  //   1000 channels on 3x3 (9 of 32 lanes), 0.085 -> 0.045 ms at 1 thread of a Zen 5.
  static bool pays(const Shape& s, int64_t tile_columns);
  // Whether a conv that pays() runs as F(2x2, 3x3): 3x3 stride 1, at least a third fewer
  // multiplications, output channels in whole 16-lane vectors, at least kMinWinogradTiles
  // tiles in all images, Winograd not turned off
  // (MINFER_CPU_WINOGRAD=0). On fewer tiles the products are matrix-vector ones that stream
  // their weights, 16/9 of the direct product's: a 2x2 plane's 3x3 conv of 192 -> 384 channels
  // (GoogLeNet's last stage at a 64x64 input) ran 1.5x faster direct, 512 -> 512 1.6x, at 1
  // thread of a Zen 5; a 2x4 plane (2 tiles) even, 4x4 (4 tiles) 1.4x faster as F(2x2, 3x3).
  static constexpr int64_t kMinWinogradTiles = 4;
  static bool winograd_pays(const Shape& s);

  // Packs W [M, C, kh, kw] as W^T with tap-major k (shared through ctx with the session's other
  // plans) and returns the workspace floats that a run needs (all threads together).
  int64_t prepare(PrepareContext& ctx, const Shape& s, const float* weights);
  // y = act(conv(x) + b + z); b and z may be null.
  void run(const float* x, const float* b, const float* z, float* y, const Activation& act,
           float* workspace, int threads) const;
  Isa isa() const { return winograd_ ? (*u_)[0].isa() : w_->isa(); }
  bool winograd() const { return winograd_; }

 private:
  int64_t k() const { return s_.c * s_.kh * s_.kw; }
  int64_t positions() const { return s_.oh * s_.ow; }
  // The taps of every output position of one image, [p, K] (k = tap * C + channel), from its
  // channels-last copy xt [h * w, C]: padding taps are zeros.
  void gather_taps(const float* xt, float* col, int threads) const;

  int64_t winograd_tiles() const { return tiles_h_ * tiles_w_; }
  // The row stride of V_e: a cache line more than C, so that the tiles' rows, which the
  // product reads side by side, do not fall on the same few L1 sets (C = 512: 2 KB apart).
  int64_t v_stride() const { return s_.c + 16; }
  // The pixel stride of the channels-last input, likewise: the transpose into it writes 8
  // pixels at a time, which 4 KB apart (C = 1024) took it 2.6x longer.
  int64_t xt_stride() const { return s_.c + 16; }
  // F(2x2, 3x3) in three steps over the channels-last input xt: the 16 matrices V_e [tiles, C]
  // (v: e-major), the products M_e = V_e U_e^T [tiles, M] (mo), and the outputs [p, M] with the
  // bias (out).
  void winograd_input(const float* xt, float* v, int threads) const;
  void winograd_products(const float* v, float* mo, int threads) const;
  void winograd_output(const float* mo, const float* b, float* out, int threads) const;

  Shape s_{};
  f32::Transpose transpose_ = nullptr;  // into and out of channels-last, at the tiles' level
  bool direct_rows_ = false;  // 1x1, stride 1, no padding: the channels-last copy is the operand
  std::shared_ptr<const PackedRhs> w_;
  bool winograd_ = false;
  int64_t tiles_h_ = 0, tiles_w_ = 0;
  std::shared_ptr<const std::vector<PackedRhs>> u_;  // U_e = (G g G^T)_e as [M, C], e < 16
};

}  // namespace minfer::cpu
