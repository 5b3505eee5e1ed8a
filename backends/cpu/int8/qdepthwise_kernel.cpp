#include "backends/cpu/int8/qdepthwise_kernel.h"

#include <algorithm>

#include "backends/cpu/env_switch.h"
#include "backends/cpu/int8/qgemm.h"
#include "backends/cpu/parallel.h"
#include "ops/conv_geometry.h"
#include "ops/int8/int8_ops.h"

namespace minfer::cpu {

namespace {
bool static_i8(const TensorInfo& t) {
  return t.present && t.dtype == DType::i8 && t.shape.is_static() && t.shape.rank() == 4;
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
  rq_ = q8::make_requant(node, int8::parse_output_stage(node, c_, residual), c_);
  requant_ = q8::requant_kernels(active_isa()).tile;
  x_zero_point_ = int8::x_zero_point(node);

  // ONNX weights [C, 1, kh, kw] -> [tap][C], so that a tap's weights are contiguous like the
  // NHWC channels they multiply; each in the low 16 bits of an int32 (DepthwiseRun's w). The
  // sums take x, not x - zero point: init takes zero point * the channel's weights off (the
  // taps in the padding read the zero point, so every pixel has them all).
  const int64_t taps = kh_ * kw_, padded = c_ + 32;
  weights_ = AlignedArray<int32_t>(size_t((taps - 1) * c_ + padded));
  init_ = AlignedArray<int32_t>(size_t(padded));
  const int8_t* wp = w.data<int8_t>();
  const int32_t* bias = ctx.inputs.size() > 2 && ctx.inputs[2].present
                            ? ctx.inputs[2].constant->data<int32_t>()
                            : nullptr;
  for (int64_t ch = 0; ch < c_; ++ch) {
    int32_t sum = 0;
    for (int64_t t = 0; t < taps; ++t) {
      const int8_t v = wp[ch * taps + t];
      weights_[size_t(t * c_ + ch)] = static_cast<uint16_t>(int16_t{v});
      sum += v;
    }
    // Wrapping, as the reference's int32 sums.
    init_[size_t(ch)] = static_cast<int32_t>(uint32_t(bias ? bias[ch] : 0) -
                                             uint32_t(x_zero_point_) * uint32_t(sum));
  }
  // The input columns past the right edge that the last pixel's taps reach.
  const int64_t pad_r = std::max<int64_t>(0, (ow_ - 1) * sw_ - pad_l_ + (kw_ - 1) * dw_ - (w_ - 1));
  ring_rows_ = std::min(h_, (kh_ - 1) * dh_ + 1);
  zero_row_ =
      AlignedArray<int8_t>(size_t((pad_l_ + w_ + pad_r) * c_), static_cast<int8_t>(x_zero_point_));
  const q8::DepthwiseGroupKernels& groups = q8::depthwise_group_kernels(active_isa());
  if (groups.supports(kw_, sw_) && dh_ == 1 && dw_ == 1 &&
      env_switch("MINFER_CPU_INT8_DEPTHWISE_GROUPS", true))
    prepare_groups(groups, wp);
  if (groups_) weights_ = {};  // (the plain sums' table)
  padded_w_ =
      !groups_ && ow_ <= kPaddedWidth && sw_ == 1 && pad_l_ + pad_r > 0 ? pad_l_ + w_ + pad_r : 0;
  if (padded_w_ > 0) ring_slot_bytes_ = size_t(padded_w_ * c_);
  if (!groups_) acc_pixels_ = ow_, acc_stride_ = c_;
  sums_ = &q8::depthwise_kernels(active_isa());
  threads_ = std::max(1, ctx.threads);
  per_thread_bytes_ = sums_bytes() + taps_bytes();
  if (ring_slot_bytes_ > 0)
    per_thread_bytes_ += ring_bytes() + size_t(ring_rows_) * sizeof(int64_t);
  ctx.workspace_bytes = size_t(threads_) * per_thread_bytes_;
}

void QDepthwiseKernel::prepare_groups(const q8::DepthwiseGroupKernels& kernels, const int8_t* w) {
  groups_ = &kernels;
  const int group = kernels.group;
  channels_padded_ = (c_ + 15) / 16 * 16;
  const int64_t cp = channels_padded_;
  acc_pixels_ = (ow_ + group - 1) / group * group, acc_stride_ = cp;
  // The last tile's last pixel reads padded columns up to sw_ * (acc_pixels_ - 1) + kw_ - 1.
  groups_per_row_ = (sw_ * (acc_pixels_ - 1) + kw_ - 1) / group + 1;
  ring_slot_bytes_ = size_t(groups_per_row_ * cp * 4);
  zero_groups_ = AlignedArray<uint8_t>(ring_slot_bytes_);
  kernels.to_groups(zero_row_.data(), 0, 0, zero_row_.data(), c_, cp, groups_per_row_,
                    zero_groups_.data());
  // Each dword `group` taps of a kernel row, as bytes or int16s.
  const int64_t dwords = q8::group_tap_dwords(group, int(kw_)), bits = 32 / group;
  const uint32_t tap_mask = uint32_t((uint64_t{1} << bits) - 1);
  group_taps_ = AlignedArray<int32_t>(size_t(kh_ * dwords * cp));
  group_init_ = AlignedArray<int32_t>(size_t(cp));
  for (int64_t ch = 0; ch < c_; ++ch) {
    const int8_t* wc = w + ch * kh_ * kw_;
    int32_t sum = 0;
    for (int64_t t = 0; t < kh_ * kw_; ++t) sum += wc[t];
    group_init_[size_t(ch)] = static_cast<int32_t>(uint32_t(init_[size_t(ch)]) -
                                                   uint32_t(kernels.input_offset) * uint32_t(sum));
    for (int64_t ky = 0; ky < kh_; ++ky)
      for (int64_t kx = 0; kx < kw_; ++kx) {
        int32_t& dword = group_taps_[size_t((ky * dwords + kx / group) * cp + ch)];
        const uint32_t tap = uint32_t(int32_t{wc[ky * kw_ + kx]}) & tap_mask;
        dword = static_cast<int32_t>(uint32_t(dword) | tap << (bits * (kx % group)));
      }
  }
}

void QDepthwiseKernel::run_rows(const int8_t* x, const int8_t* z, void* y, int64_t r0, int64_t r1,
                                void* scratch) const {
  uint8_t* ws = static_cast<uint8_t*>(scratch);
  int32_t* acc = reinterpret_cast<int32_t*>(ws);
  const int8_t** taps = reinterpret_cast<const int8_t**>(ws + sums_bytes());
  const int8_t* zero_row = zero_row_.data();
  const int64_t c = c_, row_bytes = w_ * c;
  // The pixels whose taps all lie inside the image's columns: [ox_lo, ox_hi).
  const int64_t ox_lo = std::min(ow_, (pad_l_ + sw_ - 1) / sw_);
  const int64_t last_column = w_ - 1 - ((kw_ - 1) * dw_ - pad_l_);  // of the last tap at ox = 0
  const int64_t ox_hi = last_column < 0 ? ox_lo : std::clamp(last_column / sw_ + 1, ox_lo, ow_);
  uint8_t* ring = nullptr;
  int64_t* copied = nullptr;  // per slot of the ring: the row it holds, n * h + iy (-1: none)
  if (ring_slot_bytes_ > 0) {
    ring = ws + sums_bytes() + taps_bytes();
    copied = reinterpret_cast<int64_t*>(ring + ring_bytes());
    std::fill(copied, copied + ring_rows_, -1);
  }
  // Input row iy of image n in the ring (padded or as groups), copied there if it is not yet.
  // The kernel's rows span ring_rows_ consecutive input rows: their slots differ, and a row
  // taking a slot replaces one that no later output row reads.
  auto ring_row = [&](int64_t n, int64_t iy) {
    const int64_t slot = iy % ring_rows_;
    uint8_t* row = ring + size_t(slot) * ring_slot_bytes_;
    if (copied[slot] != n * h_ + iy) {
      const int8_t* in = x + (n * h_ + iy) * row_bytes;
      if (groups_) {
        groups_->to_groups(in, w_, pad_l_, zero_row, c, channels_padded_, groups_per_row_, row);
      } else {
        int8_t* padded = reinterpret_cast<int8_t*>(row);
        const int8_t zp = static_cast<int8_t>(x_zero_point_);
        std::fill(padded, padded + pad_l_ * c, zp);
        std::copy_n(in, row_bytes, padded + pad_l_ * c);
        std::fill(padded + pad_l_ * c + row_bytes, padded + ring_slot_bytes_, zp);
      }
      copied[slot] = n * h_ + iy;
    }
    return row;
  };
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t n = r / oh_, oy = r % oh_;
    const int8_t* image = x + n * h_ * row_bytes;
    if (groups_) {
      const uint8_t** rows = reinterpret_cast<const uint8_t**>(taps);
      for (int64_t ky = 0; ky < kh_; ++ky) {
        const int64_t iy = oy * sh_ - pad_t_ + ky;
        rows[ky] = iy < 0 || iy >= h_ ? zero_groups_.data() : ring_row(n, iy);
      }
      // A block of channels at a time, requantized while its sums are in L1 (kGroupBlock).
      for (int64_t c0 = 0; c0 < c; c0 += kGroupBlock) {
        const int64_t c1 = std::min(c0 + kGroupBlock, channels_padded_);
        groups_->sums({rows, kh_, kw_, sw_, acc_pixels_, channels_padded_, c0, c1,
                       group_taps_.data(), group_init_.data(), acc});
        output_row(r, acc, c0, std::min(c1, c), z, y);
      }
      continue;
    }
    if (padded_w_ > 0) {
      // Every pixel in the tiles: pixel ox's taps from padded column ox * sw_.
      for (int64_t ky = 0; ky < kh_; ++ky) {
        const int64_t iy = oy * sh_ - pad_t_ + ky * dh_;
        taps[ky] = iy < 0 || iy >= h_ ? zero_row : reinterpret_cast<const int8_t*>(ring_row(n, iy));
      }
      sums_->sums({taps, kh_, kw_, dw_ * c, sw_ * c, ow_, c, weights_.data(), init_.data(), acc});
    } else if (ox_hi > ox_lo) {
      // Tap (ky, kx) of pixel ox_lo + p at taps[ky] + p * pixel_step + kx * tap_step.
      for (int64_t ky = 0; ky < kh_; ++ky) {
        const int64_t iy = oy * sh_ - pad_t_ + ky * dh_;
        taps[ky] =
            (iy >= 0 && iy < h_ ? image + iy * row_bytes : zero_row) + (ox_lo * sw_ - pad_l_) * c;
      }
      sums_->sums({taps, kh_, kw_, dw_ * c, sw_ * c, ox_hi - ox_lo, c, weights_.data(),
                   init_.data(), acc + ox_lo * c});
    }
    // The pixels near the left and right edges one by one, each tap its own row.
    auto edge_pixel = [&](int64_t ox) {
      for (int64_t ky = 0; ky < kh_; ++ky) {
        const int64_t iy = oy * sh_ - pad_t_ + ky * dh_;
        for (int64_t kx = 0; kx < kw_; ++kx) {
          const int64_t ix = ox * sw_ - pad_l_ + kx * dw_;
          const bool inside = iy >= 0 && iy < h_ && ix >= 0 && ix < w_;
          taps[ky * kw_ + kx] = inside ? image + (iy * w_ + ix) * c : zero_row;
        }
      }
      sums_->sums({taps, kh_ * kw_, 1, 0, 0, 1, c, weights_.data(), init_.data(), acc + ox * c});
    };
    if (!ring) {
      for (int64_t ox = 0; ox < ox_lo; ++ox) edge_pixel(ox);
      for (int64_t ox = ox_hi; ox < ow_; ++ox) edge_pixel(ox);
    }
    output_row(r, acc, 0, c, z, y);
  }
}

void QDepthwiseKernel::output_row(int64_t r, int32_t* acc, int64_t c0, int64_t c1, const int8_t* z,
                                  void* y) const {
  // The row's pixels as the rows of one tile of channels [c0, c1).
  const int64_t out = r * ow_ * c_ + c0, ld = acc_stride_, cols = c1 - c0;
  acc += c0;
  if (rq_.quantize)
    q8::quantize_tile(rq_, acc, ld, int(ow_), c0, cols, static_cast<int8_t*>(y) + out, c_);
  else if (rq_.int8_out)
    requant_(rq_.params(), acc, ld, int(ow_), c0, cols, static_cast<int8_t*>(y) + out, c_,
             z ? z + out : nullptr);
  else
    q8::dequant_tile(rq_, acc, ld, int(ow_), c0, cols, static_cast<float*>(y) + out, c_);
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

std::string QDepthwiseKernel::variant() const { return sums_ ? isa_name(sums_->isa) : ""; }

}  // namespace minfer::cpu
