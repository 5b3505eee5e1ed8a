// Pooling fp32 kernels on NCHW: MaxPool, AveragePool (1-D and 2-D) and GlobalAveragePool.
//
// Row by row: a window's input rows are combined first (whole rows, up to 3 in one pass), then
// its columns, the output columns whose window lies inside the row in one pass (undilated
// windows of up to 3 columns at stride 1 or 2), the others tap by tap, each column tap over the
// range of output columns whose input lies inside the image: no bounds checks in the loops.
//
// Stride-1 undilated pools whose output is the input's size, on planes of up to 32x32 (3x3
// with 1 of padding: GoogLeNet's and Inception's branch pools at small inputs), instead run
// flat over blocks of whole planes: each tap is one pass over the block, masked per position to
// where the tap lies inside the plane (the same mask for every plane). On 4x4 to 8x8 planes the
// rows of 4 to 8 floats left the row-by-row loops mostly overhead: 3 to 4x ONNX Runtime's time.
#include <Eigen/Core>
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "backends/cpu/isa.h"
#include "backends/cpu/isa/isa_kernels.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "ops/conv_geometry.h"

namespace minfer::cpu {

namespace {

// Number of taps t in [0, k) with begin <= start + t * dilation < end.
int64_t taps_inside(int64_t start, int64_t k, int64_t dilation, int64_t begin, int64_t end) {
  return taps_in(start, k, dilation, begin, end).size();
}

class PoolKernel final : public Kernel {
 public:
  explicit PoolKernel(bool max) : max_(max) {}

  void prepare(PrepareContext& ctx) override {
    PoolGeometry g = pool_geometry(ctx.node, ctx.inputs[0].shape);
    const bool two_d = g.rank() == 2;
    planes_ = g.batch * g.channels;
    h_ = two_d ? g.in_h() : 1;
    w_ = g.input.back();
    oh_ = two_d ? g.out_h() : 1;
    ow_ = g.output.back();
    kh_ = two_d ? g.kernel_h() : 1;
    kw_ = g.kernel.back();
    sh_ = two_d ? g.stride_h() : 1;
    sw_ = g.strides.back();
    dh_ = two_d ? g.dilations[0] : 1;
    dw_ = g.dilations.back();
    pad_t_ = two_d ? g.pad_top() : 0;
    pad_l_ = g.pads_begin.back();
    // The column taps that reach the image for some output column (input column
    // ow * sw + j * dw - pad_l, ow in [0, ow_)): the others are all padding.
    cols_in_ = taps_in(-pad_l_, kw_, dw_, -(ow_ - 1) * sw_, w_);
    // Per column tap, the output columns it reaches inside the image; per output row, its
    // rows inside the image (the divisions once here, not per row).
    col_taps_.clear();
    for (int64_t j = cols_in_.lo; j < cols_in_.hi; ++j) {
      const int64_t offset = j * dw_ - pad_l_;  // input column = ow * sw + offset
      // (The output columns as the "taps" of a window starting at offset, sw apart.)
      const TapRange out = taps_in(offset, ow_, sw_, 0, w_);
      col_taps_.push_back({offset, out.lo, out.hi});
    }
    rows_in_.clear();
    for (int64_t o = 0; o < oh_; ++o)
      rows_in_.push_back(taps_in(o * sh_ - pad_t_, kh_, dh_, 0, h_));
    // The output columns whose (undilated) window lies inside the input row: from
    // ceil(pad_l / sw) to the last whose last column, q * sw - pad_l + kw - 1, is inside.
    const int64_t last = w_ - kw_ + pad_l_;
    inside_.lo = std::min(ow_, (pad_l_ + sw_ - 1) / sw_);
    inside_.hi = std::clamp<int64_t>(last >= 0 ? last / sw_ + 1 : 0, inside_.lo, ow_);
    prepare_flat();
    // The flat path at the CPU's ISA level (a pass per tap without one).
    vec_ = has_any_isa() ? level_kernels(active_isa())->pool : nullptr;
    // The row path's scratch: one input row per part, on cache lines of its own (parts
    // writing rows that share a line: a 111-wide pool ran 2.3x slower on 2 threads than 1).
    threads_ = std::max(1, ctx.threads);
    scratch_floats_ = flat_ ? 0 : round_up(w_, 16);
    ctx.workspace_bytes = size_t(threads_) * size_t(scratch_floats_) * sizeof(float);
    if (max_) return;
    // Divisors: taps inside the image, or (count_include_pad) inside image + pads; at least 1
    // (a window of no taps sums to +0).
    const int64_t pad_b = two_d ? g.pads_end[0] : 0, pad_r = g.pads_end.back();
    const bool with_pad = g.count_include_pad;
    std::vector<int64_t> rows(oh_), cols(ow_);
    for (int64_t o = 0; o < oh_; ++o)
      rows[o] = with_pad ? taps_inside(o * sh_ - pad_t_, kh_, dh_, -pad_t_, h_ + pad_b)
                         : taps_inside(o * sh_ - pad_t_, kh_, dh_, 0, h_);
    for (int64_t o = 0; o < ow_; ++o)
      cols[o] = with_pad ? taps_inside(o * sw_ - pad_l_, kw_, dw_, -pad_l_, w_ + pad_r)
                         : taps_inside(o * sw_ - pad_l_, kw_, dw_, 0, w_);
    divisors_.resize(size_t(oh_ * ow_));
    for (int64_t o = 0; o < oh_ * ow_; ++o)
      divisors_[size_t(o)] = float(std::max<int64_t>(1, rows[o / ow_] * cols[o % ow_]));
  }

