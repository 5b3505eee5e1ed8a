// CPU kernel of com.minfer:QConv (NHWC) for depthwise convolutions (one input and one output
// channel per group: MobileNet, EfficientNet). The GEMM kernel would run one tiny GEMM per
// channel; here each output pixel accumulates its taps across all channels at once (channels
// are the contiguous NHWC axis), a register tile of pixels x channel vectors at the ISA level
// (backends/cpu/isa/qdepthwise_sums.cpp; for 3x3 and 5x5 kernels 2 or 4 taps a lane on group
// rows, qdepthwise_groups.cpp), and a row of pixels goes through the same requantize epilogue as
// the GEMM kernel's tiles (requant.h): equal bit for bit to the reference.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/aligned_array.h"
#include "backends/cpu/int8/requant.h"
#include "minfer/kernel.h"

namespace minfer::cpu {

class QDepthwiseKernel final : public Kernel {
 public:
  // QConv, NHWC, 2-D, group == input channels == output channels, constant int8 weights (and
  // int32 bias), AVX2.
  static bool supports(const PrepareContext& ctx);

  void prepare(PrepareContext& ctx) override;
  void run(RunContext& ctx) const override;
  std::string variant() const override;  // the ISA level, e.g. "avx512vnni"

 private:
  // Output rows [r0, r1) of the batch (row r = image r / oh, output row r % oh).
  // scratch: this thread's per_thread_bytes_ of the workspace.
  void run_rows(const int8_t* x, const int8_t* z, void* y, int64_t r0, int64_t r1,
                void* scratch) const;

  void prepare_groups(const q8::DepthwiseGroupKernels& kernels, const int8_t* w);
  // Output row r's channels [c0, c1) from their sums in acc (acc_stride_ apart).
  void output_row(int64_t r, int32_t* acc, int64_t c0, int64_t c1, const int8_t* z, void* y) const;

  int64_t n_ = 1, h_ = 1, w_ = 1, c_ = 1, oh_ = 1, ow_ = 1;
  int64_t kh_ = 1, kw_ = 1, sh_ = 1, sw_ = 1, dh_ = 1, dw_ = 1, pad_t_ = 0, pad_l_ = 0;
  int32_t x_zero_point_ = 0;
  AlignedArray<int32_t> weights_;  // [tap][channel]: DepthwiseRun's w
  AlignedArray<int32_t> init_;     // per channel: bias - zero point * sum of the channel's weights
  AlignedArray<int8_t> zero_row_;  // an input row of zero points: the taps in the padding read it
  // Narrow planes (ow <= kPaddedWidth), where the pixels near the edges are many: each thread
  // copies the input rows it reads once, with zero points for the padding on both of their
  // sides, into a ring of the rows that one output row reads, so that every pixel of a row runs
  // in the register tiles (otherwise the edge pixels go one by one, each tap its own row). On
  // wider planes the copies gained 0-3 % (MobileNet v2's and EfficientNet-B0's 56x56 and
  // 112x112 layers; Zen 5).
  // (Stride 1 only: at stride 2 the rows to copy are twice as wide and the pixels past the edges
  // fewer, and MobileNet v2's stride-2 layers were 5-9 % slower with the copies; Zen 5.)
  static constexpr int64_t kPaddedWidth = 32;
  int64_t padded_w_ = 0;  // > 0: the rows are copied, this wide (pad_l_ + w_ + right padding)
  // The group path (3x3 and 5x5 kernels at stride 1 or 2, no dilation;
  // MINFER_CPU_INT8_DEPTHWISE_GROUPS=0 turns it off): the sums on group rows
  // (q8::DepthwiseGroupRun), each input row transposed once into the ring, every pixel in the
  // tiles. The time of the plain sums' (Zen 5), MobileNet v2's depthwise layers / EfficientNet-
  // B0's: avx512vnni 0.84x / 0.82x, avxvnni 0.69x (MobileNet v2), avx512 0.90x / 0.92x, avx2
  // 0.93x / 0.85x; on a Sapphire Rapids Xeon 0.78-0.86x at every level.
  const q8::DepthwiseGroupKernels* groups_ = nullptr;  // null: the plain sums
  // Channels summed and requantized at a time, their sums still in L1: single depthwise layers
  // with float outputs (14x14 planes of 384 and 576 channels, 56x56 of 144) 0.87-0.91x the time
  // of whole rows, MobileNet v2's and EfficientNet-B0's layers even (Zen 5).
  static constexpr int64_t kGroupBlock = 64;
  int64_t groups_per_row_ = 0, channels_padded_ = 0;
  AlignedArray<int32_t> group_taps_;   // DepthwiseGroupRun's taps
  AlignedArray<int32_t> group_init_;   // init_ less the group rows' input offset * the weights
  AlignedArray<uint8_t> zero_groups_;  // a group row of zero points: kernel rows in the padding
  int64_t ring_rows_ = 0;              // the input rows one output row reads, (kh - 1) * dh + 1
  size_t ring_slot_bytes_ = 0;         // one row of the ring: padded or groups
  size_t ring_bytes() const { return (size_t(ring_rows_) * ring_slot_bytes_ + 63) / 64 * 64; }
  // A row's sums: acc_pixels_ x acc_stride_ int32s (the group tiles write whole groups of
  // pixels and channels_padded_ lanes).
  int64_t acc_pixels_ = 0, acc_stride_ = 0;
  q8::Requant rq_;
  const q8::DepthwiseKernels* sums_ = nullptr;  // at the ISA level
  q8::RequantTile requant_ = nullptr;           // rq_'s int8 output at the ISA level
  int threads_ = 1;
  // A thread's workspace: a row's sums, the tap pointers of one run, then (padded or groups) the
  // ring of rows and, per slot, the row it holds. The workspace is 64-byte aligned, and so is
  // each part but the last.
  size_t per_thread_bytes_ = 0;
  size_t sums_bytes() const {
    return (size_t(acc_pixels_ * acc_stride_) * sizeof(int32_t) + 63) / 64 * 64;
  }
  size_t taps_bytes() const { return (size_t(kh_ * kw_) * sizeof(int8_t*) + 63) / 64 * 64; }
};

}  // namespace minfer::cpu
