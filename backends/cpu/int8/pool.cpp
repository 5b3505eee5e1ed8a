// QMaxPool, QAveragePool and QGlobalAveragePool on NHWC int8 tensors (the global pool also on
// floats it quantizes first): loops over channels innermost (contiguous; the max pool in AVX2
// where the CPU has it, the averages vectorized by the compiler), the reference's integer
// arithmetic.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <vector>

#include "backends/cpu/int8/kernels.h"
#include "backends/cpu/int8/qgemm.h"  // MINFER_TARGET_AVX2, quantize_kernels
#include "backends/cpu/int8/requant.h"
#include "backends/cpu/isa.h"
#include "backends/cpu/parallel.h"
#include "ops/conv_geometry.h"
#include "ops/int8/int8_ops.h"

namespace minfer::cpu {

namespace {

bool nhwc_static(const PrepareContext& ctx) {
  return ctx.inputs[0].present && ctx.inputs[0].dtype == DType::i8 &&
         ctx.inputs[0].shape.is_static() && ctx.inputs[0].shape.rank() == 4 &&
         ctx.node.attrs.get_string("layout", "NCHW") == "NHWC";
}

struct Window {
  int64_t n, h, w, c, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
  bool include_pad;
};

Window window_of(const PrepareContext& ctx) {
  const Shape& x = ctx.inputs[0].shape;
  PoolGeometry g = pool_geometry(ctx.node, int8::nhwc_to_nchw_shape(x));
  if (g.rank() != 2) ctx.fail("the CPU int8 pooling kernels support 2-D windows");
  return {
      x[0],         x[1],         x[2],          x[3],          g.out_h(),          g.out_w(),
      g.kernel_h(), g.kernel_w(), g.stride_h(),  g.stride_w(),  g.dilations[0],     g.dilations[1],
      g.pad_top(),  g.pad_left(), g.pads_end[0], g.pads_end[1], g.count_include_pad};
}

// out[i] = the max over the taps of base[offsets[t] + i], for i in [i0, c) (-128 where there is
// no tap: padding never wins).
void max_taps(const int8_t* base, const int64_t* offsets, int64_t n, int64_t c, int8_t* out,
              int64_t i0 = 0) {
  for (int64_t i = i0; i < c; ++i) {
    int8_t m = -128;
    for (int64_t t = 0; t < n; ++t) m = std::max(m, base[offsets[t] + i]);
    out[i] = m;
  }
}
// The same, 32 channels a vector, the max kept in a register over the taps (the scalar form
// above, tap by tap through memory, took 4x as long on ResNet's 3x3 pool).
MINFER_TARGET_AVX2 void max_taps_avx2(const int8_t* base, const int64_t* offsets, int64_t n,
                                      int64_t c, int8_t* out) {
  auto at = [&](int64_t t, int64_t i) { return base + offsets[t] + i; };
  int64_t i = 0;
  for (; i + 32 <= c; i += 32) {
    __m256i m = _mm256_set1_epi8(-128);
    for (int64_t t = 0; t < n; ++t)
      m = _mm256_max_epi8(m, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at(t, i))));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), m);
  }
  for (; i + 16 <= c; i += 16) {
    __m128i m = _mm_set1_epi8(-128);
    for (int64_t t = 0; t < n; ++t)
      m = _mm_max_epi8(m, _mm_loadu_si128(reinterpret_cast<const __m128i*>(at(t, i))));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), m);
  }
  max_taps(base, offsets, n, c, out, i);
}

