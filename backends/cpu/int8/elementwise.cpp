// QuantizeLinear and GatedQuantize (their loop at the ISA level: backends/cpu/isa/
// quantize_floats.cpp), DequantizeLinear and QAdd (AVX2) on the CPU, bit-exact with the
// reference kernels (ops/int8): the same float division and rounding, the same integer formula.
#include <immintrin.h>

#include <cstring>

#include "backends/cpu/int8/kernels.h"
#include "backends/cpu/int8/qgemm.h"
#include "backends/cpu/int8/requant.h"
#include "backends/cpu/parallel.h"
#include "ops/int8/int8_ops.h"

namespace minfer::cpu {

namespace {

constexpr int64_t kMinWork = 16384;  // elements per thread worth waking one

// Per-axis layout of a Q/DQ node: params[c] applies to elements (o * count + c) * inner + i.
struct AxisLayout {
  int64_t outer = 1, count = 1, inner = 1;
  std::vector<float> scale;
  std::vector<int32_t> zero_point;
};

bool constant_params(const PrepareContext& ctx) {
  if (ctx.inputs.size() < 2 || !ctx.inputs[1].constant || ctx.inputs[1].dtype != DType::f32)
    return false;
  if (ctx.inputs.size() > 2 && ctx.inputs[2].present && !ctx.inputs[2].constant) return false;
  return ctx.inputs[0].present && ctx.inputs[0].shape.is_static() &&
         ctx.node.attrs.get_int("block_size", 0) == 0;
}

AxisLayout axis_layout(const PrepareContext& ctx) {
  AxisLayout l;
  const Shape& x = ctx.inputs[0].shape;
  const Tensor& s = *ctx.inputs[1].constant;
  l.scale = s.to_vector<float>();
  l.count = s.numel();
  const Tensor* z =
      ctx.inputs.size() > 2 && ctx.inputs[2].present ? ctx.inputs[2].constant : nullptr;
  for (int64_t i = 0; i < l.count; ++i) {
    int32_t v = 0;
    if (z && z->dtype() == DType::i8) v = z->data<int8_t>()[i];
    if (z && z->dtype() == DType::u8) v = z->data<uint8_t>()[i];
    if (z && z->dtype() == DType::i32) v = z->data<int32_t>()[i];
    l.zero_point.push_back(v);
  }
  if (l.count == 1) {
    l.inner = x.numel();
    return l;
  }
  int64_t rank = static_cast<int64_t>(x.rank());
  int64_t axis = ctx.node.attrs.get_int("axis", 1);
  if (axis < 0) axis += rank;
  for (int64_t d = 0; d < axis; ++d) l.outer *= x[d];
  for (int64_t d = axis + 1; d < rank; ++d) l.inner *= x[d];
  return l;
}

// Runs f(scale, zero_point, element offset, count) over spans that share parameters, in
// parallel chunks.
template <typename F>
void for_each_span(const AxisLayout& l, int threads, F&& f) {
  if (l.outer * l.count == 1) {
    const int64_t n = l.inner, chunk = 4096;
    const int64_t chunks = (n + chunk - 1) / chunk;
    parallel_for(threads_for(n, threads, kMinWork), chunks, [&](int64_t i) {
      f(l.scale[0], l.zero_point[0], i * chunk, std::min(chunk, n - i * chunk));
    });
    return;
  }
  parallel_for(threads_for(l.outer * l.count * l.inner, threads, kMinWork), l.outer * l.count,
               [&](int64_t i) {
                 const int64_t c = i % l.count;
                 f(l.scale[c], l.zero_point[c], i * l.inner, l.inner);
               });
}

class QuantizeKernel final : public Kernel {
 public:
  static bool supports(const PrepareContext& ctx) {
    return has_any_isa() && constant_params(ctx) && ctx.inputs[0].dtype == DType::f32 &&
           (ctx.outputs[0].dtype == DType::i8 || ctx.outputs[0].dtype == DType::u8);
  }
  void prepare(PrepareContext& ctx) override {
    layout_ = axis_layout(ctx);
    to_u8_ = ctx.outputs[0].dtype == DType::u8;
    kernels_ = &q8::quantize_kernels(active_isa());
  }
  std::string variant() const override { return kernels_ ? isa_name(kernels_->isa) : ""; }
  void run(RunContext& ctx) const override {
    const float* x = ctx.inputs[0]->data<float>();
    uint8_t* y = static_cast<uint8_t*>(ctx.outputs[0]->raw());
    for_each_span(layout_, ctx.threads, [&](float s, int32_t z, int64_t off, int64_t n) {
      kernels_->floats(x + off, n, s, z, to_u8_, y + off);
    });
  }

