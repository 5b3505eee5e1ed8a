// Dilated convolutions whose taps read only padding over much of the output: DeepLabv3's ASPP
// branches (3x3 at rates 12, 24 and 36) on the 33x33 plane of a 520x520 input, where at rate 24
// only the centre tap reads the input for 15 of the 33 rows and columns. The output plane is
// cut into rectangles in each of which the same kernel rows and columns read the input (bands of
// rows by bands of columns, found per dim by taps_in); in each rectangle the conv is the sum,
// over those taps only, of W_t [M, C] * X_t [C, positions], X_t the input shifted by tap t
// (inside the plane there: no padding to copy), one ConvGemm per tap accumulating a tile of the
// rectangle's positions in a scratch (the bias with the first tap, the activation with the
// last), which is then copied into the output's rows. Each tap's weights are packed once,
// [M, C]: together no more than the conv's. The im2col path computed every tap at every
// position, most of them on zeros.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backends/cpu/conv_gemm.h"
#include "backends/cpu/conv_shape.h"
#include "backends/cpu/epilogue.h"
#include "minfer/kernel.h"

namespace minfer::cpu {

class RegionConv {
 public:
  using Shape = Conv2dShape;

  // Whether it takes the conv: dilated, and the taps that read the input at most kMaxLive of
  // the conv's taps times positions. (Callers check has_any_isa(), one group, no residual.)
  static constexpr double kMaxLive = 0.75;
  static bool pays(const Shape& s);

  // Packs W [M, C, kh, kw] per tap (shared through ctx with the session's other plans) and
  // returns the workspace floats that one thread needs.
  int64_t prepare(PrepareContext& ctx, const Shape& s, const float* weights);
  // y = act(conv(x) + b); b may be null. workspace: `threads` times prepare's floats.
  void run(const float* x, const float* b, float* y, const Activation& act, float* workspace,
           int threads) const;
  Isa isa() const { return (*gemms_)[0].isa(); }

 private:
  // Output rows (or columns) [o0, o1), which read the input through kernel rows (or columns)
  // [t0, t1) only.
  struct Band {
    int64_t o0, o1, t0, t1;
  };
  static std::vector<Band> bands(int64_t in, int64_t out, int64_t k, int64_t stride,
                                 int64_t dilation, int64_t pad);
  struct Region {
    Band rows, cols;
    int64_t first_unit;  // its first tile's index among an image's tiles
  };
  // Tap (i, j)'s input rows [C, np] for positions [pos0, pos0 + np) of region r (row-major in
  // it), into col (row stride np).
  void tap_columns(const float* x, const Region& r, int64_t i, int64_t j, int64_t pos0, int64_t np,
                   float* col) const;

  int64_t slice_floats() const;  // one thread's workspace

  Shape s_{};
  std::vector<Region> regions_;
  int64_t units_ = 0;  // tiles per image
  int64_t tile_ = 0;   // positions per tile
  int64_t col_floats_ = 0, out_floats_ = 0;
  std::shared_ptr<const std::vector<ConvGemm>> gemms_;  // per tap, i * kw + j
};

}  // namespace minfer::cpu
