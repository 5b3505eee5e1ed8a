// com.minfer:AffineQuantize (ops/int8/affine_quantize.cpp) on the CPU: tiles of 16 channels x
// 16 pixels, each channel's pixels (a contiguous run of the NCHW input) scaled, shifted,
// clamped by the Relu, rounded and saturated 8 floats a vector, the 16x16 bytes then
// transposed into the NHWC rows. The reference's arithmetic: one fused multiply-add, the
// rounding and clamp of QuantizeLinear at scale 1.
#include <immintrin.h>

#include <algorithm>

#include "backends/cpu/int8/kernels.h"
#include "backends/cpu/int8/qgemm.h"  // MINFER_TARGET_AVX2
#include "backends/cpu/isa.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/transpose_blocks.h"
#include "ops/int8/int8_ops.h"

namespace minfer::cpu {

namespace {

constexpr int64_t kTile = 16, kChunk = 512;

struct Stage {
  int32_t zero_point = 0;
  bool relu = false;
};

int8_t quantize_one(float x, float a, float b, const Stage& s) {
  float v = std::fma(x, a, b);
  if (s.relu) v = v > 0.f ? v : 0.f;
  return static_cast<int8_t>(int8::quantize_value(v, 1.f, s.zero_point, -128, 127));
}

// 8 floats at x, times a plus b, through the Relu, quantized: int32 lanes in [-128, 127].
MINFER_TARGET_AVX2 inline __m256i quantize8(const float* x, __m256 a, __m256 b, const Stage& s) {
  __m256 v = _mm256_fmadd_ps(_mm256_loadu_ps(x), a, b);
  if (s.relu) v = _mm256_max_ps(v, _mm256_setzero_ps());  // NaN -> 0, as the reference
  const __m256 r = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 c = _mm256_min_ps(
      _mm256_max_ps(_mm256_add_ps(r, _mm256_set1_ps(float(s.zero_point))), _mm256_set1_ps(-128)),
      _mm256_set1_ps(127));
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  return _mm256_blendv_epi8(_mm256_cvttps_epi32(c), _mm256_set1_epi32(s.zero_point), nan);
}

// One tile: 16 channels' 16 pixels (channel rows `stride` floats apart) quantized and written
// as 16 NHWC pixels (rows of `channels` bytes).
MINFER_TARGET_AVX2 void quantize_tile(const float* x, int64_t stride, const float* a,
                                      const float* b, const Stage& s, int8_t* y, int64_t channels) {
  alignas(16) int8_t rows[kTile * kTile];
  for (int64_t j = 0; j < kTile; ++j) {
    const __m256 aj = _mm256_set1_ps(a[j]), bj = _mm256_set1_ps(b[j]);
    const __m256i w = _mm256_packs_epi32(quantize8(x + j * stride, aj, bj, s),
                                         quantize8(x + j * stride + 8, aj, bj, s));
    // Per 128-bit half: 4 lanes of the first vector, then 4 of the second.
    const __m128i lo = _mm256_castsi256_si128(w), hi = _mm256_extracti128_si256(w, 1);
    const __m128i ordered = _mm_packs_epi16(_mm_unpacklo_epi64(lo, hi), _mm_unpackhi_epi64(lo, hi));
    _mm_store_si128(reinterpret_cast<__m128i*>(rows + j * kTile), ordered);
  }
  transpose_bytes_16x16(reinterpret_cast<const uint8_t*>(rows), kTile,
                        reinterpret_cast<uint8_t*>(y), channels);
}

class AffineQuantizeKernel final : public Kernel {
 public:
  static bool supports(const PrepareContext& ctx) {
    return has_any_isa() && ctx.inputs[0].shape.is_static() && ctx.inputs[0].shape.rank() == 4;
  }
  void prepare(PrepareContext& ctx) override {
    const Shape& x = ctx.inputs[0].shape;
    n_ = x[0];
    c_ = x[1];
    hw_ = x[2] * x[3];
    stage_.zero_point = int8::require_zero_point(ctx.node, "y_zero_point");
    stage_.relu = ctx.node.attrs.get_string("activation", "") == "Relu";
  }
  void run(RunContext& ctx) const override {
    const float* x = ctx.inputs[0]->data<float>();
    const float* a = ctx.inputs[1]->data<float>();
    const float* b = ctx.inputs[2]->data<float>();
    int8_t* y = ctx.outputs[0]->data<int8_t>();
    // Units of 16 channels and up to kChunk pixels, the pixels innermost: a unit reads 16
    // channel rows front to back (all channels of a tile of pixels at a time read as many
    // rows as there are channels, 64 bytes of each: 3x the time at 192 channels).
    const int64_t blocks = (c_ + kTile - 1) / kTile, chunks = (hw_ + kChunk - 1) / kChunk;
    parallel_for(
        threads_for(n_ * c_ * hw_, ctx.threads, 16384), n_ * blocks * chunks, [&](int64_t u) {
          const int64_t n = u / (blocks * chunks), block = u / chunks % blocks;
          const int64_t c0 = block * kTile, c1 = std::min(c_, c0 + kTile);
          const int64_t p0 = u % chunks * kChunk, p1 = std::min(hw_, p0 + kChunk);
          const float* xn = x + n * c_ * hw_;
          int8_t* yn = y + n * hw_ * c_;
          int64_t p = p0;
          if (c1 - c0 == kTile)
            for (; p + kTile <= p1; p += kTile)
              quantize_tile(xn + c0 * hw_ + p, hw_, a + c0, b + c0, stage_, yn + p * c_ + c0, c_);
          for (; p < p1; ++p)  // a short last tile; the channels past the blocks
            for (int64_t c = c0; c < c1; ++c)
              yn[p * c_ + c] = quantize_one(xn[c * hw_ + p], a[c], b[c], stage_);
        });
  }

 private:
  int64_t n_ = 0, c_ = 0, hw_ = 0;
  Stage stage_;
};

}  // namespace

void register_int8_affine_quantize_kernel(OpRegistry& r) {
  r.register_kernel({kMinferDomain,
                     "AffineQuantize",
                     Device::Type::CPU,
                     {DType::f32},
                     "cpu-nhwc",
                     AffineQuantizeKernel::supports,
                     [] { return std::make_unique<AffineQuantizeKernel>(); }});
}

}  // namespace minfer::cpu
