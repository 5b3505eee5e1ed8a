#include "backends/cpu/int8/qconv_kernel.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <string>

#include "backends/cpu/env_switch.h"
#include "backends/cpu/parallel.h"
#include "ops/conv_geometry.h"
#include "ops/int8/int8_ops.h"
#include "ops/op_util.h"

namespace minfer::cpu {

namespace {

constexpr int64_t kBlockBytes = 192 * 1024;  // packed activation rows per block: about half an L2
// A conv with a residual passes over every weight block with this many bytes of rows at a
// time, where the weights stay in cache: the rows' activations, outputs and residual, of
// which each weight block takes a 32-byte column, stay in L1 until the next block fills the
// rest of their cache lines. (A third of the smallest L1d, 32 KB.) Int8 ResNet-50's residual
// convs 3 % faster at batch 1 (28x28) and 4-14 % at batch 8; without a residual, where all
// rows pass each block in turn, up to 5 % slower this way (Zen 5).
constexpr int64_t kSweepBytes = 16 * 1024;
// The largest padded input copy of the implicit GEMM (beyond it, im2col's bounded blocks).
constexpr int64_t kMaxPaddedBytes = int64_t{32} << 20;

bool implicit_enabled() { return env_switch("MINFER_CPU_INT8_IMPLICIT", true); }
bool edge_columns_enabled() { return env_switch("MINFER_CPU_INT8_EDGE_COLUMNS", true); }
bool signed_rows_enabled() { return env_switch("MINFER_CPU_INT8_SIGNED_ROWS", cpu_is_amd()); }
bool interleave_enabled() { return env_switch("MINFER_CPU_INT8_INTERLEAVE", true); }

// Weights of more than this come from memory in a model's run (they do not stay cached from
// one run to the next), and a block's first tile would read them faster than they come: each
// tile of a block asks for its share of the next block as it goes (TileRows::prefetch), so
// that the next block is in L2 when its tiles start. A 7x7 plane's 3x3 conv (2.36 MB of
// weights): 0.27 -> 0.24 ms where a model's weights outgrow the caches, unchanged where they
// do not; ResNet-50's 14x14 1x1 convs of 256 KB 3-10 % faster than with 256 KB here (Zen 5).
constexpr size_t kPrefetchBytes = size_t{192} << 10;

// Tile `call` of the `calls` of a block: its share of weight block `next` into `rows`, or none
// where next is past `end`.
void share_of_next(const q8::PackedWeights& pw, int64_t next, int64_t end, int64_t call,
                   int64_t calls, q8::TileRows& rows) {
  if (next >= end) {
    rows.prefetch_lines = 0;
    return;
  }
  const int64_t lines = static_cast<int64_t>(pw.block_bytes()) / 64;
  const int64_t l0 = lines * call / calls, l1 = lines * (call + 1) / calls;
  rows.prefetch = pw.block(next) + l0 * 64;
  rows.prefetch_lines = l1 - l0;
}

// rank 0: any rank of at least 2 (QGemm's A: rows of K).
bool static_i8(const TensorInfo& t, size_t rank) {
  const size_t r = t.shape.rank();
  return t.present && t.dtype == DType::i8 && t.shape.is_static() && (rank ? r == rank : r >= 2);
}

}  // namespace

bool QConvKernel::supports(const PrepareContext& ctx) {
  if (!has_any_isa()) return false;
  const bool gemm = ctx.node.op_type == "QGemm";
  const size_t rank = gemm ? 2 : 4;
  if (ctx.inputs.size() < 2 || !static_i8(ctx.inputs[0], gemm ? 0 : 4) ||
      !static_i8(ctx.inputs[1], rank) || !ctx.inputs[1].constant)
    return false;
  if (!gemm && ctx.node.attrs.get_string("layout", "NCHW") != "NHWC") return false;
  if (ctx.inputs.size() > 2 && ctx.inputs[2].present &&
      (ctx.inputs[2].dtype != DType::i32 || !ctx.inputs[2].constant))
    return false;
  if (ctx.inputs.size() > 3 && ctx.inputs[3].present &&
      (!static_i8(ctx.inputs[3], rank) || ctx.inputs[3].shape != ctx.outputs[0].shape))
    return false;
  return true;
}

void QConvKernel::prepare(PrepareContext& ctx) {
  const Node& node = ctx.node;
  const bool gemm = node.op_type == "QGemm";
  const Shape& xs = ctx.inputs[0].shape;
  const Tensor& w = *ctx.inputs[1].constant;
  if (gemm) {  // A's rows (all dims but the last) as the pixels of a 1x1 conv
    d_.c = xs.dims().back();
    d_.n = dims_product(xs, 0, xs.rank() - 1);
    d_.m = w.dim(0);
    d_.cg = d_.c;
    d_.mg = d_.m;
    if (w.dim(1) != d_.c)
      ctx.fail("weight has " + std::to_string(w.dim(1)) + " columns, A has " +
               std::to_string(d_.c));
  } else {
    ConvGeometry g = conv_geometry(node, int8::nhwc_to_nchw_shape(xs), w.shape());
    if (g.rank() != 2) ctx.fail("the CPU QConv kernel supports 2-D convolutions");
    d_.n = xs[0];
    d_.h = xs[1];
    d_.w = xs[2];
    d_.c = xs[3];
    d_.oh = g.out_h();
    d_.ow = g.out_w();
    d_.m = g.out_channels;
    d_.kh = g.kernel_h();
    d_.kw = g.kernel_w();
    d_.sh = g.stride_h();
    d_.sw = g.stride_w();
    d_.dh = g.dilation_h();
    d_.dw = g.dilation_w();
    d_.pad_t = g.pad_top();
    d_.pad_l = g.pad_left();
    d_.group = g.group;
    d_.cg = g.in_channels_per_group();
    d_.mg = g.out_channels_per_group();
  }
  contiguous_taps_ = d_.dw == 1 && d_.group == 1;
  direct_rows_ = gemm || (d_.kh == 1 && d_.kw == 1 && d_.sh == 1 && d_.sw == 1 && d_.pad_t == 0 &&
                          d_.pad_l == 0 && d_.group == 1);
  const bool residual = !gemm && ctx.inputs.size() > 3 && ctx.inputs[3].present;
  rq_ = q8::make_requant(node, int8::parse_output_stage(node, d_.m, residual), d_.m);
  // Each tile reads its residual just before storing its outputs over it (store_tile): the
  // output may take the residual's buffer (int8 ResNet-50 at batch 8 4 % faster, Zen 5).
  if (residual) ctx.overwrites_input = 3;
  x_zero_point_ = int8::x_zero_point(node);

  // AMX's tiles take 64 bytes of k and 16 channels a row: a grouped conv's rows (ResNeXt's 36
  // bytes, 4 channels a group) would fill a sixteenth of them, on im2col copies. Grouped convs
  // take the VNNI level's implicit GEMM there (int8 ResNeXt-50 at 1 thread of a Sapphire
  // Rapids: see docs/performance.md).
  const Isa isa = d_.group > 1 && active_isa() == Isa::amx ? Isa::avx512_vnni : active_isa();
  kern_ = &q8::micro_kernels(isa);
  requant_ = q8::requant_kernels(kern_->isa).tile;
  const q8::MicroKernels& geo = *kern_;
  const int64_t K = d_.k();

  // The implicit GEMM: each kernel row's taps (kw adjacent pixels of all channels) are one
  // run of the padded copy, in whole lanes: where a run ends inside a lane (a stem's 7 x 3
  // channels, 21 bytes), its weights are padded with zeros to the lane's end, and the lane
  // reads the next pixel's first bytes to no effect. AMX's tiles read one run per row.
  const int64_t bytes_per_x = 4 / geo.kstep;
  pad_h_ = (d_.oh - 1) * d_.sh + d_.kh;
  pad_w_ = (d_.ow - 1) * d_.sw + d_.kw;
  const int64_t padded_bytes = d_.n * pad_h_ * pad_w_ * d_.c * bytes_per_x;
  run_lanes_ = (d_.kw * d_.cg * bytes_per_x + 3) / 4;
  // Its tiles stay within an output row. On the VNNI levels each accumulator is a chain of
  // dependent vpdpbusd (latency 4-5): a tile of fewer than 5 rows (10 chains) waits on them,
  // as the 256-bit level's 6-row tiles would cut a 7x7 plane's rows (4 + 3; int8 ResNet-18
  // slower at avxvnni on a Xeon). im2col's tiles run on across output rows.
  const int64_t row_tiles = (d_.ow + geo.mr - 1) / geo.mr;
  const bool chains_covered = geo.kstep == 2 || d_.ow / row_tiles >= 5;
  // Padded runs add work: at most half again as many lanes as im2col's rows (ResNet's stem: 42
  // for 37; MobileNet's and EfficientNet's 3x3 stride-2 stems: 9 for 7, where im2col's rows
  // of 3 runs of 9 bytes took twice the time of the products).
  const bool few_pad_lanes = 2 * d_.kh * run_lanes_ <= 3 * q8::k_steps(geo, K);
  // (Grouped convs too: the copy holds each group's channels apart, so that a kernel row's taps
  // of one group are one run.)
  implicit_ = !gemm && !direct_rows_ && d_.dw == 1 && d_.dh == 1 && d_.kh * d_.kw > 1 &&
              geo.kq_align == 1 && few_pad_lanes && chains_covered &&
              padded_bytes <= kMaxPaddedBytes && implicit_enabled();
  // Weight rows of k_row values per kernel row: kw * cg, or whole lanes of them.
  const int64_t k_row = implicit_ ? run_lanes_ * geo.kstep : d_.kw * d_.cg;
  const int64_t k_packed = d_.kh * k_row;
  // Groups of fewer channels than the narrow tile's lanes go 2 or 4 to a tile, side by side in
  // its lanes (TileRows::interleave), where each lane step of the copy's pixel then holds theirs
  // in turn: a step of one 4-byte lane per group (the copy's pixels as the input's) or of two
  // (two groups' 2 x 2 lanes swapped into step order). ResNeXt's 4 and 8 channels a group on
  // the VNNI levels, 4 on avx2: int8 ResNeXt-50's 56x56 grouped convs 0.46 -> 0.12 ms, its 28x28
  // ones 0.155 -> 0.091 (1 thread of a Zen 5; at avx2 a 56x56 one 1.89 -> 0.69 ms).
  // MINFER_CPU_INT8_INTERLEAVE=0 turns it off.
  const int64_t lanes_per_group = d_.cg * bytes_per_x / 4, narrow_lanes = geo.nr / 2;
  interleave_ = 1;
  if (implicit_ && d_.group > 1 && geo.narrow && d_.cg * bytes_per_x % 4 == 0 &&
      d_.mg < narrow_lanes && narrow_lanes % d_.mg == 0 && interleave_enabled()) {
    const int64_t interleave = narrow_lanes / d_.mg;
    if (d_.group % interleave == 0 &&
        (lanes_per_group == 1 || (interleave == 2 && lanes_per_group == 2)))
      interleave_ = interleave;
  }
  kq_ = q8::k_steps(geo, k_packed);
  a_stride_ = kq_ * 4;
  padded_bytes_ = padded_bytes;

  // Weights per pack of interleave_ groups (one group where 1) as [lanes][k_packed], lane l
  // computing output channel pack_channel(l) of the pack's, k = ky * k_row + kx * cg + c: the
  // order of NHWC taps of its group.
  const int8_t* wp = w.data<int8_t>();
  const Tensor* bias =
      ctx.inputs.size() > 2 && ctx.inputs[2].present ? ctx.inputs[2].constant : nullptr;
  const int32_t offset = q8::a_offset(geo, x_zero_point_);
  const int64_t taps = d_.kh * d_.kw;
  // Depends on the ISA level and the input zero point, not on the batch.
  const Dims d = d_;
  const int nr = geo.nr;
  const int64_t lanes = pack_lanes();
  const size_t bytes = size_t(d.m) * size_t(kq_ * 4 + 8 + taps * 8);
  packed_ = ctx.share<Packed>(
      std::string("cpu.qconv.isa.") + isa_name(kern_->isa) + ".x" + std::to_string(x_zero_point_) +
          ".k" + std::to_string(k_packed) + ".i" + std::to_string(interleave_),
      bytes, [&] {
        auto packed = std::make_shared<Packed>();
        std::vector<int8_t> wg(static_cast<size_t>(lanes * k_packed), 0);
        packed->tap_sums.assign(static_cast<size_t>(d.m * taps), 0);
        for (int64_t pack = 0; pack < packs(); ++pack) {
          for (int64_t l = 0; l < lanes; ++l) {
            const int64_t m = pack * lanes + pack_channel(l);
            for (int64_t c = 0; c < d.cg; ++c)
              for (int64_t t = 0; t < taps; ++t) {
                const int8_t v = wp[(m * d.cg + c) * taps + t];
                wg[l * k_packed + t / d.kw * k_row + t % d.kw * d.cg + c] = v;
                packed->tap_sums[m * taps + t] += v;
              }
          }
          packed->weights.emplace_back(geo, wg.data(), lanes, k_packed);
          const q8::PackedWeights& pw = packed->weights.back();
          std::vector<int32_t> init(static_cast<size_t>(pw.blocks() * nr), 0);
          for (int64_t l = 0; l < lanes; ++l) {
            int64_t b = bias ? bias->data<int32_t>()[pack * lanes + pack_channel(l)] : 0;
            init[l] = int8::wrap_int32(b - int64_t{offset} * pw.row_sums()[l]);
          }
          packed->init.push_back(std::move(init));
        }
        return packed;
      });

  threads_ = std::max(1, ctx.threads);
  if (implicit_) {  // (and a line past the end for the last pixel's last lane)
    prepare_edge_rows();
    prepare_edge_columns();
    ctx.workspace_bytes = static_cast<size_t>((padded_bytes + 127) / 64 * 64);
    return;
  }
  const int64_t rows = d_.rows();
  const int64_t rows_rounded = (rows + geo.mr - 1) / geo.mr * geo.mr;
  block_rows_ = std::max<int64_t>(geo.mr, kBlockBytes / a_stride_ / geo.mr * geo.mr);
  block_rows_ = std::min(block_rows_, rows_rounded);
  // Rows of whole lanes that the tiles can read as they are, flipping their sign bits (x ^ 0x80)
  // as they go: no copy of the input. On AMD's cores, where the xor finds an idle pipe (the
  // 56x56 plane's 1x1 convs of 256 channels in int8 ResNet-50 11 % faster, MobileNet v2 3 %,
  // EfficientNet-B0 4 %; Zen 5); on Intel's it would take a product's port.
  signed_rows_ = direct_rows_ && geo.signed_rows && kq_ * 4 == d_.c && signed_rows_enabled();
  // Sweeps of whole tiles, full and narrow (kSweepBytes); without a residual, the whole block.
  const int64_t unit = geo.narrow_mr ? std::lcm(geo.mr, geo.narrow_mr) : geo.mr;
  sweep_rows_ = residual ? std::max(unit, kSweepBytes / (a_stride_ + 2 * d_.m) / unit * unit)
                         : block_rows_;
  per_thread_bytes_ =
      signed_rows_ ? 0 : static_cast<size_t>((block_rows_ * a_stride_ + 63) / 64 * 64);
  ctx.workspace_bytes = per_thread_bytes_ * threads_;
}

std::vector<int32_t> QConvKernel::init_without(int64_t ky0, int64_t ky1, int64_t kx0,
                                               int64_t kx1) const {
  // The skipped taps hold the zero point, packed as `offset`: their sum is offset times their
  // weights' (as in the init's own -offset * row sum; int32 wraps alike).
  const int32_t offset = q8::a_offset(*kern_, x_zero_point_);
  const int64_t taps = d_.kh * d_.kw;
  const std::vector<int64_t>& tap_sums = packed_->tap_sums;
  std::vector<int32_t> init;
  for (int64_t pack = 0; pack < packs(); ++pack) {
    const std::vector<int32_t>& pack_init = packed_->init[size_t(pack)];
    const size_t at = init.size();
    init.insert(init.end(), pack_init.begin(), pack_init.end());
    for (int64_t l = 0; l < pack_lanes(); ++l) {
      const int64_t m = pack * pack_lanes() + pack_channel(l);
      int64_t skipped = 0;
      for (int64_t ky = 0; ky < d_.kh; ++ky)
        for (int64_t kx = 0; kx < d_.kw; ++kx)
          if (ky < ky0 || ky >= ky1 || kx < kx0 || kx >= kx1)
            skipped += tap_sums[m * taps + ky * d_.kw + kx];
      init[at + size_t(l)] = int8::wrap_int32(init[at + size_t(l)] + int64_t{offset} * skipped);
    }
  }
  return init;
}

void QConvKernel::prepare_edge_rows() {
  edge_rows_.clear();
  edge_of_row_.assign(static_cast<size_t>(d_.oh), -1);
  for (int64_t oy = 0; oy < d_.oh; ++oy) {
    const int64_t iy0 = oy * d_.sh - d_.pad_t;
    const int64_t ky0 = std::clamp<int64_t>(-iy0, 0, d_.kh);
    const int64_t ky1 = std::clamp<int64_t>(d_.h - iy0, 0, d_.kh);
    // (A row wholly in the padding keeps its kernel rows: none would be left to run.)
    if ((ky0 == 0 && ky1 == d_.kh) || ky1 <= ky0) continue;
    auto same = [&](const KernelRows& e) { return e.ky0 == ky0 && e.ky1 == ky1; };
    auto found = std::find_if(edge_rows_.begin(), edge_rows_.end(), same);
    if (found == edge_rows_.end())
      found = edge_rows_.insert(edge_rows_.end(),
                                KernelRows{ky0, ky1, init_without(ky0, ky1, 0, d_.kw)});
    edge_of_row_[oy] = static_cast<int>(found - edge_rows_.begin());
  }
}

void QConvKernel::prepare_edge_columns() {
  edge_columns_.clear();
  inner_ox0_ = 0;
  inner_ox1_ = d_.ow;
  // Kernel columns start on whole lanes only where a pixel is whole lanes.
  if (pixel_bytes() % 4 != 0 || !edge_columns_enabled()) return;
  auto kernel_columns = [&](int64_t ox) {
    const int64_t ix0 = ox * d_.sw - d_.pad_l;
    return std::pair{std::clamp<int64_t>(-ix0, 0, d_.kw),
                     std::clamp<int64_t>(d_.w - ix0, 0, d_.kw)};
  };
  auto at_edge = [&](int64_t ox) {
    auto [kx0, kx1] = kernel_columns(ox);
    return (kx0 > 0 || kx1 < d_.kw) && kx0 < kx1;
  };
  int64_t ox0 = 0, ox1 = d_.ow;
  while (ox0 < ox1 && at_edge(ox0)) ++ox0;
  while (ox1 > ox0 && at_edge(ox1 - 1)) --ox1;
  // Whether it pays: the other pixels' tiles and the columns' keep enough rows for their
  // chains (a 7x7 plane's 5 inner pixels, one 5-row tile, ran 12 % slower than 7 rows).
  const int64_t min_rows = std::min<int64_t>(kern_->mr, 7);
  auto tiles_keep_rows = [&](int64_t n) {
    return n >= min_rows && n / ceil_div(n, kern_->mr) >= min_rows;
  };
  if ((ox0 == 0 && ox1 == d_.ow) || !tiles_keep_rows(ox1 - ox0) || !tiles_keep_rows(d_.oh))
    return;
  for (int64_t ox = 0; ox < d_.ow; ++ox) {
    if (ox == ox0) ox = ox1;
    if (ox >= d_.ow) break;
    auto [kx0, kx1] = kernel_columns(ox);
    edge_columns_.push_back({ox, kx0, kx1, init_without(0, d_.kh, kx0, kx1)});
  }
  inner_ox0_ = ox0;
  inner_ox1_ = ox1;
}

void QConvKernel::pack_row(const int8_t* x, int64_t p, const Pixel& at, int64_t g,
                           uint8_t* out) const {
  const int64_t bytes = 4 / kern_->kstep;  // per packed activation
  const int64_t K = d_.k();
  // Padding lanes: their weights are 0.
  if (a_stride_ > K * bytes) std::memset(out + K * bytes, 0, size_t(a_stride_ - K * bytes));
  if (direct_rows_) return kern_->pack_runs(x + p * d_.c, 0, 1, K, out);
  const int8_t* image = x + at.n * d_.h * d_.w * d_.c + g * d_.cg;
  const int64_t iy0 = at.oy * d_.sh - d_.pad_t, ix0 = at.ox * d_.sw - d_.pad_l;
  if (contiguous_taps_ && iy0 >= 0 && iy0 + (d_.kh - 1) * d_.dh < d_.h && ix0 >= 0 &&
      ix0 + d_.kw <= d_.w) {
    // Inside the image (most pixels): one run per kernel row, nothing to clip.
    const int64_t run = d_.kw * d_.c, row_step = d_.dh * d_.w * d_.c;
    const int8_t* src = image + (iy0 * d_.w + ix0) * d_.c;
    return kern_->pack_runs(src, row_step, d_.kh, run, out);
  }
  // Taps in the padding hold x_zero_point (real 0): they contribute nothing.
  auto pad = [&](int64_t k0, int64_t n) {
    kern_->fill_run(static_cast<int8_t>(x_zero_point_), n, out + k0 * bytes);
  };
  for (int64_t ky = 0; ky < d_.kh; ++ky) {
    const int64_t iy = iy0 + ky * d_.dh;
    const int64_t k_row = ky * d_.kw * d_.cg;
    if (iy < 0 || iy >= d_.h) {
      pad(k_row, d_.kw * d_.cg);
      continue;
    }
    if (contiguous_taps_) {
      // The taps of one kernel row are adjacent pixels of all channels: one run.
      const int64_t kx0 = std::clamp<int64_t>(-ix0, 0, d_.kw);
      const int64_t kx1 = std::clamp<int64_t>(d_.w - ix0, kx0, d_.kw);
      if (kx0 > 0) pad(k_row, kx0 * d_.cg);
      kern_->pack_runs(image + (iy * d_.w + ix0 + kx0) * d_.c, 0, 1, (kx1 - kx0) * d_.c,
                       out + (k_row + kx0 * d_.cg) * bytes);
      if (kx1 < d_.kw) pad(k_row + kx1 * d_.cg, (d_.kw - kx1) * d_.cg);
      continue;
    }
    for (int64_t kx = 0; kx < d_.kw; ++kx) {
      const int64_t ix = ix0 + kx * d_.dw, k0 = k_row + kx * d_.cg;
      if (ix >= 0 && ix < d_.w)
        kern_->pack_runs(image + (iy * d_.w + ix) * d_.c, 0, 1, d_.cg, out + k0 * bytes);
      else
        pad(k0, d_.cg);
    }
  }
}

void QConvKernel::pack_rows(const int8_t* x, int64_t p0, int64_t p1, int64_t g,
                            uint8_t* a) const {
  if (direct_rows_ && a_stride_ == d_.c * (4 / kern_->kstep)) {
    // Rows of whole lanes, adjacent in x as in the block: one run (a call per row took int8
    // MobileNet v2's 1x1 convs on 112x112 and 56x56 planes 12-70 % longer, Zen 4).
    return kern_->pack_runs(x + p0 * d_.c, 0, 1, (p1 - p0) * d_.c, a);
  }
  const int64_t per_image = d_.oh * d_.ow;
  Pixel at{p0 / per_image, p0 % per_image / d_.ow, p0 % d_.ow};
  for (int64_t p = p0; p < p1; ++p, at.next(d_)) pack_row(x, p, at, g, a + (p - p0) * a_stride_);
}

void QConvKernel::run_task(const int8_t* x, const int8_t* z, void* y, int64_t p0, int64_t p1,
                           int64_t g, int64_t b0, int64_t b1, uint8_t* workspace) const {
  if (kern_->begin) kern_->begin();
  uint8_t* a = workspace;
  if (!signed_rows_) pack_rows(x, p0, p1, g, a);  // (signed rows: the tiles read x itself)
  alignas(64) int32_t c[q8::kMaxTileInts];
  const q8::MicroKernels& geo = *kern_;
  const q8::RequantParams rq = rq_.params();
  const q8::PackedWeights& pw = packed_->weights[g];
  // (Not for a single row, a classifier's at batch 1: its tiles wait on their two sums.)
  const bool prefetch = pw.bytes() > kPrefetchBytes && p1 - p0 >= geo.mr;
  // Weights that stream from memory pass once, each block over all the rows (kPrefetchBytes);
  // the others in sweeps of rows (kSweepBytes).
  const int64_t sweep = prefetch ? p1 - p0 : sweep_rows_;
  for (int64_t s0 = p0; s0 < p1; s0 += sweep) {
    const int64_t s1 = std::min(p1, s0 + sweep);
    for (int64_t b = b0; b < b1; ++b) {
      const int32_t* init = packed_->init[g].data() + b * geo.nr;
      const auto [tile, mr] = block_tile(b);
      const int64_t tiles = ceil_div(p1 - p0, mr);
      for (int64_t r0 = s0; r0 < s1; r0 += mr) {
        const int rows = static_cast<int>(std::min<int64_t>(mr, s1 - r0));
        const uint8_t* rows_of_a = signed_rows_
                                       ? reinterpret_cast<const uint8_t*>(x + r0 * d_.c)
                                       : a + (r0 - p0) * a_stride_;
        q8::TileRows tile_rows{rows_of_a, a_stride_, 0, 1, kq_};
        tile_rows.signed_rows = signed_rows_;
        if (prefetch) share_of_next(pw, b + 1, b1, (r0 - p0) / mr, tiles, tile_rows);
        tile(tile_rows, pw.block(b), rows, init, c);
        store_tile(rq, c, rows, r0, g, b, z, y);
      }
    }
  }
}

QConvKernel::BlockTile QConvKernel::block_tile(int64_t b) const {
  // A block of at most half the tile's channels (a layer's last, a grouped conv's 4-16): the
  // narrow tiles (MobileNet v2's 32 -> 16 1x1 conv on 112x112: 0.042 -> 0.034 ms, Zen 5).
  if (kern_->narrow && pack_lanes() - b * kern_->nr <= kern_->nr / 2)
    return {kern_->narrow, kern_->narrow_mr};
  return {kern_->micro, kern_->mr};
}

void QConvKernel::store_tile(const q8::RequantParams& rq, int32_t* c, int rows, int64_t p,
                             int64_t g, int64_t b, const int8_t* z, void* y,
                             int64_t pixel_step) const {
  const int nr = kern_->nr;
  const int64_t cols = std::min<int64_t>(nr, pack_lanes() - b * nr);
  const int64_t c0 = g * pack_lanes() + b * nr;
  const int64_t out = p * d_.m + c0, stride = pixel_step * d_.m;
  if (rq_.quantize)
    q8::quantize_tile(rq_, c, nr, rows, c0, cols, static_cast<int8_t*>(y) + out, stride);
  else if (rq_.int8_out)
    requant_(rq, c, nr, rows, c0, cols, static_cast<int8_t*>(y) + out, stride,
             z ? z + out : nullptr);
  else
    q8::dequant_tile(rq_, c, nr, rows, c0, cols, static_cast<float*>(y) + out, stride);
}

void QConvKernel::pad_input(const int8_t* x, uint8_t* padded, int threads) const {
  const int64_t pixel = pixel_bytes(), row_bytes = pad_w_ * pixel;
  const int64_t channels = d_.cg * interleave_;  // a pack's, adjacent in x
  const int8_t zero = static_cast<int8_t>(x_zero_point_);  // real 0: padding adds nothing
  // The padded columns that hold input pixels: [x0, x1).
  const int64_t x0 = std::min(d_.pad_l, pad_w_), x1 = std::clamp(d_.pad_l + d_.w, x0, pad_w_);
  // Rows of pack g's copy (its channels of every pixel), the packs' copies one after another.
  const int64_t rows_per_pack = d_.n * pad_h_;
  parallel_for(threads, packs() * rows_per_pack, [&](int64_t r) {
    const int64_t g = r / rows_per_pack, image = r % rows_per_pack / pad_h_;
    const int64_t iy = r % pad_h_ - d_.pad_t;
    uint8_t* out = padded + r * row_bytes;
    if (iy < 0 || iy >= d_.h) return kern_->fill_run(zero, pad_w_ * channels, out);
    if (x0 > 0) kern_->fill_run(zero, x0 * channels, out);
    const int8_t* in = x + ((image * d_.h + iy) * d_.w + x0 - d_.pad_l) * d_.c + g * channels;
    if (x1 > x0 && channels == d_.c)
      kern_->pack_runs(in, 0, 1, (x1 - x0) * d_.c, out + x0 * pixel);
    else if (x1 > x0)
      kern_->pack_runs(in, d_.c, x1 - x0, channels, out + x0 * pixel);
    if (x1 < pad_w_) kern_->fill_run(zero, (pad_w_ - x1) * channels, out + x1 * pixel);
    // Two groups of two lanes each: a pixel's lanes (g0 s0, g0 s1, g1 s0, g1 s1) into step
    // order (g0 s0, g1 s0, g0 s1, g1 s1).
    if (interleave_ == 2 && pixel == 16)
      for (uint8_t* at = out + x0 * pixel; at < out + x1 * pixel; at += pixel) {
        uint32_t lanes[4];
        std::memcpy(lanes, at, sizeof lanes);
        std::swap(lanes[1], lanes[2]);
        std::memcpy(at, lanes, sizeof lanes);
      }
  });
  std::memset(padded + padded_bytes_, 0, 64);  // what the last pixel's last lane reads past it
}

void QConvKernel::run_rows(const uint8_t* padded, const int8_t* z, void* y, int64_t y0, int64_t y1,
                           int64_t b0, int64_t b1) const {
  if (kern_->begin) kern_->begin();
  const q8::MicroKernels& geo = *kern_;
  const int64_t pixel = pixel_bytes(), row_bytes = pad_w_ * pixel;
  const int64_t pack_blocks = packed_->weights[0].blocks();
  const int64_t inner = inner_ox1_ - inner_ox0_;
  q8::TileRows rows{nullptr, d_.sw * pixel, row_bytes, d_.kh, run_lanes_};
  rows.interleave = int(interleave_);
  alignas(64) int32_t c[q8::kMaxTileInts];
  const q8::RequantParams rq = rq_.params();
  for (int64_t block = b0; block < b1; ++block) {
    // Block b of pack g: its weights, its channels' init and its copy of the input.
    const int64_t g = block / pack_blocks, b = block % pack_blocks;
    const q8::PackedWeights& pw = packed_->weights[size_t(g)];
    const bool prefetch = pw.bytes() > kPrefetchBytes && interleave_ == 1;
    const int64_t next_end = std::min(pack_blocks, b1 - g * pack_blocks);
    const uint8_t* pack_copy = padded + g * d_.n * pad_h_ * row_bytes;
    const int64_t init_at = g * pack_blocks * geo.nr + b * geo.nr;
    const auto [tile, mr] = block_tile(b);
    // An output row's pixels (but its edge columns') in near-equal tiles (56 as 4 x 11 + 12):
    // each tile's pixels are sw pixels apart in the copy, its kernel rows one row apart.
    const int tiles = static_cast<int>(ceil_div(inner, mr));
    for (int64_t out_row = y0; out_row < y1; ++out_row) {
      const int64_t image = out_row / d_.oh, oy = out_row % d_.oh;
      // An edge row runs its kernel rows inside the image only: [ky0, ky1) of the copy's rows
      // and of each block's lanes (a 7x7 plane's 3x3 conv: 2 of its 21 kernel rows).
      const int edge = edge_of_row_[oy];
      const KernelRows* kernel_rows = edge >= 0 ? &edge_rows_[edge] : nullptr;
      const int64_t ky0 = kernel_rows ? kernel_rows->ky0 : 0;
      rows.runs = kernel_rows ? kernel_rows->ky1 - ky0 : d_.kh;
      const int32_t* init = kernel_rows ? kernel_rows->init.data() + init_at
                                        : packed_->init[size_t(g)].data() + b * geo.nr;
      const uint8_t* weights = pw.block(b) + ky0 * run_lanes_ * geo.nr * 4;
      const uint8_t* first = pack_copy + (image * pad_h_ + oy * d_.sh + ky0) * row_bytes;
      for (int t = 0; t < tiles; ++t) {
        if (prefetch)
          share_of_next(pw, b + 1, next_end, (out_row - y0) * tiles + t, (y1 - y0) * tiles, rows);
        const int64_t ox = inner_ox0_ + split_begin(inner, tiles, t);
        const int n = static_cast<int>(inner_ox0_ + split_begin(inner, tiles, t + 1) - ox);
        rows.a = first + ox * d_.sw * pixel;
        tile(rows, weights, n, init, c);
        store_tile(rq, c, n, out_row * d_.ow + ox, g, b, z, y);
      }
    }
    for (const EdgeColumn& column : edge_columns_)
      run_column(pack_copy, column, rq, z, y, y0, y1, g, b, c);
  }
}

void QConvKernel::run_column(const uint8_t* padded, const EdgeColumn& column,
                             const q8::RequantParams& rq, const int8_t* z, void* y, int64_t y0,
                             int64_t y1, int64_t g, int64_t b, int32_t* c) const {
  const q8::MicroKernels& geo = *kern_;
  // (Lane steps per pixel: with interleaved groups each step reads all of theirs.)
  const int64_t pixel = pixel_bytes(), row_bytes = pad_w_ * pixel;
  const int64_t tap_lanes = pixel / 4 / interleave_;
  // Its pixels are sh rows of the copy apart; each kernel row reads the taps [kx0, kx1) of its
  // run, and the weights of a kernel row's other taps are stepped over.
  q8::TileRows rows{nullptr, d_.sh * row_bytes, row_bytes, d_.kh,
                    (column.kx1 - column.kx0) * tap_lanes};
  rows.weight_lanes = run_lanes_;
  rows.interleave = int(interleave_);
  const q8::PackedWeights& pw = packed_->weights[size_t(g)];
  const uint8_t* weights = pw.block(b) + column.kx0 * tap_lanes * geo.nr * 4;
  const int32_t* init = column.init.data() + (g * pw.blocks() + b) * geo.nr;
  const auto [tile, mr] = block_tile(b);
  for (int64_t r0 = y0; r0 < y1;) {
    // The rows of one image: near-equal tiles down the column.
    const int64_t image = r0 / d_.oh, r1 = std::min(y1, (image + 1) * d_.oh);
    const int tiles = static_cast<int>(ceil_div(r1 - r0, mr));
    for (int t = 0; t < tiles; ++t) {
      const int64_t out_row = r0 + split_begin(r1 - r0, tiles, t);
      const int n = static_cast<int>(r0 + split_begin(r1 - r0, tiles, t + 1) - out_row);
      const int64_t oy = out_row % d_.oh;
      rows.a = padded + (image * pad_h_ + oy * d_.sh) * row_bytes +
               (column.ox * d_.sw + column.kx0) * pixel;
      tile(rows, weights, n, init, c);
      store_tile(rq, c, n, out_row * d_.ow + column.ox, g, b, z, y, d_.ow);
    }
    r0 = r1;
  }
}

void QConvKernel::run_implicit(const int8_t* x, const int8_t* z, void* y, uint8_t* padded,
                               int threads) const {
  pad_input(x, padded, threads);
  // Blocks of output channels of every pack of groups, pack after pack.
  const int64_t out_rows = d_.n * d_.oh, blocks = packs() * packed_->weights[0].blocks();
  // Output rows in blocks whose rows of the copy stay in L2 while every weight block passes.
  const int64_t row_bytes = pad_w_ * pixel_bytes();
  int64_t row_blocks = ceil_div(out_rows, std::max<int64_t>(1, kBlockBytes / (d_.sh * row_bytes)));
  int64_t chunks = 1;
  if (threads > 1) {
    // The threads split the output rows, or the channels where that is more even (a 7x7
    // plane's 7 rows, 4 + 3, against 16 blocks of channels, 8 + 8).
    auto uneven = [&](int64_t units) { return ceil_div(units, threads) * threads * 1.0 / units; };
    if (uneven(out_rows) <= uneven(blocks))
      row_blocks = std::min(out_rows, round_up(row_blocks, threads));
    else
      chunks = std::min<int64_t>(blocks, threads);
  }
  const int64_t tasks = row_blocks * chunks;
  parallel_region(threads, [&](int tid, int nt) {
    for (int64_t t = split_begin(tasks, nt, tid); t < split_begin(tasks, nt, tid + 1); ++t) {
      const int chunk = static_cast<int>(t % chunks), rb = static_cast<int>(t / chunks);
      run_rows(padded, z, y, split_begin(out_rows, static_cast<int>(row_blocks), rb),
               split_begin(out_rows, static_cast<int>(row_blocks), rb + 1),
               split_begin(blocks, static_cast<int>(chunks), chunk),
               split_begin(blocks, static_cast<int>(chunks), chunk + 1));
    }
  });
}

void QConvKernel::run(RunContext& ctx) const {
  const int8_t* x = ctx.inputs[0]->data<int8_t>();
  const int8_t* z =
      ctx.inputs.size() > 3 && ctx.inputs[3] ? ctx.inputs[3]->data<int8_t>() : nullptr;
  void* y = ctx.outputs[0]->raw();
  uint8_t* ws = static_cast<uint8_t*>(ctx.workspace);
  const int threads = std::clamp(ctx.threads, 1, threads_);
  if (implicit_) return run_implicit(x, z, y, ws, threads);
  const int64_t rows = d_.rows();
  const int64_t blocks = packed_->weights[0].blocks();
  const int64_t mr = kern_->mr;
  int64_t row_blocks = (rows + block_rows_ - 1) / block_rows_;
  int64_t chunks = 1;
  const bool split_rows = threads > 1 && rows >= 2 * threads * mr;
  if (split_rows) {
    row_blocks = (row_blocks + threads - 1) / threads * threads;  // a multiple of the threads
  } else if (row_blocks * d_.group < threads) {
    // Few rows (small images, late layers): split the output channels instead.
    chunks =
        std::min<int64_t>(blocks, (threads + row_blocks * d_.group - 1) / (row_blocks * d_.group));
  }
  // Near-equal row blocks, cut at whole tiles: blocks of one rounded-up size left the last one
  // short (a 7x7 plane's 49 rows as 18, 18 and 13: one of 2 threads took 36 of them, and int8
  // ResNet-18's 7x7 and 14x14 convs ran 1.4-1.6x faster on 2 threads than on 1; int8
  // ResNet-18 and -50 at 2 threads 4-6 % faster with this, in-process A/B on a Zen 3).
  auto row_begin = [&](int64_t rb) { return aligned_split_begin(rows, row_blocks, rb, mr); };
  auto largest_block = [&] {
    int64_t most = 0;
    for (int64_t rb = 0; rb < row_blocks; ++rb)
      most = std::max(most, row_begin(rb + 1) - row_begin(rb));
    return most;
  };
  // (Each block must fit the workspace's block_rows_.)
  while (largest_block() > block_rows_) row_blocks += split_rows ? threads : 1;
  const int64_t tasks = row_blocks * d_.group * chunks;
  parallel_region(threads, [&](int tid, int nt) {
    for (int64_t t = split_begin(tasks, nt, tid); t < split_begin(tasks, nt, tid + 1); ++t) {
      const int64_t chunk = t % chunks, g = (t / chunks) % d_.group, rb = t / (chunks * d_.group);
      const int64_t p0 = row_begin(rb), p1 = row_begin(rb + 1);
      if (p0 >= p1) continue;
      run_task(x, z, y, p0, p1, g,
               split_begin(blocks, static_cast<int>(chunks), static_cast<int>(chunk)),
               split_begin(blocks, static_cast<int>(chunks), static_cast<int>(chunk) + 1),
               ws + static_cast<size_t>(tid) * per_thread_bytes_);
    }
  });
}

std::string QConvKernel::variant() const { return kern_ ? isa_name(kern_->isa) : ""; }

}  // namespace minfer::cpu
