#include "backends/cpu/winograd_dilated.h"

#include <algorithm>

#include "backends/cpu/parallel.h"

namespace minfer::cpu {

WinogradShape DilatedWinograd::phase_shape(const Shape& s) {
  const int64_t d = s.dh, ph = ceil_div(s.h, d), pw = ceil_div(s.w, d);
  return {s.n * d * d, s.c, ph, pw, s.m, ph, pw, 1, 1};
}

bool DilatedWinograd::pays(const Shape& s) {
  const int64_t d = s.dh;
  return s.kh == 3 && s.kw == 3 && s.sh == 1 && s.sw == 1 && d > 1 && s.dw == d && s.pad_t == d &&
         s.pad_l == d && s.oh == s.h && s.ow == s.w && winograd_pays(phase_shape(s)) &&
         winograd_enabled();
}

int64_t DilatedWinograd::prepare(PrepareContext& ctx, const Shape& s, const float* weights,
                                 bool residual, int threads) {
  s_ = s;
  d_ = s.dh;
  residual_ = residual;
  const WinogradShape p = phase_shape(s);
  ph_ = p.h;
  pw_ = p.w;
  slice_ = winograd_.prepare(ctx, p, weights);
  const int64_t plane = round_up(p.n * ph_ * pw_, 16);
  // The input's phases, the residual's (where there is one), the output's; then the scratch.
  return plane * (s.c + (residual ? 2 : 1) * s.m) + int64_t(threads) * slice_;
}

void DilatedWinograd::gather(const float* x, int64_t c, float* phases, int threads) const {
  const Shape& s = s_;
  const int64_t d = d_, phase = c * ph_ * pw_;
  parallel_for(threads_for(s.n * c * s.h * s.w, threads), s.n * c, [&](int64_t unit) {
    const int64_t n = unit / c, ch = unit % c;
    const float* plane = x + unit * s.h * s.w;
    for (int64_t a = 0; a < d; ++a)
      for (int64_t b = 0; b < d; ++b) {
        float* dst = phases + (n * d * d + a * d + b) * phase + ch * ph_ * pw_;
        for (int64_t i = 0; i < ph_; ++i) {
          const int64_t r = i * d + a;
          float* row = dst + i * pw_;
          if (r >= s.h) {
            std::fill(row, row + pw_, 0.f);
            continue;
          }
          for (int64_t j = 0; j < pw_; ++j) {
            const int64_t col = j * d + b;
            row[j] = col < s.w ? plane[r * s.w + col] : 0.f;
          }
        }
      }
  });
}

void DilatedWinograd::scatter(const float* phases, int64_t c, float* y, int threads) const {
  const Shape& s = s_;
  const int64_t d = d_, phase = c * ph_ * pw_;
  parallel_for(threads_for(s.n * c * s.h * s.w, threads), s.n * c, [&](int64_t unit) {
    const int64_t n = unit / c, ch = unit % c;
    float* plane = y + unit * s.h * s.w;
    for (int64_t a = 0; a < d; ++a)
      for (int64_t b = 0; b < d; ++b) {
        const float* src = phases + (n * d * d + a * d + b) * phase + ch * ph_ * pw_;
        for (int64_t i = 0; i * d + a < s.h; ++i)
          for (int64_t j = 0; j * d + b < s.w; ++j)
            plane[(i * d + a) * s.w + j * d + b] = src[i * pw_ + j];
      }
  });
}

void DilatedWinograd::run(const float* x, const float* b, const float* z, float* y,
                          const Activation& act, float* workspace, int threads) const {
  const Shape& s = s_;
  const int64_t plane = round_up(s.n * d_ * d_ * ph_ * pw_, 16);
  float* xp = workspace;
  float* yp = xp + plane * s.c;
  float* zp = yp + plane * s.m;  // (only with a residual)
  float* scratch = zp + (residual_ ? plane * s.m : 0);
  gather(x, s.c, xp, threads);
  if (z) gather(z, s.m, zp, threads);
  winograd_.run(xp, b, z ? zp : nullptr, yp, act, scratch, threads);
  scatter(yp, s.m, y, threads);
}

}  // namespace minfer::cpu