class QMaxPoolKernel final : public Kernel {
 public:
  void prepare(PrepareContext& ctx) override {
    w_ = window_of(ctx);
    // A window's taps from its first one: the same for every window inside the image (a table
    // built per pixel, with a bounds check per tap, took most of ResNet's 3x3 pool's time).
    window_.clear();
    for (int64_t ky = 0; ky < w_.kh; ++ky)
      for (int64_t kx = 0; kx < w_.kw; ++kx)
        window_.push_back((ky * w_.dh * w_.w + kx * w_.dw) * w_.c);
  }
  void run(RunContext& ctx) const override {
    const Window& w = w_;
    const int8_t* x = ctx.inputs[0]->data<int8_t>();
    int8_t* y = ctx.outputs[0]->data<int8_t>();
    const bool avx2 = has_any_isa();
    parallel_for(threads_for(w.n * w.oh * w.ow * w.c * w.kh * w.kw, ctx.threads), w.n * w.oh,
                 [&](int64_t row) {
                   const int64_t n = row / w.oh, oy = row % w.oh;
                   const int8_t* image = x + n * w.h * w.w * w.c;
                   std::vector<int64_t> taps(window_.size());  // an edge window's, from image
                   const int64_t iy0 = oy * w.sh - w.pt;
                   const bool rows_inside = iy0 >= 0 && iy0 + (w.kh - 1) * w.dh < w.h;
                   for (int64_t ox = 0; ox < w.ow; ++ox) {
                     const int64_t ix0 = ox * w.sw - w.pl;
                     const int8_t* base = image;
                     const int64_t* offsets = window_.data();
                     int64_t count = w.kh * w.kw;
                     if (rows_inside && ix0 >= 0 && ix0 + (w.kw - 1) * w.dw < w.w) {
                       base += (iy0 * w.w + ix0) * w.c;
                     } else {
                       offsets = taps.data();
                       count = 0;  // the taps inside the image
                       for (int64_t ky = 0; ky < w.kh; ++ky) {
                         const int64_t iy = iy0 + ky * w.dh;
                         if (iy < 0 || iy >= w.h) continue;
                         for (int64_t kx = 0; kx < w.kw; ++kx) {
                           const int64_t ix = ix0 + kx * w.dw;
                           if (ix >= 0 && ix < w.w) taps[count++] = (iy * w.w + ix) * w.c;
                         }
                       }
                     }
                     int8_t* out = y + (row * w.ow + ox) * w.c;
                     avx2 ? max_taps_avx2(base, offsets, count, w.c, out)
                          : max_taps(base, offsets, count, w.c, out);
                   }
                 });
  }

 private:
  Window w_{};
  std::vector<int64_t> window_;  // tap t's offset from the window's first tap
};

// acc[i] = offset + the sum over the n taps of taps[t][i], for i in [i0, c).
void sum_taps(const int8_t* const* taps, int64_t n, int64_t c, int32_t offset, int32_t* acc,
              int64_t i0 = 0) {
  for (int64_t i = i0; i < c; ++i) {
    int32_t sum = offset;
    for (int64_t t = 0; t < n; ++t) sum += taps[t][i];
    acc[i] = sum;
  }
}
// 16 int16 sums widened to int32 plus the offset, stored at acc.
MINFER_TARGET_AVX2 void store_sums(__m256i sums, __m256i offset, int32_t* acc) {
  const __m256i lo = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(sums));
  const __m256i hi = _mm256_cvtepi16_epi32(_mm256_extracti128_si256(sums, 1));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc), _mm256_add_epi32(offset, lo));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + 8), _mm256_add_epi32(offset, hi));
}
// The same, 64 channels at a time summed in registers over all taps, in 16 bits (up to 256
// taps cannot overflow them); the scalar form's sums through memory, a read and a write per
// tap, took most of Inception v3's average pools' time.
MINFER_TARGET_AVX2 void sum_taps_avx2(const int8_t* const* taps, int64_t n, int64_t c,
                                      int32_t offset, int32_t* acc) {
  if (n > 256) return sum_taps(taps, n, c, offset, acc);
  const __m256i off = _mm256_set1_epi32(offset);
  auto widen = [](__m128i v) { return _mm256_cvtepi8_epi16(v); };
  int64_t i = 0;
  for (; i + 64 <= c; i += 64) {
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    for (int64_t t = 0; t < n; ++t) {
      const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(taps[t] + i));
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(taps[t] + i + 32));
      s0 = _mm256_add_epi16(s0, widen(_mm256_castsi256_si128(a)));
      s1 = _mm256_add_epi16(s1, widen(_mm256_extracti128_si256(a, 1)));
      s2 = _mm256_add_epi16(s2, widen(_mm256_castsi256_si128(b)));
      s3 = _mm256_add_epi16(s3, widen(_mm256_extracti128_si256(b, 1)));
    }
    store_sums(s0, off, acc + i);
    store_sums(s1, off, acc + i + 16);
    store_sums(s2, off, acc + i + 32);
    store_sums(s3, off, acc + i + 48);
  }
  for (; i + 16 <= c; i += 16) {
    __m256i s = _mm256_setzero_si256();
    for (int64_t t = 0; t < n; ++t)
      s = _mm256_add_epi16(s,
                           widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(taps[t] + i))));
    store_sums(s, off, acc + i);
  }
  sum_taps(taps, n, c, offset, acc, i);
}

