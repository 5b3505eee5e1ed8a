#include "backends/cpu/conv_small_plane.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/env_switch.h"
#include "backends/cpu/isa.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/winograd.h"  // winograd_enabled()

namespace minfer::cpu {

namespace {

constexpr int64_t kMaxPositions = 128, kMinChannels = 64, kLanes = 16;
constexpr int64_t kMinProductsPerMove = 300;  // see pays()
constexpr double kMinSavedPerMove = 92;        // 300 x (64 / 49 - 1): a 7x7 plane's threshold
constexpr int64_t kBlock = 16;  // channels per transpose task

// F(2x2, 3x3): G (4x3) maps a 3-tap filter to 4 points; the input and output transforms
// B^T d B and A^T m A are additions only (written out below).
constexpr double kG[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
constexpr int64_t kWinogradColumns = 64;  // output channels per product task: 2 AVX-512 tiles

int64_t winograd_tiles_of(const Conv2dShape& s) { return ceil_div(s.oh, 2) * ceil_div(s.ow, 2); }

}  // namespace

bool small_plane_enabled() { return env_switch("MINFER_CPU_SMALL_PLANE", true); }

bool SmallPlaneConv::pays(const Shape& s, int64_t tile_columns) {
  const int64_t p = s.oh * s.ow;
  if (p > kMaxPositions || s.m == 0) return false;
  const int64_t k = s.c * s.kh * s.kw, moved = s.c * s.h * s.w + s.m * p;
  const bool f23 = winograd_pays(s);
  // (A plane the tiles fill, 8x8, still pays where F(2x2, 3x3) cuts the products 2.25x.)
  if ((p % tile_columns != 0 || f23) && s.m >= kMinChannels &&
      k * s.m * p >= kMinProductsPerMove * moved)
    return true;
  // The position tiles fill p of the lanes of the vectors of 16 that p positions take (AVX2's
  // tiles are 2 vectors of 8); this path does 16 products per 2x2 tile for F(2x2, 3x3) where
  // they do 9 per position, else as many.
  const double lanes_used = double(p) / double(round_up(p, kLanes));
  const double work = f23 ? 16.0 * double(winograd_tiles_of(s)) / (9.0 * double(p)) : 1;
  return double(k * s.m * p) * (1 / lanes_used - work) >= kMinSavedPerMove * double(moved);
}

bool SmallPlaneConv::winograd_pays(const Shape& s) {
  const bool f23 = s.kh == 3 && s.kw == 3 && s.sh == 1 && s.sw == 1 && s.dh == 1 && s.dw == 1;
  return f23 && 3 * (16 * winograd_tiles_of(s)) <= 2 * (9 * s.oh * s.ow) &&
         s.n * winograd_tiles_of(s) >= kMinWinogradTiles && s.m % kLanes == 0 &&
         winograd_enabled();
}

int64_t SmallPlaneConv::prepare(PrepareContext& ctx, const Shape& s, const float* weights) {
  s_ = s;
  direct_rows_ = s.kh == 1 && s.kw == 1 && s.sh == 1 && s.sw == 1 && s.pad_t == 0 &&
                 s.pad_l == 0 && s.oh == s.h && s.ow == s.w;
  const int64_t taps = s.kh * s.kw, K = k(), M = s.m, C = s.c;
  const f32::MicroKernels& tiles = fp32_micro_kernels();
  transpose_ = level_kernels(tiles.isa)->transpose->transpose;
  winograd_ = winograd_pays(s);
  if (winograd_) {
    tiles_h_ = ceil_div(s.oh, 2);
    tiles_w_ = ceil_div(s.ow, 2);
    const std::string key = std::string("cpu.conv.small_plane.f23.") + isa_name(tiles.isa);
    u_ = ctx.share<std::vector<PackedRhs>>(
        key, 16 * PackedRhs::packed_floats(C, M) * sizeof(float), [&] {
          auto u = std::make_shared<std::vector<PackedRhs>>();
          u->reserve(16);
          std::vector<float> ue(size_t(M * C));  // U_e [M, C], one e at a time
          for (int e = 0; e < 16; ++e) {
            const int i = e / 4, j = e % 4;
            for (int64_t mc = 0; mc < M * C; ++mc) {
              const float* g = weights + mc * 9;  // W [M, C, 3, 3]
              double sum = 0;  // (G g G^T)[i][j], in double as winograd.cpp's F(4x4, 3x3)
              for (int a = 0; a < 3; ++a)
                for (int b = 0; b < 3; ++b) sum += kG[i][a] * g[a * 3 + b] * kG[j][b];
              ue[size_t(mc)] = static_cast<float>(sum);
            }
            u->emplace_back(ue.data(), C, M, C, true, tiles);
          }
          return u;
        });
    return round_up(s.h * s.w * xt_stride(), 16) +
           round_up(16 * winograd_tiles() * v_stride(), 16) +
           round_up(16 * winograd_tiles() * M, 16) + round_up(positions() * M, 16);
  }
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
  return round_up(s.h * s.w * xt_stride(), 16) + (direct_rows_ ? 0 : round_up(p * K, 16)) +
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
          std::memcpy(dst, xt + (iy * s_.w + ix) * xt_stride(), C * sizeof(float));
        else
          std::fill(dst, dst + C, 0.f);
      }
  });
}

