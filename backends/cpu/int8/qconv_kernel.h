// CPU kernel of com.minfer:QConv (NHWC) and com.minfer:QGemm: a GEMM over output pixels
// (rows) x output channels, per group, on the int8 GEMM core (qgemm.h), with the requantize /
// residual / activation epilogue applied while the tile is in registers' reach.
//
// Undilated convs of more than one tap (not on AMX) are implicit GEMMs: the input is copied
// once in the packed format (x ^ 0x80, or widened) with its padding around it (a grouped
// conv's, a copy per group of its channels), and a tile of adjacent output pixels reads each
// kernel row's taps in place, one run per kernel row (no im2col: int8 ResNet-18's 56x56 3x3
// convs spent 9 % of their time gathering it, its 7x7 stem on 3 channels 24 %; int8
// ResNeXt-50's grouped 3x3 convs, gathered per group, 63 % of its convs' time: 25.1 -> 12.1 ms
// at 1 thread of a Zen 5). Blocks of at most half a tile's channels (a group's 4-16) take the
// narrow tiles. MINFER_CPU_INT8_IMPLICIT=0 turns this off (prepare() has the exceptions: too
// short tiles, too much lane padding, too large a copy).
// Taps in the padding are skipped where whole kernel rows or columns fall in it: the top and
// bottom output rows run fewer kernel rows, and the left and right output columns, in tiles
// down the plane, fewer kernel columns (a 14x14 plane's 3x3 convs 7 % faster, 7x7 ones 14 %;
// MINFER_CPU_INT8_EDGE_COLUMNS=0 turns the columns off).
// The others are im2col GEMMs: rows are processed in blocks whose packed activations fit in
// L2; each block is packed once (im2col + widening) and multiplied by every weight block of
// the group. Threads take (row block, group, channel range) tasks; packed weights are made
// once at prepare.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "backends/cpu/int8/qgemm.h"
#include "backends/cpu/int8/requant.h"
#include "minfer/kernel.h"

namespace minfer::cpu {

class QConvKernel final : public Kernel {
 public:
  // QConv with layout NHWC and 2 spatial dims, or QGemm; constant int8 weights (and int32
  // bias); an ISA path this CPU has.
  static bool supports(const PrepareContext& ctx);

  void prepare(PrepareContext& ctx) override;
  void run(RunContext& ctx) const override;
  std::string variant() const override;  // the ISA level, e.g. "avx512vnni"

 private:
  struct Dims {
    int64_t n = 1, h = 1, w = 1, c = 1;  // input (NHWC)
    int64_t oh = 1, ow = 1, m = 1;       // output
    int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, pad_t = 0, pad_l = 0;
    int64_t group = 1, cg = 1, mg = 1;
    int64_t k() const { return kh * kw * cg; }
    int64_t rows() const { return n * oh * ow; }
  };

  // An output pixel (row p of the GEMM), stepped along the rows without dividing.
  struct Pixel {
    int64_t n, oy, ox;
    void next(const Dims& d) {
      if (++ox < d.ow) return;
      ox = 0;
      if (++oy < d.oh) return;
      oy = 0;
      ++n;
    }
  };
  // The implicit GEMM's edge pixels (prepare_edge_rows, prepare_edge_columns): an output row's
  // kernel rows, or an output column's kernel columns, inside the image, and the init that
  // holds the skipped taps' constant (padded as Packed::init).
  struct KernelRows {
    int64_t ky0, ky1;
    std::vector<int32_t> init;  // init_without()
  };
  struct EdgeColumn {
    int64_t ox, kx0, kx1;
    std::vector<int32_t> init;
  };

  // Packs row p (pixel `at`) of group g into the GEMM's activation layout at `out`: the input
  // row of a plain 1x1, else its im2col taps gathered run by run.
  void pack_row(const int8_t* x, int64_t p, const Pixel& at, int64_t g, uint8_t* out) const;
  // Rows [p0, p1) of group g so, one after another from `a`.
  void pack_rows(const int8_t* x, int64_t p0, int64_t p1, int64_t g, uint8_t* a) const;
  void run_task(const int8_t* x, const int8_t* z, void* y, int64_t p0, int64_t p1, int64_t g,
                int64_t b0, int64_t b1, uint8_t* workspace) const;
  // The micro-kernel for channel block b of a pack, and its rows per tile.
  struct BlockTile {
    q8::MicroKernel fn;
    int64_t mr;
  };
  BlockTile block_tile(int64_t b) const;
  // Writes tile c (rows x nr int32 sums) of output pixels [p, p + rows), channel block b of
  // group g: requantized to int8 (rq = rq_.params(), plus the residual z) or dequantized.
  // Its rows' pixels are pixel_step apart (an edge column's: a row of the output).
  void store_tile(const q8::RequantParams& rq, int32_t* c, int rows, int64_t p, int64_t g,
                  int64_t b, const int8_t* z, void* y, int64_t pixel_step = 1) const;

