// The geometry of a 2-D convolution, as the conv kernel's channels-in-lanes paths take it
// (conv_small_plane.h, conv_strided.h; only the strided path takes groups); sizes in elements.
#pragma once

#include <cstdint>

namespace minfer::cpu {

struct Conv2dShape {
  int64_t n, c, h, w;  // input
  int64_t m, oh, ow;   // output
  int64_t kh, kw, sh, sw, dh, dw, pad_t, pad_l;
  int64_t group = 1;  // c and m are multiples of it
};

}  // namespace minfer::cpu
