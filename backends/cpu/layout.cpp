// Data-movement kernels for any element type: Transpose, Concat, Slice, Pad, and the reshape-like
// ops (Flatten, Reshape, Identity, Unsqueeze, Squeeze, Dropout) whose output is the input's bytes.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "backends/cpu/isa.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "ops/op_util.h"
#include "ops/pad.h"
#include "ops/slice.h"

namespace minfer::cpu {

namespace {

// Copies input 0 to output 0 unchanged (only the shape differs).
class CopyKernel final : public Kernel {
 public:
  void run(RunContext& ctx) const override {
    const Tensor& x = *ctx.inputs[0];
    Tensor& y = *ctx.outputs[0];
    if (y.raw() != x.raw() && y.nbytes()) std::memcpy(y.raw(), x.raw(), y.nbytes());
  }
};

bool supports_copy(const PrepareContext& ctx) {
  return !ctx.inputs.empty() && ctx.inputs[0].present && ctx.outputs.size() == 1 &&
         ctx.outputs[0].present && ctx.inputs[0].dtype == ctx.outputs[0].dtype &&
         ctx.inputs[0].shape.is_static() && ctx.outputs[0].shape.is_static() &&
         ctx.inputs[0].shape.numel() == ctx.outputs[0].shape.numel();
}

// Dropout is a copy without a mask output and without run-time ratio or training_mode inputs
// (the reference kernel checks those values when they arrive).
bool supports_dropout_copy(const PrepareContext& ctx) {
  for (size_t i = 1; i < ctx.inputs.size(); ++i)
    if (ctx.inputs[i].present && !ctx.inputs[i].constant) return false;
  return supports_copy(ctx);
}

// ---- Transpose ---------------------------------------------------------------------------
// Dims of size 1 are dropped and input dims that stay adjacent in the output are merged.
// If the innermost dim stays innermost, rows are copied; otherwise the two output dims that
// read and write contiguously are transposed in square tiles, so that both sides of the
// copy touch whole cache lines, 16x16 bytes or 8x8 4-byte elements at a time in registers.

// The byte shuffles of interleave3_bytes: output vector k (pixels [16k/3, ...)) takes channel c's
// bytes at kInterleave3[k][c] (0x80: a byte of another channel).
using ShuffleMasks = std::array<std::array<std::array<uint8_t, 16>, 3>, 3>;
constexpr ShuffleMasks interleave3_masks() {
  ShuffleMasks m{};
  for (int k = 0; k < 3; ++k)
    for (int c = 0; c < 3; ++c)
      for (int j = 0; j < 16; ++j)
        m[k][c][j] = (16 * k + j) % 3 == c ? static_cast<uint8_t>((16 * k + j) / 3) : 0x80;
  return m;
}
constexpr ShuffleMasks kInterleave3 = interleave3_masks();

// Pixels [a0, a1) of three byte planes `plane` apart, interleaved: y[3a + c] = x[c * plane + a]
// (an RGB image's bytes to channels-last). 16 pixels a step, each 16 output bytes three
// shuffles; the scalar loop took 2.6 cycles a byte (ResNet-18 int8's input: 0.11 ms).
__attribute__((target("avx2"))) void interleave3_bytes(const uint8_t* x, int64_t plane,
                                                       uint8_t* y, int64_t a0, int64_t a1) {
  auto mask = [](int k, int c) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(kInterleave3[k][c].data()));
  };
  int64_t a = a0;
  for (; a + 16 <= a1; a += 16) {
    const __m128i v[3] = {_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + a)),
                          _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + plane + a)),
                          _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + 2 * plane + a))};
    for (int k = 0; k < 3; ++k) {
      const __m128i out = _mm_or_si128(
          _mm_or_si128(_mm_shuffle_epi8(v[0], mask(k, 0)), _mm_shuffle_epi8(v[1], mask(k, 1))),
          _mm_shuffle_epi8(v[2], mask(k, 2)));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + 3 * a + 16 * k), out);
    }
  }
  for (; a < a1; ++a)
    for (int c = 0; c < 3; ++c) y[3 * a + c] = x[c * plane + a];
}