  // The implicit GEMM: the padded copy of every image (pad_h_ x pad_w_ pixels; of each group,
  // group after group), then output rows [y0, y1) (of n * oh) times channel blocks [b0, b1)
  // (of every group's blocks, group after group).
  void pad_input(const int8_t* x, uint8_t* padded, int threads) const;
  // A pixel of the copy: its pack's channels (each pack's pixels are a copy of their own).
  int64_t pixel_bytes() const { return d_.cg * interleave_ * (4 / kern_->kstep); }
  // Packs of interleave_ groups, the unit of the packed weights and of the copy: its lanes
  // (output channels), lane l computing the pack's channel pack_channel(l).
  int64_t packs() const { return d_.group / interleave_; }
  int64_t pack_lanes() const { return d_.mg * interleave_; }
  int64_t pack_channel(int64_t l) const { return l % interleave_ * d_.mg + l / interleave_; }
  void run_rows(const uint8_t* padded, const int8_t* z, void* y, int64_t y0, int64_t y1, int64_t b0,
                int64_t b1) const;
  void run_implicit(const int8_t* x, const int8_t* z, void* y, uint8_t* padded, int threads) const;
  // Edge column `column` of output rows [y0, y1), channel block b of group g (whose copy is at
  // padded); c is the tile buffer.
  void run_column(const uint8_t* padded, const EdgeColumn& column, const q8::RequantParams& rq,
                  const int8_t* z, void* y, int64_t y0, int64_t y1, int64_t g, int64_t b,
                  int32_t* c) const;
  // The implicit GEMM's output pixels whose taps reach into the padding skip those taps (all
  // zero points, adding only a constant per channel, which goes into their init instead).
  // Rows at the image's top and bottom skip kernel rows; pixels at its left and right edges
  // (edge columns) run down the plane in tiles of their own, skipping kernel columns, where the
  // other pixels' tiles keep enough rows.
  void prepare_edge_rows();
  void prepare_edge_columns();
  // The init of the packed weights less the taps outside [ky0, ky1) x [kx0, kx1): every
  // group's, one after another (each padded as Packed::init).
  std::vector<int32_t> init_without(int64_t ky0, int64_t ky1, int64_t kx0, int64_t kx1) const;

  Dims d_;
  bool direct_rows_ = false;       // 1x1, stride 1, no padding, one group: rows are the input
  bool signed_rows_ = false;       // and the tiles read them in place (TileRows::signed_rows)
  bool contiguous_taps_ = false;   // dilation 1 along x, one group: a kernel row is one run
  bool implicit_ = false;          // kernel rows read in place from a padded copy of the input
  int64_t interleave_ = 1;         // groups side by side in a tile's lanes (implicit only)
  int64_t pad_h_ = 0, pad_w_ = 0;  // that copy's pixels per image (the taps' extent)
  int64_t padded_bytes_ = 0;       // the copy's size (all images)
  int64_t run_lanes_ = 0;          // lanes per kernel row (whole, and padded where they end)
  std::vector<KernelRows> edge_rows_;  // one per range other than [0, kh)
  std::vector<int> edge_of_row_;       // per output row oy: its range in edge_rows_, or -1
  std::vector<EdgeColumn> edge_columns_;
  int64_t inner_ox0_ = 0, inner_ox1_ = 0;  // the other output columns, [ox0, ox1)
  const q8::MicroKernels* kern_ = nullptr;  // the ISA level's micro-kernel and its geometry
  q8::RequantTile requant_ = nullptr;       // and its output stage
  struct Packed {
    std::vector<q8::PackedWeights> weights;  // per pack of groups
    std::vector<std::vector<int32_t>> init;  // per pack: bias - offset * row sums, padded
    std::vector<int64_t> tap_sums;  // per channel j and tap t, [j * kh * kw + t]
  };
  std::shared_ptr<const Packed> packed_;  // shared by the session's plans of every shape
  q8::Requant rq_;
  int32_t x_zero_point_ = 0;
  int64_t kq_ = 0, a_stride_ = 0, block_rows_ = 0;
  int64_t sweep_rows_ = 0;  // a row block's rows per pass over the weight blocks (run_task)
  size_t per_thread_bytes_ = 0;
  int threads_ = 1;
};

}  // namespace minfer::cpu
