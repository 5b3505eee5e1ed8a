#include "backends/cpu/depthwise.h"

#include <algorithm>

#include "backends/cpu/depthwise_channels.h"
#include "backends/cpu/isa.h"
#include "backends/cpu/isa/isa_kernels.h"
#include "backends/cpu/parallel.h"

namespace minfer::cpu {

namespace {

// The plane kernels of the highest compiled level <= the active one that this CPU runs.
const f32::DepthwisePlanes* active_planes() {
  const LevelKernels* level = level_kernels(active_isa());
  return level ? level->depthwise_planes : nullptr;
}

// The channels-as-lanes kernels likewise.
const f32::DepthwiseChannelKernels* active_channel_kernels() {
  const LevelKernels* level = level_kernels(active_isa());
  return level ? level->depthwise_channels : nullptr;
}

}  // namespace

DepthwisePlaneFn depthwise_plane_kernel(int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh,
                                        int64_t dw, int64_t pad_t, int64_t pad_l, int64_t h,
                                        int64_t w, int64_t oh, int64_t ow) {
  if (kh != kw || sh != sw || dh != 1 || dw != 1 || (kh != 3 && kh != 5 && kh != 7) ||
      (sh != 1 && sh != 2))
    return nullptr;
  const int64_t p = kh / 2;
  // The padded plane must hold every tap: no more padding after than K / 2.
  if (pad_t != p || pad_l != p || oh < 1 || ow < 1 || (oh - 1) * sh + kh > h + 2 * p ||
      (ow - 1) * sw + kw > w + 2 * p)
    return nullptr;
  const f32::DepthwisePlanes* planes = active_planes();
  return planes ? planes->plane[(kh - 3) / 2][sh == 2] : nullptr;
}

int depthwise_plane_isa() {
  const f32::DepthwisePlanes* planes = active_planes();
  return planes ? static_cast<int>(planes->isa) : -1;
}

size_t depthwise_scratch_floats(int64_t h, int64_t w, int64_t k) {
  // The padded plane, in the larger of the two layouts.
  const size_t row = size_t(depthwise_scratch_row(w, k, 2)), rows = size_t(h + 2 * (k / 2));
  return rows * row;
}

size_t depthwise_planes_nhwc_scratch(const DepthwisePlanesNhwc& a) {
  const size_t planes = size_t(a.kBlock * a.oh * a.ow);
  return (planes + 15) / 16 * 16 + depthwise_scratch_floats(a.h, a.w, a.k);
}

int64_t depthwise_row_parts(int64_t images, int64_t input_bytes, int64_t oh, int parts) {
  // (Larger inputs come from L3 whichever core wrote them: there the split by channels
  // measured faster, MobileNet v2's 56x56 and 112x112 planes at 2 threads by 7-12 %.)
  constexpr int64_t kCachedBytes = int64_t{1} << 20;  // a Zen 4's or 5's L2
  if (images != 1 || input_bytes > kCachedBytes) return 1;
  return std::clamp<int64_t>(oh / 4, 1, parts);
}

int64_t depthwise_row_split(int64_t oh, int64_t row_parts, int64_t i) {
  return i == row_parts ? oh : oh * i / row_parts / 2 * 2;
}

void run_depthwise_planes_nhwc(DepthwisePlaneFn fn, const DepthwisePlanesNhwc& a, int parts,
                               float* workspace, int64_t scratch_floats) {
  const f32::Transpose transpose = level_kernels(active_isa())->transpose->transpose;
  const int64_t plane = a.oh * a.ow, blocks = ceil_div(a.c, a.kBlock);
  // Units (image, row part, channel block) in that order: at batch 1 each part takes its rows
  // of every channel (depthwise_row_parts).
  const int64_t row_parts =
      depthwise_row_parts(a.images, a.c * a.h * a.w * int64_t(sizeof(float)), a.oh, parts);
  const int64_t units = a.images * row_parts * blocks;
  parallel_region(int(std::min<int64_t>(units, parts)), [&](int part, int n_parts) {
    float* planes = workspace + part * scratch_floats;
    float* plane_scratch = planes + round_up(a.kBlock * plane, 16);
    for (int64_t u = split_begin(units, n_parts, part); u < split_begin(units, n_parts, part + 1);
         ++u) {
      const int64_t image = u / (row_parts * blocks), rp = u / blocks % row_parts;
      const int64_t m0 = u % blocks * a.kBlock, m1 = std::min(a.c, m0 + a.kBlock);
      const int64_t r0 = depthwise_row_split(a.oh, row_parts, rp),
                    r1 = depthwise_row_split(a.oh, row_parts, rp + 1);
      for (int64_t m = m0; m < m1; ++m) {
        const DepthwisePlane p{a.x + (image * a.c + m) * a.h * a.w,
                               a.h,
                               a.w,
                               a.weights + m * a.k * a.k,
                               a.bias ? a.bias[m] : 0.f,
                               nullptr,
                               a.act,
                               planes + (m - m0) * plane,
                               a.oh,
                               a.ow,
                               plane_scratch,
                               r0,
                               r1};
        fn(p);
      }
      transpose(planes + r0 * a.ow, m1 - m0, (r1 - r0) * a.ow, plane,
                a.y + (image * plane + r0 * a.ow) * a.c + m0, a.c, nullptr);
    }
  });
}

DepthwiseChannelsKernel depthwise_channels_kernel(int64_t k, int64_t s, int64_t h, int64_t w,
                                                  int64_t oh, int64_t ow) {
  DepthwiseChannelsKernel r;
  const f32::DepthwiseChannelKernels* t = active_channel_kernels();
  if (!t || (k != 3 && k != 5 && k != 7) || (s != 1 && s != 2)) return r;
  r.fn = t->kernel[(k - 3) / 2][s == 2];
  r.lanes = t->lanes;
  r.isa = static_cast<int>(t->isa);
  r.scratch_floats = t->scratch_floats(h, w, oh, ow, k, s);
  return r;
}

DepthwiseNhwcFn depthwise_nhwc_kernel(int64_t k, int64_t s) {
  const f32::DepthwiseChannelKernels* t = active_channel_kernels();
  if (!t || (k != 3 && k != 5) || (s != 1 && s != 2)) return nullptr;
  return t->nhwc[k == 5][s == 2];
}

void run_depthwise_channel_ranges(DepthwiseChannelsFn fn, const DepthwiseChannels& a,
                                  int64_t images, int64_t x_image, int64_t y_image,
                                  int64_t lanes, int parts, float* workspace,
                                  int64_t scratch_floats) {
  const int64_t channels = a.m1, groups = (channels + lanes - 1) / lanes, units = images * groups;
  parallel_region(int(std::min<int64_t>(units, parts)), [&](int part, int n_parts) {
    const int64_t begin = split_begin(units, n_parts, part),
                  end = split_begin(units, n_parts, part + 1);
    for (int64_t u = begin; u < end;) {
      const int64_t n = u / groups, last = std::min(end, (n + 1) * groups);
      DepthwiseChannels b = a;
      b.x = a.x + n * x_image;
      b.residual = a.residual ? a.residual + n * y_image : nullptr;
      b.y = a.y + n * y_image;
      b.m0 = (u - n * groups) * lanes;
      b.m1 = std::min(channels, (last - n * groups) * lanes);
      b.scratch = workspace + part * scratch_floats;
      fn(b);
      u = last;
    }
  });
}

bool depthwise_channels_pays(int64_t k, int64_t oh, int64_t ow) {
  // On AVX-512 the 3x3 plane kernel reads its input rows in place, in blocks of up to 4
  // vectors of columns (depthwise_plane.cpp); against it, one thread, MobileNet v2 /
  // EfficientNet-B0 layers on a Zen 5: 0.5-0.7x at 28x28 (stride 1 and 2), even at 14x14,
  // 1.4-2x faster at 7x7. The 5x5 plane kernel (a padded copy, rows 16 floats at a time) lost
  // everywhere there: 1.2-1.3x slower at 112x112, 1.7x at 56x56, 3-10x at 28x28 and less.
  // 7x7 (ConvNeXt's, 49 taps) on every plane and level: one conv alone, 1 thread of a Zen 5,
  // ms against the plane kernel: 0.56 -> 0.25 (96 channels, 56x56), 0.75 -> 0.13 (192, 28x28),
  // 0.82 -> 0.06 (384, 14x14); at MINFER_ISA=avx2 0.60 -> 0.42 on 56x56. Up to 64x64: its
  // scratch holds W padded planes and their sums (0.6 MB a thread at 64x64 on AVX-512).
  constexpr int64_t kMaxChannels7x7Plane = 64 * 64;
  if (k == 7) return oh * ow <= kMaxChannels7x7Plane;
  const f32::DepthwisePlanes* planes = active_planes();
  if (planes && planes->isa >= Isa::avx512) return k == 5 || oh * ow < 14 * 14;
  // Else (Zen 3, AVX2): 1.2x (28x28) to 4x (7x7) faster, and 2x to 9x at stride 2 (whose plane
  // kernel splits columns); about even at 56x56, 0.7x at 112x112 where the plane kernel's
  // rows are long enough to vectorize well.
  return oh * ow <= 32 * 32;
}

}  // namespace minfer::cpu