// A 16x16 block of bytes transposed: dst row a (16 bytes at dst + a * dst_stride) = column a of
// the 16 source rows (src + b * src_stride). Four rounds of interleaves; the scalar loop moved
// 1.5 bytes a cycle (DenseNet-121 int8's NCHW -> NHWC Transposes, 6.3 of its 16 ms).
__attribute__((target("avx2"))) void transpose_bytes_16x16(const uint8_t* src, int64_t src_stride,
                                                           uint8_t* dst, int64_t dst_stride) {
  __m128i r[16], t[16];
  for (int b = 0; b < 16; ++b)
    r[b] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + b * src_stride));
  for (int k = 0; k < 8; ++k) {  // byte pairs of rows 2k, 2k + 1: t[2k] a 0-7, t[2k + 1] a 8-15
    t[2 * k] = _mm_unpacklo_epi8(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm_unpackhi_epi8(r[2 * k], r[2 * k + 1]);
  }
  for (int j = 0; j < 4; ++j) {  // rows 4j..4j+3: r[4j + q] a 4q..4q+3
    r[4 * j] = _mm_unpacklo_epi16(t[4 * j], t[4 * j + 2]);
    r[4 * j + 1] = _mm_unpackhi_epi16(t[4 * j], t[4 * j + 2]);
    r[4 * j + 2] = _mm_unpacklo_epi16(t[4 * j + 1], t[4 * j + 3]);
    r[4 * j + 3] = _mm_unpackhi_epi16(t[4 * j + 1], t[4 * j + 3]);
  }
  for (int h = 0; h < 2; ++h)  // rows 8h..8h+7: t[8h + 2q + e] a 4q + 2e, 4q + 2e + 1
    for (int q = 0; q < 4; ++q) {
      t[8 * h + 2 * q] = _mm_unpacklo_epi32(r[8 * h + q], r[8 * h + 4 + q]);
      t[8 * h + 2 * q + 1] = _mm_unpackhi_epi32(r[8 * h + q], r[8 * h + 4 + q]);
    }
  for (int k = 0; k < 8; ++k) {  // rows 0-7 and 8-15 of a = 2k and 2k + 1
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2 * k * dst_stride),
                     _mm_unpacklo_epi64(t[k], t[8 + k]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (2 * k + 1) * dst_stride),
                     _mm_unpackhi_epi64(t[k], t[8 + k]));
  }
}