void SmallPlaneConv::winograd_input(const float* xt, float* v, int threads) const {
  const int64_t C = s_.c, T = winograd_tiles();
  parallel_for(threads_for(16 * T * C, threads), T, [&](int64_t t) {
    const int64_t ty = t / tiles_w_, tx = t % tiles_w_;
    const float* pixel[4][4];  // the tile's 4x4 input pixels (channels-last), null: padding
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        const int64_t iy = 2 * ty - s_.pad_t + i, ix = 2 * tx - s_.pad_l + j;
        const bool inside = iy >= 0 && iy < s_.h && ix >= 0 && ix < s_.w;
        pixel[i][j] = inside ? xt + (iy * s_.w + ix) * xt_stride() : nullptr;
      }
    for (int64_t c0 = 0; c0 < C; c0 += kLanes) {
      const int64_t n = std::min(kLanes, C - c0);
      float d[4][4][kLanes], r[4][4][kLanes];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          std::fill(d[i][j], d[i][j] + kLanes, 0.f);
          if (pixel[i][j]) std::copy(pixel[i][j] + c0, pixel[i][j] + c0 + n, d[i][j]);
        }
      for (int j = 0; j < 4; ++j)  // B^T d
        for (int64_t l = 0; l < kLanes; ++l) {
          r[0][j][l] = d[0][j][l] - d[2][j][l];
          r[1][j][l] = d[1][j][l] + d[2][j][l];
          r[2][j][l] = d[2][j][l] - d[1][j][l];
          r[3][j][l] = d[1][j][l] - d[3][j][l];
        }
      for (int i = 0; i < 4; ++i) {  // (B^T d) B, stored to V_{4i+j}
        float* out[4];
        for (int j = 0; j < 4; ++j) out[j] = v + ((4 * i + j) * T + t) * v_stride() + c0;
        for (int64_t l = 0; l < n; ++l) {
          out[0][l] = r[i][0][l] - r[i][2][l];
          out[1][l] = r[i][1][l] + r[i][2][l];
          out[2][l] = r[i][2][l] - r[i][1][l];
          out[3][l] = r[i][1][l] - r[i][3][l];
        }
      }
    }
  });
}

void SmallPlaneConv::winograd_products(const float* v, float* mo, int threads) const {
  const int64_t C = s_.c, M = s_.m, T = winograd_tiles();
  // One loop over (e, column slice) tasks, claimed as they come, for all 16 products; split
  // from 256K multiply-adds a thread (a CIFAR ResNet's 8x8 planes of 64 channels, 1M: its 17
  // convs 0.26 -> 0.20 ms on 2 threads of a Zen 5, where they had run on one).
  const int64_t slices = ceil_div(M, kWinogradColumns);
  parallel_for(threads_for(16 * T * C * M, threads, int64_t{1} << 18), 16 * slices,
               [&](int64_t task) {
                 const int64_t e = task / slices, j0 = task % slices * kWinogradColumns;
                 (*u_)[size_t(e)].multiply_columns(v + e * T * v_stride(), T, v_stride(),
                                                   mo + e * T * M, M, j0,
                                                   std::min(M, j0 + kWinogradColumns));
               });
}