  // The flat path's ISA level (the row path's loops are the compiler's, at the baseline's).
  std::string variant() const override { return flat_ && vec_ ? isa_name(vec_->isa) : ""; }

  void run(RunContext& ctx) const override {
    const float* x = ctx.inputs[0]->data<float>();
    float* y = ctx.outputs[0]->data<float>();
    float* workspace = static_cast<float*>(ctx.workspace);
    const int64_t work = planes_ * oh_ * ow_ * kh_ * kw_;
    // Equal parts of the planes (equal work each; flat: of the blocks).
    const int threads = threads_for(work, std::clamp(ctx.threads, 1, threads_));
    parallel_region(threads, [&](int part, int parts) {
      float* scratch = workspace + part * scratch_floats_;
      if (flat_) {
        const int64_t blocks = (planes_ + block_planes_ - 1) / block_planes_;
        for (int64_t b = split_begin(blocks, parts, part); b < split_begin(blocks, parts, part + 1);
             ++b) {
          const int64_t p0 = b * block_planes_, n = std::min(block_planes_, planes_ - p0);
          pool_flat(x + p0 * h_ * w_, y + p0 * h_ * w_, n);
        }
        return;
      }
      for (int64_t plane = split_begin(planes_, parts, part);
           plane < split_begin(planes_, parts, part + 1); ++plane)
        pool_plane(x + plane * h_ * w_, y + plane * oh_ * ow_, scratch);
    });
  }

 private:
  float identity() const { return max_ ? -std::numeric_limits<float>::infinity() : 0.f; }

  // The flat path's plan (see the top), for planes of up to kFlatFloats (larger ones have rows
  // long enough for the row path, which passes over them twice, not once per tap): blocks of
  // planes of about kFlatFloats, and per row tap i (column tap j) the positions of a block
  // whose tap lies inside the plane.
  // Windows of up to kMaxFlatTaps taps (a pass each; their masks hold kh + kw rows of a
  // block: a fuzzed kernel of millions of rows must not size them).
  static constexpr int64_t kFlatFloats = 1024, kMaxFlatTaps = 49;
  void prepare_flat() {
    const int64_t hw = h_ * w_;
    flat_ = sh_ == 1 && sw_ == 1 && dh_ == 1 && dw_ == 1 && oh_ == h_ && ow_ == w_ && hw > 0 &&
            hw <= kFlatFloats && planes_ > 0 && kh_ <= kMaxFlatTaps && kw_ <= kMaxFlatTaps &&
            kh_ * kw_ <= kMaxFlatTaps;
    if (!flat_) return;
    block_planes_ = std::min(kFlatFloats / hw, planes_);
    const int64_t n = block_planes_ * hw;
    row_inside_.assign(size_t(kh_ * n), 0);
    col_inside_.assign(size_t(kw_ * n), 0);
    for (int64_t f = 0; f < n; ++f) {
      const int64_t r = f % hw / w_, c = f % w_;
      for (int64_t i = 0; i < kh_; ++i)
        row_inside_[size_t(i * n + f)] = r - pad_t_ + i >= 0 && r - pad_t_ + i < h_ ? -1 : 0;
      for (int64_t j = 0; j < kw_; ++j)
        col_inside_[size_t(j * n + f)] = c - pad_l_ + j >= 0 && c - pad_l_ + j < w_ ? -1 : 0;
    }
  }