// The taps of each output row (or column) inside the input, or with count_include_pad inside
// it and its pads: a window counts their product.
std::vector<int64_t> taps_per_output(int64_t outputs, int64_t stride, int64_t pad_before, int64_t k,
                                     int64_t dilation, int64_t lo, int64_t hi) {
  std::vector<int64_t> taps(static_cast<size_t>(outputs));
  for (int64_t o = 0; o < outputs; ++o)
    for (int64_t t = 0; t < k; ++t) {
      const int64_t i = o * stride - pad_before + t * dilation;
      taps[static_cast<size_t>(o)] += i >= lo && i < hi;
    }
  return taps;
}

class QAvgPoolKernel final : public Kernel {
 public:
  void prepare(PrepareContext& ctx) override {
    w_ = window_of(ctx);
    st_ = int8::parse_pool_stage(ctx.node);
    const Window& w = w_;
    rows_ = taps_per_output(w.oh, w.sh, w.pt, w.kh, w.dh, w.include_pad ? -w.pt : 0,
                            w.include_pad ? w.h + w.pb : w.h);
    cols_ = taps_per_output(w.ow, w.sw, w.pl, w.kw, w.dw, w.include_pad ? -w.pl : 0,
                            w.include_pad ? w.w + w.pr : w.w);
    // Per tap count that some window has, its multiplier; at the ISA level as the convs'
    // output stage (RequantKernels: a vector of channels at a time), else int8::requantize.
    stages_.assign(static_cast<size_t>(w.kh * w.kw + 1), {});
    requant_ = has_any_isa() ? q8::requant_kernels(active_isa()).tile : nullptr;
    for (int64_t r : rows_)
      for (int64_t c : cols_) {
        int8::OutputStage& stage = stages_[static_cast<size_t>(r * c)];
        if (r * c == 0 || !stage.mult.empty()) continue;
        stage.mult.assign(static_cast<size_t>(w.c), int8::pool_multiplier(st_, r * c));
        stage.zero_point = st_.y_zero_point;
        if (requant_) requants_[r * c] = q8::make_requant(stage, w.c);
      }
    params_.assign(stages_.size(), {});
    for (const auto& [count, rq] : requants_) params_[static_cast<size_t>(count)] = rq.params();
    ctx.workspace_bytes =
        static_cast<size_t>(w.c * w.n * w.oh) * 4;  // a row of sums per output row
  }
  void run(RunContext& ctx) const override {
    const Window& w = w_;
    const int8_t* x = ctx.inputs[0]->data<int8_t>();
    int8_t* y = ctx.outputs[0]->data<int8_t>();
    int32_t* sums = static_cast<int32_t*>(ctx.workspace);
    auto inside = [](int64_t i, int64_t n) { return i >= 0 && i < n; };
    const bool avx2 = has_any_isa();
    parallel_for(threads_for(w.n * w.oh * w.ow * w.c * w.kh * w.kw, ctx.threads), w.n * w.oh,
                 [&](int64_t row) {
                   const int64_t n = row / w.oh, oy = row % w.oh;
                   int32_t* acc = sums + row * w.c;
                   std::vector<const int8_t*> taps(static_cast<size_t>(w.kh * w.kw));
                   for (int64_t ox = 0; ox < w.ow; ++ox) {
                     int8_t* out = y + (row * w.ow + ox) * w.c;
                     const int64_t count = rows_[oy] * cols_[ox];
                     if (count == 0) {
                       std::memset(out, static_cast<int8_t>(st_.y_zero_point), w.c);
                       continue;
                     }
                     int64_t n_taps = 0;  // inside the input
                     for (int64_t ky = 0; ky < w.kh; ++ky) {
                       const int64_t iy = oy * w.sh - w.pt + ky * w.dh;
                       for (int64_t kx = 0; kx < w.kw; ++kx) {
                         const int64_t ix = ox * w.sw - w.pl + kx * w.dw;
                         if (inside(iy, w.h) && inside(ix, w.w))
                           taps[n_taps++] = x + ((n * w.h + iy) * w.w + ix) * w.c;
                       }
                     }
                     const int32_t offset = -st_.x_zero_point * static_cast<int32_t>(n_taps);
                     avx2 ? sum_taps_avx2(taps.data(), n_taps, w.c, offset, acc)
                          : sum_taps(taps.data(), n_taps, w.c, offset, acc);
                     if (requant_) {
                       requant_(params_[count], acc, 0, 1, 0, w.c, out, 0, nullptr);
                       continue;
                     }
                     const int8::OutputStage& stage = stages_[static_cast<size_t>(count)];
                     for (int64_t c = 0; c < w.c; ++c)
                       out[c] = int8::requantize_clamp(acc[c], stage.mult[0], stage.zero_point,
                                                       stage.qmin, stage.qmax);
                   }
                 });
  }