 private:
  AxisLayout layout_;
  bool to_u8_ = false;
  const q8::QuantizeKernels* kernels_ = nullptr;  // at the ISA level
};

// com.minfer:GatedQuantize (ops/int8/gated_quantize.cpp): rows of channels, each float times
// its channel's gate and quantized in one pass (the ISA level's QuantizeLinear loop).
class GatedQuantizeKernel final : public Kernel {
 public:
  // (The op's shape inference has checked the gate: one value per channel of the last axis.)
  static bool supports(const PrepareContext& ctx) {
    return has_any_isa() && ctx.inputs[0].shape.is_static() && ctx.inputs[1].shape.is_static();
  }
  void prepare(PrepareContext& ctx) override {
    const Shape& x = ctx.inputs[0].shape;
    channels_ = x[x.rank() - 1];
    rows_ = channels_ > 0 ? x.numel() / channels_ : 0;
    scale_ = int8::require_scale(ctx.node, "y_scale");
    zero_point_ = int8::require_zero_point(ctx.node, "y_zero_point");
    kernels_ = &q8::quantize_kernels(active_isa());
  }
  std::string variant() const override { return kernels_ ? isa_name(kernels_->isa) : ""; }
  void run(RunContext& ctx) const override {
    const float* x = ctx.inputs[0]->data<float>();
    const float* gate = ctx.inputs[1]->data<float>();
    int8_t* y = ctx.outputs[0]->data<int8_t>();
    // Blocks of rows of about 4096 floats.
    const int64_t per_block = std::max<int64_t>(1, 4096 / std::max<int64_t>(channels_, 1));
    const int64_t blocks = (rows_ + per_block - 1) / per_block;
    parallel_for(threads_for(rows_ * channels_, ctx.threads, kMinWork), blocks, [&](int64_t b) {
      const int64_t r0 = b * per_block, rows = std::min(per_block, rows_ - r0);
      kernels_->gated(x + r0 * channels_, rows, channels_, gate, scale_, zero_point_,
                      y + r0 * channels_);
    });
  }

 private:
  int64_t rows_ = 0, channels_ = 1;
  float scale_ = 1.f;
  int32_t zero_point_ = 0;
  const q8::QuantizeKernels* kernels_ = nullptr;  // at the ISA level
};

MINFER_TARGET_AVX2 void dequantize_span(const void* in, DType t, int64_t n, float scale, int32_t zp,
                                        float* y) {
  const __m256 s = _mm256_set1_ps(scale);
  const __m256i zi = _mm256_set1_epi32(zp);
  int64_t i = 0;
  if (t != DType::i32 || zp == 0) {  // int32 - zp could overflow in 32-bit lanes
    for (; i + 8 <= n; i += 8) {
      __m256i q;
      if (t == DType::i32) {
        q = _mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(static_cast<const int32_t*>(in) + i));
      } else {
        int64_t bits;
        std::memcpy(&bits, static_cast<const uint8_t*>(in) + i, 8);
        const __m128i b = _mm_cvtsi64_si128(bits);
        q = t == DType::i8 ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
      }
      const __m256 f = _mm256_cvtepi32_ps(_mm256_sub_epi32(q, zi));
      _mm256_storeu_ps(y + i, _mm256_mul_ps(f, s));
    }
  }
  for (; i < n; ++i) {
    int64_t q = t == DType::i8   ? static_cast<const int8_t*>(in)[i]
                : t == DType::u8 ? static_cast<const uint8_t*>(in)[i]
                                 : static_cast<const int32_t*>(in)[i];
    y[i] = int8::dequantize_value(q - zp, scale);
  }
}

class DequantizeKernel final : public Kernel {
 public:
  static bool supports(const PrepareContext& ctx) {
    const DType t = ctx.inputs[0].dtype;
    return has_any_isa() && constant_params(ctx) &&
           (t == DType::i8 || t == DType::u8 || t == DType::i32);
  }
  void prepare(PrepareContext& ctx) override {
    layout_ = axis_layout(ctx);
    dtype_ = ctx.inputs[0].dtype;
  }
  void run(RunContext& ctx) const override {
    const uint8_t* x = static_cast<const uint8_t*>(ctx.inputs[0]->raw());
    float* y = ctx.outputs[0]->data<float>();
    const size_t es = dtype_size(dtype_);
    for_each_span(layout_, ctx.threads, [&](float s, int32_t z, int64_t off, int64_t n) {
      dequantize_span(x + off * es, dtype_, n, s, z, y + off);
    });
  }