  // n planes (at most block_planes_) flat: y = the pool of x, both [n, h, w], reading x only
  // where a tap lies inside the plane (masked loads), so that nothing is copied and no scratch
  // is needed: at the ISA level all taps at once in registers, else a pass per tap.
  void pool_flat(const float* x, float* y, int64_t n) const {
    const int64_t count = n * h_ * w_, block = block_planes_ * h_ * w_;
    if (vec_) {
      vec_->flat({x, y, count, block, row_inside_.data(), col_inside_.data(), int(kh_), int(kw_),
                  w_, pad_t_, pad_l_, max_});
    } else {
      std::fill(y, y + count, identity());
      for (int64_t i = 0; i < kh_; ++i)
        for (int64_t j = 0; j < kw_; ++j) {
          const int32_t* row = row_inside_.data() + i * block;
          const int32_t* col = col_inside_.data() + j * block;
          const int64_t offset = (i - pad_t_) * w_ + (j - pad_l_);
          // (A NaN in x is passed over, as std::max passes it.)
          if (max_)
            for (int64_t f = 0; f < count; ++f)
              y[f] = (row[f] & col[f]) ? std::max(y[f], x[f + offset]) : y[f];
          else
            for (int64_t f = 0; f < count; ++f) y[f] += (row[f] & col[f]) ? x[f + offset] : 0.f;
        }
    }
    if (!max_)
      for (int64_t p = 0; p < n; ++p) divide(y + p * h_ * w_);
  }

  // AveragePool: one plane's sums divided by their windows' counts, stored by position so that
  // the loop vectorizes (with the counts' products per output it took half of a 17x17 pool's
  // time).
  void divide(float* y) const {
    const float* d = divisors_.data();
    for (int64_t i = 0; i < oh_ * ow_; ++i) y[i] /= d[i];
  }

  // The row-by-row path. rows: scratch of one input row.
  void pool_plane(const float* x, float* y, float* rows) const {
    for (int64_t oh = 0; oh < oh_; ++oh) {
      float* yrow = y + oh * ow_;
      const TapRange t = rows_in_[oh];
      if (t.lo >= t.hi) {  // all padding
        std::fill(yrow, yrow + ow_, identity());
        continue;
      }
      combine_rows(x + (oh * sh_ - pad_t_ + t.lo * dh_) * w_, dh_ * w_, t.hi - t.lo, rows);
      combine_columns(rows, yrow);
    }
    if (!max_) divide(y);
  }

  // rows[c] = the combination of the n input rows from a, `step` floats apart: the first 3 in
  // one pass (not a pass per row, each reading and writing rows again). For max, from
  // -inf: a NaN is passed over, as it was tap by tap.
  void combine_rows(const float* a, int64_t step, int64_t n, float* rows) const {
    const float init = identity();
    const float *b = a + step, *c = b + step;
    if (max_ && n >= 3)
      for (int64_t i = 0; i < w_; ++i)
        rows[i] = std::max(std::max(std::max(init, a[i]), b[i]), c[i]);
    else if (max_ && n == 2)
      for (int64_t i = 0; i < w_; ++i) rows[i] = std::max(std::max(init, a[i]), b[i]);
    else if (n >= 3)
      for (int64_t i = 0; i < w_; ++i) rows[i] = a[i] + b[i] + c[i];
    else if (n == 2)
      for (int64_t i = 0; i < w_; ++i) rows[i] = a[i] + b[i];
    else if (max_)
      for (int64_t i = 0; i < w_; ++i) rows[i] = std::max(init, a[i]);
    else
      std::copy(a, a + w_, rows);
    for (int64_t r = 3; r < n; ++r) {
      const float* row = a + r * step;
      for (int64_t i = 0; i < w_; ++i)
        rows[i] = max_ ? std::max(rows[i], row[i]) : rows[i] + row[i];
    }
  }

