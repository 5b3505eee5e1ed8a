// Rows of one input plane copied with their zero padding: the padded copies that the conv
// paths read taps from without bounds checks (ConvKernel's packed im2col, StridedConv).
#pragma once

#include <algorithm>
#include <cstdint>

namespace minfer::cpu {

// Input rows iy0 .. iy0 + rows - 1 of `plane` [h, w] into `rows` rows of `width` floats at dst
// (row stride width): padded column u holds input column u - pad_l where that lies in [0, w),
// and rows outside [0, h) are zeros.
inline void copy_padded_rows(const float* plane, int64_t h, int64_t w, int64_t iy0,
                             int64_t rows, int64_t pad_l, float* dst, int64_t width) {
  const int64_t u0 = std::min(pad_l, width), u1 = std::clamp(pad_l + w, u0, width);
  for (int64_t v = 0; v < rows; ++v, dst += width) {
    const int64_t iy = iy0 + v;
    if (iy < 0 || iy >= h) {
      std::fill(dst, dst + width, 0.f);
      continue;
    }
    std::fill(dst, dst + u0, 0.f);
    std::copy_n(plane + iy * w + (u0 - pad_l), u1 - u0, dst + u0);
    std::fill(dst + u1, dst + width, 0.f);
  }
}

}  // namespace minfer::cpu