 private:
  Window w_{};
  int8::PoolStage st_;
  std::vector<int64_t> rows_, cols_;         // taps counted per output row and column
  std::vector<int8::OutputStage> stages_;    // by tap count: the counts that some window has
  std::map<int64_t, q8::Requant> requants_;  // the same at the ISA level
  std::vector<q8::RequantParams> params_;    // and their parameters, by tap count
  q8::RequantTile requant_ = nullptr;
};

// A float input (the quantize-pool-fusion pass: an SE block's QuantizeLinear folded in) is
// quantized and summed in registers at the ISA level (QuantizeKernels::sum: QuantizeLinear's
// arithmetic, so the same int8 values): the int8 tensor is never written.
class QGlobalAvgPoolKernel final : public Kernel {
 public:
  static bool supports(const PrepareContext& ctx) {
    const TensorInfo& x = ctx.inputs[0];
    return x.present && x.shape.is_static() && x.shape.rank() == 4 &&
           ctx.node.attrs.get_string("layout", "NCHW") == "NHWC" &&
           (x.dtype == DType::i8 || (x.dtype == DType::f32 && has_any_isa()));
  }

  void prepare(PrepareContext& ctx) override {
    const Shape& x = ctx.inputs[0].shape;
    n_ = x[0];
    hw_ = x[1] * x[2];
    c_ = x[3];
    st_ = int8::parse_pool_stage(ctx.node);
    mult_ = int8::pool_multiplier(st_, std::max<int64_t>(hw_, 1));
    quantize_ = ctx.inputs[0].dtype == DType::f32 ? &q8::quantize_kernels(active_isa()) : nullptr;
    // Per thread: its share's sums of every image.
    parts_ = std::max(1, threads_for(n_ * hw_ * c_, ctx.threads));
    ctx.workspace_bytes = size_t(parts_) * size_t(n_ * c_) * 4;
  }
  std::string variant() const override {  // a float input's: the ISA level of its sums
    return quantize_ ? isa_name(quantize_->isa) : "";
  }

