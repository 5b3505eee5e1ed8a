#include "backends/cpu/conv_strided.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/env_switch.h"
#include "backends/cpu/fp32_micro.h"
#include "backends/cpu/parallel.h"
#include "minfer/error.h"

namespace minfer::cpu {

namespace {

// The packed weights and the 64-byte aligned place where their blocks start.
struct PackedBlocks {
  std::vector<float> storage;
  const float* blocks = nullptr;
};

}  // namespace

// On AMD's cores only by default: on the GPU machine's Xeon (Sapphire Rapids), where ConvGemm
// packs the im2col blocks of deep products (conv_gemm.h), ResNet's 28x28 stride-2 conv took
// 1.08x (1 thread) and 1.21x (2) the time that way (min of 16 alternated runs of the conv
// alone; the 56x56 one of 64 channels and the stem 0.80-0.98x).
bool strided_conv_enabled() { return env_switch("MINFER_CPU_STRIDED", cpu_is_amd()); }

bool grouped_conv_enabled() { return env_switch("MINFER_CPU_GROUPED", true); }

bool StridedConv::halves_pay() {
  return env_switch("MINFER_CPU_STRIDED_HALVES", cpu_splits_512_bit());
}

// Measured each conv in its model, one thread of a Zen 5, against the paths it replaces:
// ResNet-50's 3x3 stride-2 convs 1.13-1.21 -> 0.98-1.05 ms (28x28 and 14x14 outputs: im2col
// and ConvGemm), its 7x7 stem 1.10 -> 1.01; on a 7x7 output (weights of 9 MB from memory) level
// with SmallPlaneConv once the next block's weights are asked for ahead, and alone 7 % slower
// than it (its K-blocked products keep a block of weights in L1 for all 49 positions; here each
// output row reads its block from L2, which with 512 channels' padded input outgrew L2): the
// small planes stay SmallPlaneConv's. A 1x1 at stride 2 (one step per channel) measured no
// gain (at MINFER_ISA=avx2 1.4-1.7x slower than Eigen's path); a 3x3 stem on 3 channels (K =
// 27) ran 3-5 % slower than ConvGemm's implicit path: the tile's transposes outweigh its 27
// steps. At MINFER_ISA=avx2 (6-position tiles on 16 registers; Zen 5, in ResNet-50, 1 thread) the
// 3x3 stride-2 convs 2.03-2.11 -> 1.87-2.02 ms against im2col and Eigen's GEMM, the stem
// 1.98 -> 1.92 against ConvGemm's implicit path.
// At stride 1 (the 3x3 convs that Winograd does not take, and the others: Inception v3's 1x7,
// 7x1 and 5x5), against im2col and ConvGemm, each conv alone: 1x7 and 7x1 of 128-192 channels
// on 17x17 0.70-0.82 of the time, 5x5 of 48 -> 64 on 35x35 0.62 (1 thread of a Zen 5); at
// MINFER_ISA=avx2 0.88-1.02, so there not taken.
bool StridedConv::pays(const Shape& s, Isa isa) {
  if (isa < Isa::avx2 || s.dh != 1 || s.dw != 1 || s.kh * s.kw == 1) return false;
  if (s.group > 1)
    return grouped_conv_enabled() && (s.sw == 1 || s.sw == 2) &&
           s.c / s.group * s.kh * s.kw >= kMinGroupDepth;
  if (!strided_conv_enabled() || s.c * s.kh * s.kw < kMinDepth) return false;
  if (s.sw == 2) return s.oh * s.ow > kMaxSmallPlane;
  return s.sw == 1 && isa >= Isa::avx512 && s.oh * s.ow > kMinStride1Plane;
}

int64_t StridedConv::prepare(PrepareContext& ctx, const Shape& s, const float* weights) {
  check(s.sw == 1 || s.sw == 2, ErrorCode::Internal,
        "the strided conv's tiles take a column stride of 1 or 2");
  s_ = s;
  const LevelKernels* level = level_kernels(fp32_micro_kernels().isa);
  kernels_ = level->strided_conv;
  pad_ = level->padded_planes;
  const int64_t nr = kernels_->nr, lanes = nr / 2, K = k(), mg = s.m / s.group;
  interleave_ = s.group > 1 && mg < lanes && lanes % mg == 0 && lanes / mg <= 4 ? lanes / mg : 1;
  halves_ = lanes == 16 && halves_pay();
  group_blocks_ = ceil_div(mg, nr);
  blocks_ = interleave_ > 1 ? ceil_div(s.group, interleave_) : s.group * group_blocks_;
  const size_t floats = size_t(blocks_ * K * nr) + 16;
  auto packed = ctx.share<PackedBlocks>(
      std::string("cpu.conv.strided.") + isa_name(kernels_->isa) + (halves_ ? ".halves" : ""),
      floats * sizeof(float), [&] {
        auto p = std::make_shared<PackedBlocks>();
        p->storage.assign(floats, 0.f);
        float* dst = p->storage.data();
        dst += (64 - reinterpret_cast<uintptr_t>(dst) % 64) % 64 / sizeof(float);
        p->blocks = dst;
        // Block b, step k, lane l: W [m, k] (W row-major [M, K], k = (c, ky, kx) over the
        // group's channels) of the output channel m that the lane computes.
        for (int64_t m = 0; m < s.m; ++m) {
          const int64_t g = m / mg, j = m % mg;
          const int64_t block = interleave_ > 1 ? g / interleave_ : g * group_blocks_ + j / nr;
          const int64_t lane = halves_ && interleave_ == 2 ? g % 2 * 8 + j
                               : interleave_ > 1           ? j * interleave_ + g % interleave_
                                                           : j % nr;
          for (int64_t kk = 0; kk < K; ++kk)
            dst[(block * K + kk) * nr + lane] = weights[m * K + kk];
        }
        return p;
      });
  w_ = std::shared_ptr<const float>(packed, packed->blocks);
  prefetch_ = floats * sizeof(float) > kPrefetchBytes;
  // The windows of every output: (oh - 1) * sh + kh rows of (ow - 1) * sw + kw columns. Planes
  // a multiple of 4 KB apart would put a step's broadcasts of successive channels on the same
  // L1 sets.
  span_ = span_rows(s.ow, *kernels_);
  ph_ = (s.oh - 1) * s.sh + s.kh;
  pw_ = (s.ow - 1) * s.sw + s.kw;
  plane_ = round_up(ph_ * pw_ * interleave_, 16);
  if (plane_ % 1024 == 0) plane_ += 16;
  return planes() * plane_;
}

int64_t StridedConv::planes() const {
  return interleave_ > 1 ? ceil_div(s_.group, interleave_) * (s_.c / s_.group) : s_.c;
}

void StridedConv::pad_image(const float* x, float* xp, int threads) const {
  const Shape& s = s_;
  const int64_t cg = s.c / s.group, interleave = interleave_;
  parallel_for(threads_for(planes() * plane_, threads), planes(), [&](int64_t u) {
    // Plane u: channel c of the groups of block u / cg side by side (of the input's channel u
    // where interleave is 1).
    f32::PaddedPlanes a{{}, int(interleave), s.h, s.w, -s.pad_t, ph_, s.pad_l, pw_,
                        xp + u * plane_};
    const int64_t c = u % cg, first_group = u / cg * interleave;
    for (int64_t i = 0; i < interleave && first_group + i < s.group; ++i)
      a.src[i] = x + ((first_group + i) * cg + c) * s.h * s.w;
    pad_->copy(a);
  });
}

int64_t StridedConv::span_rows(int64_t width, const f32::StridedConvKernels& kernels) {
  if (!kernels.spans_rows || width < kernels.max_tile) return 1;
  int64_t best = 1;
  double best_fill = 0;
  for (int64_t rows = 1; rows <= kMaxSpan; ++rows) {
    const int64_t positions = rows * width, tiles = ceil_div(positions, kernels.max_tile);
    const double fill = double(positions) / double(tiles * kernels.max_tile);
    if (fill > best_fill + 1e-9) best = rows, best_fill = fill;
  }
  return best;
}

int64_t StridedConv::unit_rows(int threads) const {
  if (s_.group == 1) return span_;
  // Grouped convs' blocks are short products (a 14x14 plane's row of 16 channels: 144 steps):
  // a unit of one row spent 5-7 % of the time on its call and set-up (ResNeXt-50's 14x14 and
  // 7x7 grouped convs, 1 thread of a Zen 5). Units of whole spans, about 8 a thread.
  const int64_t rows = s_.oh * blocks_ / (8 * int64_t(std::max(threads, 1)));
  return std::clamp<int64_t>(rows / span_ * span_, span_, round_up(s_.oh, span_));
}

int64_t StridedConv::band_rows() const {
  // Per output row, of the channels that a block reads.
  const int64_t row_bytes = s_.c / s_.group * interleave_ * s_.sh * pw_ * int64_t(sizeof(float));
  return std::clamp<int64_t>(kBandBytes / row_bytes, 1, s_.oh);
}

void StridedConv::run(const float* x, const float* b, const float* z, float* y,
                      const Activation& act, float* workspace, int threads) const {
  const Shape& s = s_;
  const int64_t nr = kernels_->nr, K = k(), p = s.oh * s.ow;
  const int64_t cg = s.c / s.group, mg = s.m / s.group, row = pw_ * interleave_;
  const bool clamp = act.enabled && act.is_clamp(), smooth = act.enabled && !act.is_clamp();
  for (int64_t n = 0; n < s.n; ++n) {
    pad_image(x + n * s.c * s.h * s.w, workspace, threads);
    float* yn = y + n * s.m * p;
    const float* zn = z ? z + n * s.m * p : nullptr;
    // Units of (band of output rows, block, span of rows): a band's input rows stay in L2
    // while every block passes over them, each block's weights (K x nr floats) reused span after
    // span.
    const int64_t span = unit_rows(threads);
    const int64_t band = std::min(s.oh, round_up(band_rows(), span));
    const int64_t spans = ceil_div(band, span), per_band = blocks_ * spans;
    parallel_for(threads_for(s.m * p * K, threads), ceil_div(s.oh, band) * per_band,
                 [&](int64_t u) {
      const int64_t in_band = u % per_band, block = in_band / spans;
      const int64_t oy = u / per_band * band + in_band % spans * span;
      const int64_t rows = std::min({span, s.oh - oy, band - in_band % spans * span});
      if (rows <= 0) return;  // the last band's missing rows
      // The block's first output channel, its channels (of each group) and its groups; the
      // block's input planes.
      int64_t j0, cols, groups = 1, in_block;
      if (interleave_ > 1) {
        j0 = block * interleave_ * mg, cols = mg, in_block = block;
        groups = std::min(interleave_, s.group - block * interleave_);
      } else {
        const int64_t g = block / group_blocks_;
        j0 = g * mg + block % group_blocks_ * nr, cols = std::min(nr, (g + 1) * mg - j0);
        in_block = g;
      }
      const int64_t at = j0 * p + oy * s.ow;
      f32::StridedRows a{workspace + in_block * cg * plane_ + oy * s.sh * row,
                         cg,
                         plane_,
                         row,
                         int(s.kh),
                         int(s.kw),
                         int(s.sw),
                         int(interleave_),
                         halves_,
                         w_.get() + block * K * nr,
                         cols,
                         groups,
                         mg,
                         b ? b + j0 : nullptr,
                         zn ? zn + at : nullptr,
                         yn + at,
                         p,
                         rows * s.ow,
                         s.ow,
                         s.sh * row,
                         clamp,
                         act.lo,
                         act.hi};
      // Weights that come from memory (more than stay cached between runs): each span of a
      // block asks for its share of the next block's ahead of use, so that the block's first
      // span does not wait on memory.
      if (prefetch_ && block + 1 < blocks_) {
        const int64_t lines = K * nr / 16;  // of a block
        a.prefetch = w_.get() + (block + 1) * K * nr + oy * lines / s.oh * 16;
        a.prefetch_lines = (oy + rows) * lines / s.oh - oy * lines / s.oh;
      }
      kernels_->rows(a);
      if (smooth)
        for (int64_t g = 0; g < groups; ++g)
          for (int64_t j = 0; j < cols; ++j)
            act.apply(yn + at + (g * mg + j) * p, rows * s.ow);
    });
  }
}

}  // namespace minfer::cpu
