#include "backends/cpu/conv_regions.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "backends/cpu/parallel.h"
#include "ops/conv_geometry.h"

namespace minfer::cpu {

namespace {

// Floats of one tap's input rows per tile (C x positions): 512 KB, in L2 with the tile's sums.
constexpr int64_t kTapTileFloats = int64_t{1} << 17;

}  // namespace

std::vector<RegionConv::Band> RegionConv::bands(int64_t in, int64_t out, int64_t k, int64_t stride,
                                                int64_t dilation, int64_t pad) {
  std::vector<Band> b;
  for (int64_t o = 0; o < out; ++o) {
    const TapRange t = taps_in(o * stride - pad, k, dilation, 0, in);
    if (!b.empty() && b.back().t0 == t.lo && b.back().t1 == t.hi)
      b.back().o1 = o + 1;
    else
      b.push_back({o, o + 1, t.lo, t.hi});
  }
  return b;
}

bool RegionConv::pays(const Shape& s) {
  if (s.dh == 1 && s.dw == 1) return false;
  int64_t live = 0;
  for (const Band& r : bands(s.h, s.oh, s.kh, s.sh, s.dh, s.pad_t))
    for (const Band& c : bands(s.w, s.ow, s.kw, s.sw, s.dw, s.pad_l))
      live += (r.o1 - r.o0) * (c.o1 - c.o0) * (r.t1 - r.t0) * (c.t1 - c.t0);
  return double(live) <= kMaxLive * double(s.oh * s.ow * s.kh * s.kw);
}

int64_t RegionConv::prepare(PrepareContext& ctx, const Shape& s, const float* weights) {
  s_ = s;
  const f32::MicroKernels& tiles = fp32_micro_kernels();
  const std::vector<Band> rows = bands(s.h, s.oh, s.kh, s.sh, s.dh, s.pad_t);
  const std::vector<Band> cols = bands(s.w, s.ow, s.kw, s.sw, s.dw, s.pad_l);
  int64_t largest = 0;  // positions of the largest region: no tile needs more
  for (const Band& r : rows)
    for (const Band& c : cols) largest = std::max(largest, (r.o1 - r.o0) * (c.o1 - c.o0));
  tile_ = round_up(std::min(std::clamp<int64_t>(kTapTileFloats / s.c, 64, 512), largest), tiles.nr);
  regions_.clear();
  units_ = 0;
  for (const Band& r : rows)
    for (const Band& c : cols) {
      regions_.push_back({r, c, units_});
      units_ += ceil_div((r.o1 - r.o0) * (c.o1 - c.o0), tile_);
    }
  const int64_t taps = s.kh * s.kw;
  gemms_ = ctx.share<std::vector<ConvGemm>>(
      std::string("cpu.conv.regions.") + isa_name(tiles.isa),
      size_t(s.m * s.c * taps) * sizeof(float), [&] {
        auto gemms = std::make_shared<std::vector<ConvGemm>>();
        std::vector<float> tap(size_t(s.m * s.c));
        for (int64_t t = 0; t < taps; ++t) {
          for (int64_t m = 0; m < s.m; ++m)
            for (int64_t c = 0; c < s.c; ++c)
              tap[size_t(m * s.c + c)] = weights[(m * s.c + c) * taps + t];
          gemms->emplace_back(tap.data(), s.m, s.c, tiles);
        }
        return gemms;
      });
  col_floats_ = round_up(s.c * tile_, 16);
  out_floats_ = round_up(s.m * tile_, 16);
  return slice_floats();
}

int64_t RegionConv::slice_floats() const {
  return col_floats_ + out_floats_ + round_up(int64_t((*gemms_)[0].scratch_floats()), 16);
}

void RegionConv::tap_columns(const float* x, const Region& r, int64_t i, int64_t j, int64_t pos0,
                             int64_t np, float* col) const {
  const Shape& s = s_;
  const int64_t width = r.cols.o1 - r.cols.o0;
  for (int64_t c = 0; c < s.c; ++c) {
    const float* plane = x + c * s.h * s.w;
    float* dst = col + c * np;
    // The tile's positions, a run along each output row of the region.
    for (int64_t pos = pos0; pos < pos0 + np;) {
      const int64_t oh = r.rows.o0 + pos / width, q = pos % width;
      const int64_t n = std::min(width - q, pos0 + np - pos);
      const int64_t ow = r.cols.o0 + q;
      const float* src =
          plane + (oh * s.sh - s.pad_t + i * s.dh) * s.w + ow * s.sw - s.pad_l + j * s.dw;
      if (s.sw == 1)
        std::memcpy(dst, src, size_t(n) * sizeof(float));
      else
        for (int64_t e = 0; e < n; ++e) dst[e] = src[e * s.sw];
      dst += n;
      pos += n;
    }
  }
}

void RegionConv::run(const float* x, const float* b, float* y, const Activation& act,
                     float* workspace, int threads) const {
  const Shape& s = s_;
  const int64_t p = s.oh * s.ow;
  // Few tiles: the threads split each tile's output channels too (at the tiles' 6 rows).
  const int64_t row_parts =
      units_ * s.n < 2 * threads && s.m >= 12 * threads ? int64_t(threads) : 1;
  const int64_t work = s.n * units_ * row_parts;
  const int64_t slice = slice_floats();
  const Activation none;
  parallel_region(threads, [&](int part, int parts) {
    float* col = workspace + part * slice;
    float* out = col + col_floats_;
    float* scratch = out + out_floats_;
    for (int64_t u = split_begin(work, parts, part); u < split_begin(work, parts, part + 1); ++u) {
      const int64_t rp = u % row_parts, unit = u / row_parts % units_,
                    image = u / row_parts / units_;
      const int64_t r0 = aligned_split_begin(s.m, row_parts, rp, ConvGemm::kPanelRows);
      const int64_t r1 = aligned_split_begin(s.m, row_parts, rp + 1, ConvGemm::kPanelRows);
      if (r0 >= r1) continue;
      const Region& r =
          *std::prev(std::upper_bound(regions_.begin(), regions_.end(), unit,
                                      [](int64_t v, const Region& g) { return v < g.first_unit; }));
      const int64_t width = r.cols.o1 - r.cols.o0;
      const int64_t positions = (r.rows.o1 - r.rows.o0) * width;
      const int64_t pos0 = (unit - r.first_unit) * tile_;
      const int64_t np = std::min(tile_, positions - pos0);
      const float* xi = x + image * s.c * s.h * s.w;
      const int64_t live = (r.rows.t1 - r.rows.t0) * (r.cols.t1 - r.cols.t0);
      int64_t done = 0;
      for (int64_t i = r.rows.t0; i < r.rows.t1; ++i)
        for (int64_t j = r.cols.t0; j < r.cols.t1; ++j, ++done) {
          tap_columns(xi, r, i, j, pos0, np, col);
          (*gemms_)[size_t(i * s.kw + j)].run(col, np, np, done == 0 ? b : nullptr,
                                              done == 0 ? nullptr : out, out, np,
                                              done + 1 == live ? act : none, scratch, r0, r1);
        }
      if (live == 0)  // every tap reads padding: the bias alone
        for (int64_t m = r0; m < r1; ++m) {
          std::fill(out + m * np, out + (m + 1) * np, b ? b[m] : 0.f);
          act.apply(out + m * np, np);
        }
      // The tile's sums into the output's rows.
      float* yi = y + image * s.m * p;
      for (int64_t m = r0; m < r1; ++m)
        for (int64_t pos = pos0; pos < pos0 + np;) {
          const int64_t q = pos % width, n = std::min(width - q, pos0 + np - pos);
          const int64_t at = (r.rows.o0 + pos / width) * s.ow + r.cols.o0 + q;
          std::memcpy(yi + m * p + at, out + m * np + (pos - pos0), size_t(n) * sizeof(float));
          pos += n;
        }
    }
  });
}

}  // namespace minfer::cpu