void SmallPlaneConv::winograd_output(const float* mo, const float* b, float* out,
                                     int threads) const {
  const int64_t M = s_.m, T = winograd_tiles();
  parallel_for(threads_for(16 * T * M, threads), T, [&](int64_t t) {
    const int64_t ty = t / tiles_w_, tx = t % tiles_w_;
    for (int64_t m0 = 0; m0 < M; m0 += kLanes) {  // M is whole vectors (winograd_pays())
      float s[2][4][kLanes];
      for (int j = 0; j < 4; ++j) {  // A^T m
        const float* m[4];
        for (int i = 0; i < 4; ++i) m[i] = mo + ((4 * i + j) * T + t) * M + m0;
        for (int64_t l = 0; l < kLanes; ++l) {
          s[0][j][l] = m[0][l] + m[1][l] + m[2][l];
          s[1][j][l] = m[1][l] - m[2][l] - m[3][l];
        }
      }
      for (int r = 0; r < 2; ++r)  // (A^T m) A plus the bias
        for (int q = 0; q < 2; ++q) {
          const int64_t oy = 2 * ty + r, ox = 2 * tx + q;
          if (oy >= s_.oh || ox >= s_.ow) continue;
          float* y = out + (oy * s_.ow + ox) * M + m0;
          for (int64_t l = 0; l < kLanes; ++l) {
            const float value = q == 0 ? s[r][0][l] + s[r][1][l] + s[r][2][l]
                                       : s[r][1][l] - s[r][2][l] - s[r][3][l];
            y[l] = value + (b ? b[m0 + l] : 0.f);
          }
        }
    }
  });
}

void SmallPlaneConv::run(const float* x, const float* b, const float* z, float* y,
                         const Activation& act, float* workspace, int threads) const {
  const int64_t C = s_.c, M = s_.m, p = positions(), plane = s_.h * s_.w;
  // The workspace (prepare()'s sizes): the channels-last input, then the direct product's taps
  // (unless the input is the operand) and outputs, or F(2x2, 3x3)'s V, products and outputs.
  float* xt = workspace;
  float* rest = xt + round_up(plane * xt_stride(), 16);
  float* col = direct_rows_ ? xt : rest;
  float* v = rest;
  float* mo = winograd_ ? v + round_up(16 * winograd_tiles() * v_stride(), 16) : nullptr;
  float* out = winograd_      ? mo + round_up(16 * winograd_tiles() * M, 16)
               : direct_rows_ ? rest
                              : rest + round_up(p * k(), 16);
  for (int64_t n = 0; n < s_.n; ++n) {
    // Channels-last, a block of channels per task.
    const float* xn = x + n * C * plane;
    parallel_for(threads_for(C * plane, threads), ceil_div(C, kBlock), [&](int64_t i) {
      const int64_t c0 = i * kBlock, c1 = std::min(C, c0 + kBlock);
      transpose_(xn + c0 * plane, c1 - c0, plane, plane, xt + c0, xt_stride(), nullptr);
    });
    // Without a residual the activation runs in the product's epilogue, else after adding it
    // (F(2x2, 3x3): always after).
    const bool act_after = z || winograd_;
    if (winograd_) {
      winograd_input(xt, v, threads);
      winograd_products(v, mo, threads);
      winograd_output(mo, b, out, threads);
    } else {
      if (!direct_rows_) gather_taps(xt, col, threads);
      w_->multiply(col, p, direct_rows_ ? xt_stride() : k(), out, M, threads, b,
                   act_after ? nullptr : &act);
    }
    float* yn = y + n * M * p;
    const float* zn = z ? z + n * M * p : nullptr;
    parallel_for(threads_for(M * p, threads), ceil_div(M, kBlock), [&](int64_t i) {
      const int64_t m0 = i * kBlock, m1 = std::min(M, m0 + kBlock);
      transpose_(out + m0, p, m1 - m0, M, yn + m0 * p, p, zn ? zn + m0 * p : nullptr);
      if (act_after)
        for (int64_t j = m0; j < m1; ++j) act.apply(yn + j * p, p);
    });
  }
}

}  // namespace minfer::cpu