  // yrow[q] = the combination of the row's window columns. Undilated windows of up to 3
  // columns at stride 1 or 2: the columns whose window lies inside the row in one pass, the few
  // others (by the padding) one by one; other windows tap by tap over whole output rows.
  void combine_columns(const float* r, float* yrow) const {
    if (dw_ == 1 && kw_ <= 3 && (sw_ == 1 || sw_ == 2)) {
      if (kw_ == 3) return sw_ == 1 ? columns<3, 1>(r, yrow) : columns<3, 2>(r, yrow);
      if (kw_ == 2) return sw_ == 1 ? columns<2, 1>(r, yrow) : columns<2, 2>(r, yrow);
      return sw_ == 1 ? columns<1, 1>(r, yrow) : columns<1, 2>(r, yrow);
    }
    std::fill(yrow, yrow + ow_, identity());
    for (const ColumnTap& t : col_taps_) {
      // Constant strides 1 and 2 (nearly all pools) let the compiler vectorize.
      if (sw_ == 1)
        tap_row<1>(r, t.offset, yrow, t.lo, t.hi);
      else if (sw_ == 2)
        tap_row<2>(r, t.offset, yrow, t.lo, t.hi);
      else
        tap_row<0>(r, t.offset, yrow, t.lo, t.hi);
    }
  }

  template <int K, int S>
  void columns(const float* r, float* yrow) const {
    auto border = [&](int64_t q) {
      float v = identity();
      for (int64_t j = 0; j < K; ++j) {
        const int64_t c = q * S - pad_l_ + j;
        if (c >= 0 && c < w_) v = max_ ? std::max(v, r[c]) : v + r[c];
      }
      yrow[q] = v;
    };
    for (int64_t q = 0; q < inside_.lo; ++q) border(q);
    const float* p = r - pad_l_;  // (r's NaNs are gone: the taps combine as they come)
    if (max_)
      for (int64_t q = inside_.lo; q < inside_.hi; ++q) {
        float v = p[q * S];
        if constexpr (K > 1) v = std::max(v, p[q * S + 1]);
        if constexpr (K > 2) v = std::max(v, p[q * S + 2]);
        yrow[q] = v;
      }
    else
      for (int64_t q = inside_.lo; q < inside_.hi; ++q) {
        float v = p[q * S];
        if constexpr (K > 1) v += p[q * S + 1];
        if constexpr (K > 2) v += p[q * S + 2];
        yrow[q] = v;
      }
    for (int64_t q = inside_.hi; q < ow_; ++q) border(q);
  }

  // yrow[ow] = max(yrow[ow], xrow[ow * stride + offset]) (or +=) for ow in [lo, hi).
  template <int kStride>
  void tap_row(const float* xrow, int64_t offset, float* yrow, int64_t lo, int64_t hi) const {
    const int64_t stride = kStride ? kStride : sw_;
    if (max_) {
      for (int64_t ow = lo; ow < hi; ++ow)
        yrow[ow] = std::max(yrow[ow], xrow[ow * stride + offset]);
    } else {
      for (int64_t ow = lo; ow < hi; ++ow) yrow[ow] += xrow[ow * stride + offset];
    }
  }

  bool max_;
  int64_t planes_ = 0, h_ = 0, w_ = 0, oh_ = 0, ow_ = 0, kh_ = 0, kw_ = 0, sh_ = 0, sw_ = 0;
  int64_t dh_ = 0, dw_ = 0, pad_t_ = 0, pad_l_ = 0;
  TapRange cols_in_;
  struct ColumnTap {
    int64_t offset, lo, hi;  // input column = output column * sw + offset, for those in [lo, hi)
  };
  std::vector<ColumnTap> col_taps_;  // the column taps that reach the image
  std::vector<TapRange> rows_in_;    // per output row, its row taps inside the image
  TapRange inside_;                  // the output columns whose window lies inside a row
  std::vector<float> divisors_;      // AveragePool: taps counted per output position
  bool flat_ = false;                // the flat path
  int64_t block_planes_ = 1;
  std::vector<int32_t> row_inside_, col_inside_;  // per tap, a block's positions: -1 inside
  int64_t scratch_floats_ = 0;                    // per part (the row path's)
  const f32::PoolKernels* vec_ = nullptr;         // the flat path's, at the ISA level
  int threads_ = 1;                               // the most parts a run has
};

// 1-D and 2-D f32 pools; MaxPool without its Indices output.
bool supports_pool(const PrepareContext& ctx) {
  if (!is_static_f32(ctx, 0) || ctx.outputs.size() != 1) return false;
  const size_t rank = ctx.inputs[0].shape.rank();
  return rank == 3 || rank == 4;
}

class GlobalAveragePoolKernel final : public Kernel {
 public:
  void prepare(PrepareContext& ctx) override {
    const Shape& x = ctx.inputs[0].shape;
    planes_ = x[0] * x[1];
    size_ = x.numel() / std::max<int64_t>(planes_, 1);
  }
  void run(RunContext& ctx) const override {
    const float* x = ctx.inputs[0]->data<float>();
    float* y = ctx.outputs[0]->data<float>();
    const int64_t size = size_;
    parallel_for(threads_for(planes_ * size, ctx.threads), planes_, [&](int64_t p) {
      const float sum = Eigen::Map<const Eigen::ArrayXf>(x + p * size, size).sum();
      y[p] = size ? sum / float(size) : 0.f;
    });
  }

