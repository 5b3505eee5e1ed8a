#include "backends/cpu/int8/qdepthwise_kernel.h"

#include <immintrin.h>

#include <algorithm>

#include "backends/cpu/int8/qgemm.h"  // MINFER_TARGET_AVX2
#include "backends/cpu/parallel.h"
#include "ops/conv_geometry.h"
#include "ops/int8/int8_ops.h"

namespace minfer::cpu {

namespace {
bool static_i8(const TensorInfo& t) {
  return t.present && t.dtype == DType::i8 && t.shape.is_static() && t.shape.rank() == 4;
}

// One output pixel's sums over its taps, acc[c] = bias[c] + sum over taps of (x[c] - zx) * w[c]:
// exact in int32 (|x - zx| <= 255, |w| <= 128, at most a few dozen taps). `taps` holds each
// in-image tap's input pixel and weight row (taps in the padding read a real 0: skipped). The
// sums of 4 x 8 channels stay in registers over the taps (summed into acc in memory tap by
// tap, int8 MobileNet v2's depthwise layers took 1.3x as long at 1 thread and 1.8x at 2, Zen
// 4); the channels past whole vectors go one by one.
struct Tap {
  const int8_t* x;
  const int32_t* w;
};
MINFER_TARGET_AVX2 inline __attribute__((always_inline)) __m256i tap_product(const Tap& t,
                                                                             int64_t c,
                                                                             __m256i zx) {
  const __m256i x =
      _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(t.x + c)));
  const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.w + c));
  return _mm256_mullo_epi32(_mm256_sub_epi32(x, zx), w);
}
MINFER_TARGET_AVX2 inline __attribute__((always_inline)) void pixel_sums(const Tap* taps, int n,
                                                                         int32_t zero_point,
                                                                         const int32_t* bias,
                                                                         int64_t channels,
                                                                         int32_t* acc) {
  const __m256i zx = _mm256_set1_epi32(zero_point);
  auto load = [](const int32_t* p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  };
  auto store = [](int32_t* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); };
  int64_t c = 0;
  for (; c + 32 <= channels; c += 32) {
    __m256i a0 = load(bias + c), a1 = load(bias + c + 8), a2 = load(bias + c + 16),
            a3 = load(bias + c + 24);
    for (int t = 0; t < n; ++t) {
      a0 = _mm256_add_epi32(a0, tap_product(taps[t], c, zx));
      a1 = _mm256_add_epi32(a1, tap_product(taps[t], c + 8, zx));
      a2 = _mm256_add_epi32(a2, tap_product(taps[t], c + 16, zx));
      a3 = _mm256_add_epi32(a3, tap_product(taps[t], c + 24, zx));
    }
    store(acc + c, a0), store(acc + c + 8, a1), store(acc + c + 16, a2), store(acc + c + 24, a3);
  }
  for (; c + 8 <= channels; c += 8) {
    __m256i a = load(bias + c);
    for (int t = 0; t < n; ++t) a = _mm256_add_epi32(a, tap_product(taps[t], c, zx));
    store(acc + c, a);
  }
  for (; c < channels; ++c) {
    int32_t a = bias[c];
    for (int t = 0; t < n; ++t) a += (int32_t{taps[t].x[c]} - zero_point) * taps[t].w[c];
    acc[c] = a;
  }
}
}  // namespace

bool QDepthwiseKernel::supports(const PrepareContext& ctx) {
  if (!has_any_isa() || ctx.node.op_type != "QConv" || ctx.inputs.size() < 2) return false;
  if (ctx.node.attrs.get_string("layout", "NCHW") != "NHWC") return false;
  const TensorInfo &x = ctx.inputs[0], &w = ctx.inputs[1];
  if (!static_i8(x) || !static_i8(w) || !w.constant) return false;
  const int64_t channels = x.shape[3];
  if (ctx.node.attrs.get_int("group", 1) != channels || w.shape[0] != channels || w.shape[1] != 1 ||
      channels < 2)
    return false;
  if (ctx.inputs.size() > 2 && ctx.inputs[2].present &&
      (ctx.inputs[2].dtype != DType::i32 || !ctx.inputs[2].constant))
    return false;
  if (ctx.inputs.size() > 3 && ctx.inputs[3].present &&
      (!static_i8(ctx.inputs[3]) || ctx.inputs[3].shape != ctx.outputs[0].shape))
    return false;
  return true;
}