 private:
  AxisLayout layout_;
  DType dtype_ = DType::i8;
};

MINFER_TARGET_AVX2 void qadd_span(const int8_t* a, const int8_t* b, int64_t n,
                                  const int8::AddStage& st, int8_t* y) {
  const __m256i za = _mm256_set1_epi32(st.a_zero_point), zb = _mm256_set1_epi32(st.b_zero_point);
  const __m256i ma = _mm256_set1_epi32(st.mult.ma), mb = _mm256_set1_epi32(st.mult.mb);
  const __m256i rnd = _mm256_set1_epi32(1 << (st.mult.k - 1));
  const __m128i k = _mm_cvtsi32_si128(st.mult.k);
  const __m256i zy = _mm256_set1_epi32(st.y_zero_point);
  const __m256i lo = _mm256_set1_epi32(st.y_min), hi = _mm256_set1_epi32(st.y_max);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    int64_t abits, bbits;
    std::memcpy(&abits, a + i, 8);
    std::memcpy(&bbits, b + i, 8);
    const __m256i da = _mm256_sub_epi32(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(abits)), za);
    const __m256i db = _mm256_sub_epi32(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(bbits)), zb);
    __m256i s = _mm256_add_epi32(_mm256_mullo_epi32(da, ma), _mm256_mullo_epi32(db, mb));
    s = _mm256_add_epi32(_mm256_sra_epi32(_mm256_add_epi32(s, rnd), k), zy);
    s = _mm256_min_epi32(_mm256_max_epi32(s, lo), hi);
    const __m256i w = _mm256_packs_epi32(s, s);
    const __m256i bb = _mm256_packs_epi16(w, w);
    const int64_t bytes = _mm_cvtsi128_si64(
        _mm_unpacklo_epi32(_mm256_castsi256_si128(bb), _mm256_extracti128_si256(bb, 1)));
    std::memcpy(y + i, &bytes, 8);
  }
  for (; i < n; ++i) {
    int32_t v = int8::add_requantize(a[i] - st.a_zero_point, b[i] - st.b_zero_point, st.mult);
    y[i] = static_cast<int8_t>(std::clamp(v + st.y_zero_point, st.y_min, st.y_max));
  }
}

class QAddKernel final : public Kernel {
 public:
  static bool supports(const PrepareContext& ctx) {
    return has_any_isa() && ctx.inputs[0].shape.is_static() &&
           ctx.inputs[0].shape == ctx.inputs[1].shape;
  }
  void prepare(PrepareContext& ctx) override { st_ = int8::parse_add_stage(ctx.node); }
  void run(RunContext& ctx) const override {
    const int8_t* a = ctx.inputs[0]->data<int8_t>();
    const int8_t* b = ctx.inputs[1]->data<int8_t>();
    int8_t* y = ctx.outputs[0]->data<int8_t>();
    const int64_t n = ctx.outputs[0]->numel(), chunk = 8192;
    parallel_for(threads_for(n, ctx.threads, kMinWork), (n + chunk - 1) / chunk, [&](int64_t i) {
      qadd_span(a + i * chunk, b + i * chunk, std::min(chunk, n - i * chunk), st_, y + i * chunk);
    });
  }

 private:
  int8::AddStage st_;
};

}  // namespace

void register_int8_elementwise_kernels(OpRegistry& r) {
  r.register_kernel({"",
                     "QuantizeLinear",
                     Device::Type::CPU,
                     {DType::f32},
                     "cpu-quantize",
                     QuantizeKernel::supports,
                     [] { return std::make_unique<QuantizeKernel>(); }});
  r.register_kernel({"",
                     "DequantizeLinear",
                     Device::Type::CPU,
                     {DType::i8, DType::u8, DType::i32},
                     "cpu-avx2",
                     DequantizeKernel::supports,
                     [] { return std::make_unique<DequantizeKernel>(); }});
  r.register_kernel(
      {kMinferDomain, "QAdd", Device::Type::CPU, {DType::i8}, "cpu-avx2", QAddKernel::supports, [] {
         return std::make_unique<QAddKernel>();
       }});
  r.register_kernel({kMinferDomain,
                     "GatedQuantize",
                     Device::Type::CPU,
                     {DType::f32},
                     "cpu-quantize",
                     GatedQuantizeKernel::supports,
                     [] { return std::make_unique<GatedQuantizeKernel>(); }});
}

}  // namespace minfer::cpu