 private:
  int64_t planes_ = 0, size_ = 0;
};

bool supports_global_pool(const PrepareContext& ctx) {
  return is_static_f32(ctx, 0) && ctx.inputs[0].shape.rank() >= 3;
}

// NhwcGlobalAveragePool (ops/nhwc_ops.h): per image, the mean of its H * W rows of C floats,
// summed row after row into C accumulators (a loop over contiguous channels the compiler
// vectorizes), by blocks of channels.
class NhwcGlobalAveragePoolKernel final : public Kernel {
 public:
  void prepare(PrepareContext& ctx) override {
    const Shape& x = ctx.inputs[0].shape;
    n_ = x[0], hw_ = x[1] * x[2], c_ = x[3];
  }
  void run(RunContext& ctx) const override {
    const float* x = ctx.inputs[0]->data<float>();
    float* y = ctx.outputs[0]->data<float>();
    const int64_t blocks = (c_ + kBlock - 1) / kBlock;
    const int threads = threads_for(n_ * hw_ * c_, ctx.threads);
    parallel_for(threads, n_ * blocks, [&](int64_t unit) {
      const int64_t image = unit / blocks, c0 = unit % blocks * kBlock;
      const int64_t nc = std::min(kBlock, c_ - c0);
      float sum[kBlock] = {};
      const float* p = x + image * hw_ * c_ + c0;
      for (int64_t i = 0; i < hw_; ++i, p += c_)
        for (int64_t c = 0; c < nc; ++c) sum[c] += p[c];
      const float scale = hw_ ? 1.f / float(hw_) : 0.f;
      for (int64_t c = 0; c < nc; ++c) y[image * c_ + c0 + c] = sum[c] * scale;
    });
  }

 private:
  static constexpr int64_t kBlock = 256;
  int64_t n_ = 0, hw_ = 0, c_ = 0;
};

bool supports_nhwc_global_pool(const PrepareContext& ctx) {
  return is_static_f32(ctx, 0) && ctx.inputs[0].shape.rank() == 4;
}

}  // namespace

void register_pool_kernels(OpRegistry& r) {
  r.register_kernel(
      {"", "MaxPool", Device::Type::CPU, {DType::f32}, "cpu-maxpool", supports_pool, [] {
         return std::make_unique<PoolKernel>(true);
       }});
  r.register_kernel(
      {"", "AveragePool", Device::Type::CPU, {DType::f32}, "cpu-avgpool", supports_pool, [] {
         return std::make_unique<PoolKernel>(false);
       }});
  r.register_kernel({"",
                     "GlobalAveragePool",
                     Device::Type::CPU,
                     {DType::f32},
                     "cpu-global-avgpool",
                     supports_global_pool,
                     [] { return std::make_unique<GlobalAveragePoolKernel>(); }});
  r.register_kernel({kMinferDomain,
                     "NhwcGlobalAveragePool",
                     Device::Type::CPU,
                     {DType::f32},
                     "cpu-nhwc-global-avgpool",
                     supports_nhwc_global_pool,
                     [] { return std::make_unique<NhwcGlobalAveragePoolKernel>(); }});
}

}  // namespace minfer::cpu