void QDepthwiseKernel::prepare(PrepareContext& ctx) {
  const Node& node = ctx.node;
  const Shape& xs = ctx.inputs[0].shape;
  const Tensor& w = *ctx.inputs[1].constant;
  const ConvGeometry g = conv_geometry(node, int8::nhwc_to_nchw_shape(xs), w.shape());
  if (g.rank() != 2) ctx.fail("the CPU depthwise QConv kernel supports 2-D convolutions");
  n_ = xs[0], h_ = xs[1], w_ = xs[2], c_ = xs[3];
  oh_ = g.out_h(), ow_ = g.out_w();
  kh_ = g.kernel_h(), kw_ = g.kernel_w(), sh_ = g.stride_h(), sw_ = g.stride_w();
  dh_ = g.dilation_h(), dw_ = g.dilation_w(), pad_t_ = g.pad_top(), pad_l_ = g.pad_left();
  const bool residual = ctx.inputs.size() > 3 && ctx.inputs[3].present;
  rq_ = q8::make_requant(int8::parse_output_stage(node, c_, residual), c_);
  requant_ = q8::requant_kernels(active_isa()).tile;
  x_zero_point_ = int8::x_zero_point(node);

  // ONNX weights [C, 1, kh, kw] -> [tap][C], so that a tap's weights are contiguous like the
  // NHWC channels they multiply.
  const int64_t taps = kh_ * kw_;
  weights_.assign(size_t(taps * c_), 0);
  const int8_t* wp = w.data<int8_t>();
  for (int64_t ch = 0; ch < c_; ++ch)
    for (int64_t t = 0; t < taps; ++t) weights_[size_t(t * c_ + ch)] = wp[ch * taps + t];
  bias_.assign(size_t(c_), 0);
  if (ctx.inputs.size() > 2 && ctx.inputs[2].present) {
    const int32_t* b = ctx.inputs[2].constant->data<int32_t>();
    std::copy(b, b + c_, bias_.begin());
  }
  threads_ = std::max(1, ctx.threads);
  // Per thread: a row of sums, then (64-byte aligned) its pixels' tap list.
  per_thread_bytes_ = sums_bytes() + (size_t(taps) * sizeof(Tap) + 63) / 64 * 64;
  ctx.workspace_bytes = size_t(threads_) * per_thread_bytes_;
}

MINFER_TARGET_AVX2 void QDepthwiseKernel::run_rows(const int8_t* x, const int8_t* z, void* y,
                                                   int64_t r0, int64_t r1, void* scratch) const {
  int32_t* acc = static_cast<int32_t*>(scratch);
  Tap* taps = reinterpret_cast<Tap*>(static_cast<uint8_t*>(scratch) + sums_bytes());
  const int64_t c = c_;
  const q8::RequantParams rq = rq_.params();
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / oh_, oy = r % oh_;
    const int8_t* image = x + n * h_ * w_ * c;
    for (int64_t ox = 0; ox < ow_; ++ox) {
      // Taps outside the image read the zero point (a real 0): they add nothing, so skip them.
      int found = 0;
      for (int64_t ky = 0; ky < kh_; ++ky) {
        const int64_t iy = oy * sh_ - pad_t_ + ky * dh_;
        if (iy < 0 || iy >= h_) continue;
        for (int64_t kx = 0; kx < kw_; ++kx) {
          const int64_t ix = ox * sw_ - pad_l_ + kx * dw_;
          if (ix < 0 || ix >= w_) continue;
          taps[found++] = {image + (iy * w_ + ix) * c, weights_.data() + (ky * kw_ + kx) * c};
        }
      }
      pixel_sums(taps, found, x_zero_point_, bias_.data(), c, acc + ox * c);
    }
    // The row's pixels as the rows of one tile of all channels.
    const int64_t out = r * ow_ * c;
    if (rq_.int8_out)
      requant_(rq, acc, c, int(ow_), 0, c, static_cast<int8_t*>(y) + out, c, z ? z + out : nullptr);
    else
      q8::dequant_tile(rq_, acc, c, int(ow_), 0, c, static_cast<float*>(y) + out, c);
  }
}

void QDepthwiseKernel::run(RunContext& ctx) const {
  const int8_t* x = ctx.inputs[0]->data<int8_t>();
  const int8_t* z =
      ctx.inputs.size() > 3 && ctx.inputs[3] ? ctx.inputs[3]->data<int8_t>() : nullptr;
  void* y = ctx.outputs[0]->raw();
  uint8_t* ws = static_cast<uint8_t*>(ctx.workspace);
  const int64_t rows = n_ * oh_;
  const int threads =
      threads_for(rows * ow_ * c_ * kh_ * kw_, std::clamp(ctx.threads, 1, threads_), 1 << 15);
  parallel_region(threads, [&](int tid, int nt) {
    run_rows(x, z, y, split_begin(rows, nt, tid), split_begin(rows, nt, tid + 1),
             ws + size_t(tid) * per_thread_bytes_);
  });
}

}  // namespace minfer::cpu