// The same for an 8x8 block of 4-byte elements.
__attribute__((target("avx2"))) void transpose_words_8x8(const uint32_t* src, int64_t src_stride,
                                                         uint32_t* dst, int64_t dst_stride) {
  __m256 r[8], t[8];
  for (int b = 0; b < 8; ++b)
    r[b] = _mm256_loadu_ps(reinterpret_cast<const float*>(src + b * src_stride));
  for (int k = 0; k < 4; ++k) {
    t[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
  }
  for (int j = 0; j < 2; ++j) {
    r[4 * j] = _mm256_shuffle_ps(t[4 * j], t[4 * j + 2], 0x44);
    r[4 * j + 1] = _mm256_shuffle_ps(t[4 * j], t[4 * j + 2], 0xEE);
    r[4 * j + 2] = _mm256_shuffle_ps(t[4 * j + 1], t[4 * j + 3], 0x44);
    r[4 * j + 3] = _mm256_shuffle_ps(t[4 * j + 1], t[4 * j + 3], 0xEE);
  }
  for (int q = 0; q < 4; ++q) {
    _mm256_storeu_ps(reinterpret_cast<float*>(dst + q * dst_stride),
                     _mm256_permute2f128_ps(r[q], r[4 + q], 0x20));
    _mm256_storeu_ps(reinterpret_cast<float*>(dst + (q + 4) * dst_stride),
                     _mm256_permute2f128_ps(r[q], r[4 + q], 0x31));
  }
}

class TransposeKernel final : public Kernel {
 public:
  void prepare(PrepareContext& ctx) override {
    const Shape& x = ctx.inputs[0].shape;
    elem_ = dtype_size(ctx.inputs[0].dtype);
    const size_t rank = x.rank();
    std::vector<int64_t> perm;
    for (size_t i = rank; i-- > 0;) perm.push_back(int64_t(i));
    perm = ctx.node.attrs.get_ints("perm", perm);
    // Input dims kept (size > 1), renumbered; then merge runs that stay in order.
    std::vector<int64_t> keep(rank, -1), in_dims;
    for (size_t i = 0; i < rank; ++i)
      if (x[i] != 1) keep[i] = int64_t(in_dims.size()), in_dims.push_back(x[i]);
    std::vector<int64_t> p;
    for (int64_t d : perm)
      if (keep[d] >= 0) p.push_back(keep[d]);
    // Merge input dims a, a+1 when a+1 follows a in p.
    std::vector<int64_t> group(in_dims.size());  // input dim -> merged dim
    std::vector<int64_t> merged_dims;
    for (size_t i = 0; i < in_dims.size(); ++i) {
      bool follows = false;
      for (size_t j = 1; j < p.size(); ++j)
        if (p[j] == int64_t(i) && p[j - 1] == int64_t(i) - 1) follows = true;
      if (follows) {
        merged_dims.back() *= in_dims[i];
      } else {
        merged_dims.push_back(in_dims[i]);
      }
      group[i] = int64_t(merged_dims.size()) - 1;
    }
    std::vector<int64_t> mp;
    for (int64_t d : p)
      if (mp.empty() || mp.back() != group[d]) mp.push_back(group[d]);
    // Strides of the merged input, seen in output order.
    const size_t r = merged_dims.size();
    std::vector<int64_t> in_strides(r, 1);
    for (size_t i = r; i-- > 1;) in_strides[i - 1] = in_strides[i] * merged_dims[i];
    out_dims_.assign(r, 1);
    read_strides_.assign(r, 1);
    for (size_t j = 0; j < r; ++j) {
      out_dims_[j] = merged_dims[mp[j]];
      read_strides_[j] = in_strides[mp[j]];
    }
    write_strides_.assign(r, 1);
    for (size_t j = r; j-- > 1;) write_strides_[j - 1] = write_strides_[j] * out_dims_[j];
    // The output dim that reads the input's innermost dim (tiled against the last one).
    tile_dim_ = -1;
    for (size_t j = 0; j < r; ++j)
      if (mp[j] == int64_t(r) - 1) tile_dim_ = int64_t(j);
    total_ = x.numel();
  }

  void run(RunContext& ctx) const override {
    const char* x = static_cast<const char*>(ctx.inputs[0]->raw());
    char* y = static_cast<char*>(ctx.outputs[0]->raw());
    switch (elem_) {
      case 1:
        run_typed<uint8_t>(x, y, ctx.threads);
        break;
      case 2:
        run_typed<uint16_t>(x, y, ctx.threads);
        break;
      case 4:
        run_typed<uint32_t>(x, y, ctx.threads);
        break;
      default:
        run_typed<uint64_t>(x, y, ctx.threads);
        break;
    }
  }

 private:
  template <typename T>
  void run_typed(const char* xb, char* yb, int threads) const {
    const T* x = reinterpret_cast<const T*>(xb);
    T* y = reinterpret_cast<T*>(yb);
    const size_t r = out_dims_.size();
    if (total_ == 0) return;
    if (r <= 1) {  // nothing moves
      std::memcpy(y, x, size_t(total_) * sizeof(T));
      return;
    }
    if (tile_dim_ == int64_t(r) - 1) {  // the innermost dim stays innermost: copy rows
      const int64_t row = out_dims_.back(), rows = total_ / row;
      parallel_for(threads_for(total_, threads), rows, [&](int64_t i) {
        std::memcpy(y + i * row, x + offset(i, r - 1), size_t(row) * sizeof(T));
      });
      return;
    }
    const int64_t td = tile_dim_, a_len = out_dims_[td], b_len = out_dims_.back();
    const int64_t a_write = write_strides_[td], b_read = read_strides_.back();
    // Three byte planes to channels-last (int8 RGB): runs of pixels, not square tiles.
    const bool simd = has_any_isa();
    const bool planes3 = sizeof(T) == 1 && b_len == 3 && a_write == 3 && simd;
    // Units: (index over the other dims, tile row of dim tile_dim_).
    const int64_t kTile = planes3 ? 4096 : 32;
    const int64_t a_tiles = (a_len + kTile - 1) / kTile;
    const int64_t others = total_ / (a_len * b_len);
    parallel_for(threads_for(total_, threads), others * a_tiles, [&](int64_t u) {
      const int64_t o = u / a_tiles, a0 = u % a_tiles * kTile, a1 = std::min(a_len, a0 + kTile);
      // Offsets of the other dims' index o (all dims but td and the last).
      int64_t rest = o, in_off = 0, out_off = 0;
      for (size_t j = r - 1; j-- > 0;) {
        if (int64_t(j) == td) continue;
        const int64_t idx = rest % out_dims_[j];
        rest /= out_dims_[j];
        in_off += idx * read_strides_[j];
        out_off += idx * write_strides_[j];
      }
      if constexpr (sizeof(T) == 1) {
        if (planes3) {
          interleave3_bytes(reinterpret_cast<const uint8_t*>(x + in_off), b_read,
                            reinterpret_cast<uint8_t*>(y + out_off), a0, a1);
          return;
        }
      }
      for (int64_t b0 = 0; b0 < b_len; b0 += kTile) {
        const int64_t b1 = std::min(b_len, b0 + kTile);
        // Whole blocks in registers, the edges element by element.
        int64_t a_blocks = a0, b_blocks = b0;
        if constexpr (sizeof(T) == 1 || sizeof(T) == 4) {
          constexpr int64_t kBlock = sizeof(T) == 1 ? 16 : 8;
          if (simd) {
            a_blocks = a0 + (a1 - a0) / kBlock * kBlock;
            b_blocks = b0 + (b1 - b0) / kBlock * kBlock;
            for (int64_t a = a0; a < a_blocks; a += kBlock)
              for (int64_t b = b0; b < b_blocks; b += kBlock) {
                const T* src = x + in_off + a + b * b_read;
                T* dst = y + out_off + a * a_write + b;
                if constexpr (sizeof(T) == 1)
                  transpose_bytes_16x16(src, b_read, dst, a_write);
                else
                  transpose_words_8x8(src, b_read, dst, a_write);
              }
          }
        }
        for (int64_t a = a0; a < a1; ++a) {
          const T* src = x + in_off + a;  // the input's innermost dim
          T* dst = y + out_off + a * a_write;
          for (int64_t b = a < a_blocks ? b_blocks : b0; b < b1; ++b) dst[b] = src[b * b_read];
        }
      }
    });
  }

  // Input offset of output row `i` over the first `dims` output dims.
  int64_t offset(int64_t i, size_t dims) const {
    int64_t off = 0;
    for (size_t j = dims; j-- > 0;) {
      off += i % out_dims_[j] * read_strides_[j];
      i /= out_dims_[j];
    }
    return off;
  }

  size_t elem_ = 4;
  int64_t total_ = 0, tile_dim_ = -1;
  std::vector<int64_t> out_dims_, read_strides_, write_strides_;
};

bool supports_static(const PrepareContext& ctx) {
  return !ctx.inputs.empty() && ctx.inputs[0].present && ctx.inputs[0].shape.is_static() &&
         ctx.outputs.size() == 1 && dtype_size(ctx.inputs[0].dtype) <= 8;
}

// ---- Concat --------------------------------------------------------------------------------

class ConcatKernel final : public Kernel {
 public:
  void prepare(PrepareContext& ctx) override {
    const Shape& y = ctx.outputs[0].shape;
    const size_t axis =
        normalize_axis(ctx.node, ctx.node.attrs.get_int("axis", 0), int64_t(y.rank()), "axis");
    const size_t es = dtype_size(ctx.outputs[0].dtype);
    outer_ = dims_product(y, 0, axis);
    const int64_t inner = dims_product(y, axis + 1, y.rank());
    chunk_bytes_.clear();
    starts_.clear();
    size_t start = 0;
    for (const TensorInfo& in : ctx.inputs) {
      chunk_bytes_.push_back(in.present ? size_t(in.shape[axis] * inner) * es : 0);
      starts_.push_back(start);
      start += chunk_bytes_.back();
    }
    row_bytes_ = size_t(y[axis] * inner) * es;
    total_ = y.numel();
  }

  void run(RunContext& ctx) const override {
    char* y = static_cast<char*>(ctx.outputs[0]->raw());
    const int64_t inputs = int64_t(chunk_bytes_.size());
    parallel_for(threads_for(total_, ctx.threads), outer_ * inputs, [&](int64_t u) {
      const int64_t o = u / inputs, i = u % inputs;
      if (!chunk_bytes_[i]) return;
      const char* x = static_cast<const char*>(ctx.inputs[i]->raw());
      std::memcpy(y + o * row_bytes_ + starts_[i], x + o * chunk_bytes_[i], chunk_bytes_[i]);
    });
  }

 private:
  int64_t outer_ = 0, total_ = 0;
  size_t row_bytes_ = 0;
  std::vector<size_t> chunk_bytes_;  // bytes each input contributes to one outer row
  std::vector<size_t> starts_;       // where they start in an output row
};

bool supports_concat(const PrepareContext& ctx) {
  if (ctx.outputs.size() != 1 || !ctx.outputs[0].shape.is_static()) return false;
  for (const TensorInfo& in : ctx.inputs)
    if (in.present && (!in.shape.is_static() || in.dtype != ctx.outputs[0].dtype)) return false;
  return true;
}

// ---- Slice ---------------------------------------------------------------------------------

// A strided copy: per output dim, the input offset of its first element and the input stride
// of one step; the last dim is one memcpy when its step is 1 (ViT's Q/K/V split: 197 rows of
// 768 floats).
class SliceKernel final : public Kernel {
 public:
  void prepare(PrepareContext& ctx) override {
    const Shape& x = ctx.inputs[0].shape;
    std::vector<const Tensor*> params;
    for (size_t i = 1; i < ctx.inputs.size(); ++i)
      params.push_back(ctx.inputs[i].present ? ctx.inputs[i].constant : nullptr);
    const std::vector<DimSlice> r = slice_ranges_of(ctx.node, x, params);
    elem_ = dtype_size(ctx.inputs[0].dtype);
    const std::vector<int64_t> xs = row_major_strides(x);
    out_dims_.clear();
    steps_.clear();
    base_ = 0;
    for (size_t d = 0; d < x.rank(); ++d) {
      base_ += r[d].start * xs[d];
      out_dims_.push_back(r[d].sliced ? r[d].count : x[d]);
      steps_.push_back(r[d].step * xs[d]);
    }
    total_ = 1;
    for (int64_t d : out_dims_) total_ *= d;
  }

  void run(RunContext& ctx) const override {
    if (total_ == 0) return;
    const char* x = static_cast<const char*>(ctx.inputs[0]->raw());
    char* y = static_cast<char*>(ctx.outputs[0]->raw());
    const size_t rank = out_dims_.size();
    if (rank == 0) {
      std::memcpy(y, x + base_ * int64_t(elem_), elem_);
      return;
    }
    const int64_t inner = out_dims_.back(), inner_step = steps_.back();
    const int64_t rows = total_ / inner;
    const size_t es = elem_;
    parallel_for(threads_for(total_, ctx.threads), rows, [&](int64_t row) {
      // The row's input offset from its multi-index over the outer dims.
      int64_t offset = base_;
      for (int64_t d = int64_t(rank) - 2, rest = row; d >= 0; --d) {
        offset += rest % out_dims_[size_t(d)] * steps_[size_t(d)];
        rest /= out_dims_[size_t(d)];
      }
      const char* src = x + offset * int64_t(es);
      char* dst = y + row * inner * int64_t(es);
      if (inner_step == 1) {
        std::memcpy(dst, src, size_t(inner) * es);
      } else {
        for (int64_t i = 0; i < inner; ++i)
          std::memcpy(dst + i * int64_t(es), src + i * inner_step * int64_t(es), es);
      }
    });
  }

 private:
  size_t elem_ = 4;
  int64_t base_ = 0, total_ = 0;
  std::vector<int64_t> out_dims_, steps_;  // steps_: input elements per output step, per dim
};

// Static input, parameters known at prepare (attributes or constant inputs).
bool supports_slice(const PrepareContext& ctx) {
  if (!supports_static(ctx) || !ctx.outputs[0].shape.is_static()) return false;
  for (size_t i = 1; i < ctx.inputs.size(); ++i)
    if (ctx.inputs[i].present && !ctx.inputs[i].constant) return false;
  return true;
}

// Pad in any mode, row by row: an output row (all dims but the last) is the pad value or one
// input row, whose inner part is one memcpy and whose ends are the pad value or, in the other
// modes, input elements. (The reference walks every element with its multi-index: Inception
// v3's four Pads of 6x6 planes took 0.58 ms a run that way.)
class PadKernel final : public Kernel {
 public:
  void prepare(PrepareContext& ctx) override {
    const Node& node = ctx.node;
    const Shape& x = ctx.inputs[0].shape;
    auto constant = [&](size_t i) {
      return i < ctx.inputs.size() && ctx.inputs[i].present ? ctx.inputs[i].constant : nullptr;
    };
    mode_ = pad_mode(node);
    pads_ = pads_of(node, x.rank(), constant(1), constant(3));
    value_ = pad_value_bytes(node, ctx.inputs[0].dtype,
                             pad_uses_attributes(node) ? nullptr : constant(2));
    zero_value_ = std::all_of(value_.begin(), value_.end(), [](char c) { return c == 0; });
    x_dims_ = x.dims();
    x_strides_ = row_major_strides(x);
    y_dims_ = ctx.outputs[0].shape.dims();
    elem_ = dtype_size(ctx.inputs[0].dtype);
  }

  void run(RunContext& ctx) const override {
    const Tensor& x = *ctx.inputs[0];
    Tensor& y = *ctx.outputs[0];
    if (y.numel() == 0) return;
    const size_t rank = y_dims_.size(), es = elem_;
    const char* xp = static_cast<const char*>(x.raw());
    char* yp = static_cast<char*>(y.raw());
    if (rank == 0) {
      std::memcpy(yp, xp, es);
      return;
    }
    const int64_t inner = y_dims_.back(), n = x_dims_.back(), begin = pads_.back().first;
    // The output columns read as one run from the input: j in [lo, hi), from j - begin.
    const int64_t lo = std::clamp<int64_t>(begin, 0, inner);
    const int64_t hi = std::clamp<int64_t>(begin + n, lo, inner);
    auto fill = [&](char* dst, int64_t count) {
      if (zero_value_) {
        std::memset(dst, 0, size_t(count) * es);
        return;
      }
      for (int64_t i = 0; i < count; ++i) std::memcpy(dst + i * int64_t(es), value_.data(), es);
    };
    const int64_t rows = y.numel() / inner;
    parallel_for(threads_for(y.numel(), ctx.threads), rows, [&](int64_t row) {
      char* dst = yp + row * inner * int64_t(es);
      // The input row: each outer index shifted by its begin pad and mapped by the mode.
      int64_t offset = 0;
      for (int64_t d = int64_t(rank) - 2, rest = row; d >= 0; --d) {
        const size_t u = size_t(d);
        const int64_t src = pad_source(rest % y_dims_[u] - pads_[u].first, x_dims_[u], mode_);
        rest /= y_dims_[u];
        if (src < 0) return fill(dst, inner);
        offset += src * x_strides_[u];
      }
      const char* src_row = xp + offset * int64_t(es);
      std::memcpy(dst + lo * int64_t(es), src_row + (lo - begin) * int64_t(es),
                  size_t(hi - lo) * es);
      const std::pair<int64_t, int64_t> ends[] = {{0, lo}, {hi, inner}};
      for (const auto& [j, end] : ends) {
        if (mode_ == PadMode::Constant) {
          fill(dst + j * int64_t(es), end - j);
          continue;
        }
        for (int64_t i = j; i < end; ++i)
          std::memcpy(dst + i * int64_t(es),
                      src_row + pad_source(i - begin, n, mode_) * int64_t(es), es);
      }
    });
  }

 private:
  PadMode mode_ = PadMode::Constant;
  std::vector<std::pair<int64_t, int64_t>> pads_;
  std::vector<char> value_;
  bool zero_value_ = true;
  std::vector<int64_t> x_dims_, x_strides_, y_dims_;
  size_t elem_ = 4;
};

// Static shapes, the pads (and axes, constant value) known at prepare.
bool supports_pad(const PrepareContext& ctx) {
  if (!supports_static(ctx) || !ctx.outputs[0].shape.is_static()) return false;
  for (size_t i = 1; i < ctx.inputs.size(); ++i)
    if (ctx.inputs[i].present && !ctx.inputs[i].constant) return false;
  return true;
}

template <typename K>
KernelDef def(const char* op, const char* name, std::function<bool(const PrepareContext&)> sup) {
  return {
      "", op, Device::Type::CPU, {}, name, std::move(sup), [] { return std::make_unique<K>(); }};
}

KernelDef aliasing(KernelDef d) {
  d.aliases_input = true;
  return d;
}

}  // namespace

void register_layout_kernels(OpRegistry& r) {
  r.register_kernel(def<TransposeKernel>("Transpose", "cpu-transpose", supports_static));
  r.register_kernel(def<ConcatKernel>("Concat", "cpu-concat", supports_concat));
  r.register_kernel(def<SliceKernel>("Slice", "cpu-slice", supports_slice));
  r.register_kernel(def<PadKernel>("Pad", "cpu-pad", supports_pad));
  for (const char* op : {"Flatten", "Reshape", "Identity", "Unsqueeze", "Squeeze"})
    r.register_kernel(aliasing(def<CopyKernel>(op, "cpu-copy", supports_copy)));
  r.register_kernel(aliasing(def<CopyKernel>("Dropout", "cpu-copy", supports_dropout_copy)));
}

}  // namespace minfer::cpu