  void run(RunContext& ctx) const override {
    int8_t* y = ctx.outputs[0]->data<int8_t>();
    auto* workspace = static_cast<int32_t*>(ctx.workspace);
    // Each thread sums its share of every image's pixels (one image's halves at batch 1).
    const int parts = std::min(parts_, std::max(1, ctx.threads));
    parallel_region(parts, [&](int part, int nparts) {
      int32_t* sums = workspace + part * n_ * c_;
      const int64_t p0 = split_begin(hw_, nparts, part), p1 = split_begin(hw_, nparts, part + 1);
      for (int64_t n = 0; n < n_; ++n) {
        int32_t* acc = sums + n * c_;
        std::fill(acc, acc + c_, 0);
        if (!quantize_) {
          add_rows(ctx.inputs[0]->data<int8_t>() + (n * hw_ + p0) * c_, p1 - p0, acc);
          continue;
        }
        quantize_->sum(ctx.inputs[0]->data<float>() + (n * hw_ + p0) * c_, p1 - p0, c_, st_.x_scale,
                       st_.x_zero_point, acc);
      }
    });
    // The shares' sums, less the zero point's, requantized.
    for (int64_t n = 0; n < n_; ++n)
      for (int64_t c = 0; c < c_; ++c) {
        int32_t sum = -st_.x_zero_point * static_cast<int32_t>(hw_);
        for (int part = 0; part < parts; ++part) sum += workspace[(part * n_ + n) * c_ + c];
        y[n * c_ + c] =
            int8::requantize_clamp(sum, mult_, st_.y_zero_point, int8::kQMin, int8::kQMax);
      }
  }

 private:
  // acc[c] += the `pixels` rows (c_ channels each) at `rows`, channel by channel.
  void add_rows(const int8_t* rows, int64_t pixels, int32_t* acc) const {
    int64_t c0 = 0;
    for (; c0 + 64 <= c_; c0 += 64) add_block<64>(rows, pixels, c0, acc);
    if (c0 + 32 <= c_) add_block<32>(rows, pixels, c0, acc), c0 += 32;
    if (c0 + 16 <= c_) add_block<16>(rows, pixels, c0, acc), c0 += 16;
    if (c0 + 8 <= c_) add_block<8>(rows, pixels, c0, acc), c0 += 8;
    for (; c0 < c_; ++c0) add_block<1>(rows, pixels, c0, acc);
  }
  // Channels [c0, c0 + B) summed over the rows into acc: B sums held in registers across the
  // pixels (one pass over the rows per block, 64 channels at a time, then 32, 16, 8 and single
  // ones), where summing every pixel into acc in memory read and wrote each sum per pixel.
  template <int64_t B>
  void add_block(const int8_t* rows, int64_t pixels, int64_t c0, int32_t* acc) const {
    int32_t s[B];
    std::copy_n(acc + c0, B, s);
    for (int64_t i = 0; i < pixels; ++i) {
      const int8_t* in = rows + i * c_ + c0;
      for (int64_t j = 0; j < B; ++j) s[j] += in[j];
    }
    std::copy_n(s, B, acc + c0);
  }

  int64_t n_ = 0, hw_ = 0, c_ = 0;
  int8::PoolStage st_;
  int8::Multiplier mult_;
  const q8::QuantizeKernels* quantize_ = nullptr;  // a float input's, at the ISA level
  int parts_ = 1;                                  // the threads' shares of the pixels
};

}  // namespace

void register_int8_pool_kernels(OpRegistry& r) {
  r.register_kernel(
      {kMinferDomain, "QMaxPool", Device::Type::CPU, {DType::i8}, "cpu-nhwc", nhwc_static, [] {
         return std::make_unique<QMaxPoolKernel>();
       }});
  r.register_kernel(
      {kMinferDomain, "QAveragePool", Device::Type::CPU, {DType::i8}, "cpu-nhwc", nhwc_static, [] {
         return std::make_unique<QAvgPoolKernel>();
       }});
  r.register_kernel({kMinferDomain,
                     "QGlobalAveragePool",
                     Device::Type::CPU,
                     {DType::i8, DType::f32},
                     "cpu-nhwc",
                     QGlobalAvgPoolKernel::supports,
                     [] { return std::make_unique<QGlobalAvgPoolKernel>(); }});
}

}  // namespace minfer::cpu
