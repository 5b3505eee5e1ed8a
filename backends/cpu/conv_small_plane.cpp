#include "backends/cpu/conv_small_plane.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/isa.h"
#include "backends/cpu/parallel.h"

namespace minfer::cpu {

namespace {

constexpr int64_t kMaxPositions = 64, kMinChannels = 64, kLanes = 16;
constexpr int64_t kMinProductsPerMove = 384;  // see pays()
constexpr int64_t kBlock = 16;  // the transposes' square blocks

// dst [cols, rows] = src [rows, cols]^T (row strides ld_src and ld_dst), by square blocks.
void transpose(const float* src, int64_t rows, int64_t cols, int64_t ld_src, float* dst,
               int64_t ld_dst) {
  for (int64_t r0 = 0; r0 < rows; r0 += kBlock)
    for (int64_t c0 = 0; c0 < cols; c0 += kBlock) {
      const int64_t r1 = std::min(rows, r0 + kBlock), c1 = std::min(cols, c0 + kBlock);
      for (int64_t c = c0; c < c1; ++c)
        for (int64_t r = r0; r < r1; ++r) dst[c * ld_dst + r] = src[r * ld_src + c];
    }
}

}  // namespace

bool small_plane_enabled() {
  const char* v = std::getenv("MINFER_CPU_SMALL_PLANE");
  return !(v && std::string(v) == "0");
}

bool SmallPlaneConv::pays(const Shape& s, int64_t tile_columns) {
  const int64_t p = s.oh * s.ow;
  const int64_t k = s.c * s.kh * s.kw, moved = s.c * s.h * s.w + s.m * p;
  return p <= kMaxPositions && p % tile_columns != 0 && s.m >= kMinChannels &&
         s.m % kLanes == 0 && k >= s.m && k * s.m * p >= kMinProductsPerMove * moved;
}

int64_t SmallPlaneConv::prepare(PrepareContext& ctx, const Shape& s, const float* weights) {
  s_ = s;
  direct_rows_ = s.kh == 1 && s.kw == 1 && s.sh == 1 && s.sw == 1 && s.pad_t == 0 &&
                 s.pad_l == 0 && s.oh == s.h && s.ow == s.w;
  const int64_t taps = s.kh * s.kw, K = k(), M = s.m, C = s.c;
  const f32::MicroKernels& tiles = fp32_micro_kernels();
  w_ = ctx.share<PackedRhs>(std::string("cpu.conv.small_plane.") + isa_name(tiles.isa),
                            PackedRhs::packed_floats(K, M) * sizeof(float), [&] {
                              // W [M, C, taps] -> [M, taps * C]: the rows of W^T, tap-major.
                              std::vector<float> w(size_t(M * K));
                              for (int64_t j = 0; j < M; ++j)
                                for (int64_t c = 0; c < C; ++c)
                                  for (int64_t t = 0; t < taps; ++t)
                                    w[j * K + t * C + c] = weights[(j * C + c) * taps + t];
                              return std::make_shared<PackedRhs>(w.data(), K, M, K, true, tiles);
                            });
  const int64_t p = positions();
  return round_up(s.h * s.w * C, 16) + (direct_rows_ ? 0 : round_up(p * K, 16)) +
         round_up(p * M, 16);
}

void SmallPlaneConv::gather_taps(const float* xt, float* col, int threads) const {
  const int64_t C = s_.c, K = k();
  parallel_for(threads_for(positions() * K, threads), positions(), [&](int64_t q) {
    const int64_t oy = q / s_.ow, ox = q % s_.ow;
    float* row = col + q * K;
    for (int64_t ky = 0; ky < s_.kh; ++ky)
      for (int64_t kx = 0; kx < s_.kw; ++kx) {
        const int64_t iy = oy * s_.sh - s_.pad_t + ky * s_.dh;
        const int64_t ix = ox * s_.sw - s_.pad_l + kx * s_.dw;
        float* dst = row + (ky * s_.kw + kx) * C;
        if (iy >= 0 && iy < s_.h && ix >= 0 && ix < s_.w)
          std::memcpy(dst, xt + (iy * s_.w + ix) * C, C * sizeof(float));
        else
          std::fill(dst, dst + C, 0.f);
      }
  });
}

void SmallPlaneConv::run(const float* x, const float* b, const float* z, float* y,
                         const Activation& act, float* workspace, int threads) const {
  const int64_t C = s_.c, M = s_.m, p = positions(), plane = s_.h * s_.w;
  float* xt = workspace;
  float* col = direct_rows_ ? xt : xt + round_up(plane * C, 16);
  float* out = col + (direct_rows_ ? round_up(plane * C, 16) : round_up(p * k(), 16));
  for (int64_t n = 0; n < s_.n; ++n) {
    // Channels-last, a block of channels per task.
    const float* xn = x + n * C * plane;
    parallel_for(threads_for(C * plane, threads), ceil_div(C, kBlock), [&](int64_t i) {
      const int64_t c0 = i * kBlock, c1 = std::min(C, c0 + kBlock);
      transpose(xn + c0 * plane, c1 - c0, plane, plane, xt + c0, C);
    });
    if (!direct_rows_) gather_taps(xt, col, threads);
    // Without a residual the activation runs in the product's epilogue, else after adding it.
    w_->multiply(col, p, k(), out, M, threads, b, z ? nullptr : &act);
    float* yn = y + n * M * p;
    const float* zn = z ? z + n * M * p : nullptr;
    parallel_for(threads_for(M * p, threads), ceil_div(M, kBlock), [&](int64_t i) {
      const int64_t m0 = i * kBlock, m1 = std::min(M, m0 + kBlock);
      transpose(out + m0, p, m1 - m0, M, yn + m0 * p, p);
      if (!zn) return;
      for (int64_t j = m0; j < m1; ++j) {
        float* row = yn + j * p;
        for (int64_t q = 0; q < p; ++q) row[q] += zn[j * p + q];
        act.apply(row, p);
      }
    });
  }
}

}  // namespace minfer::cpu
