#include "backends/cpu/conv_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <new>
#include <string>

namespace minfer::cpu {

namespace {

constexpr int64_t kMr = 6, kNr = 16;  // the register tile
constexpr std::align_val_t kAlign{64};

// The epilogue's per-tile inputs: bias and residual rows start at the tile's first row.
struct TileOut {
  const float* bias;  // null = none
  const float* z;     // null = none; row stride ldy like y
  float* y;
  int64_t ldy;
  int64_t rows, cols;  // valid part of the tile (rows <= 6, cols <= 16)
};

// One 6 x 16 tile of Y over all k steps. kMasked: fewer than 16 columns, read and written
// through lane masks (never past the row's end). The accumulators are an array indexed by
// constants only (fully unrolled), so they live in registers.
template <bool kMasked>
__attribute__((target("avx2,fma"))) void tile_6x16(int64_t k, const float* wp, const float* x,
                                                   int64_t ldx, const TileOut& o, bool clamp,
                                                   float lo, float hi) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i mask0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(o.cols)), lane);
  const __m256i mask1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(o.cols) - 8), lane);
  auto load = [&](const float* p, int half) {
    if constexpr (kMasked) return _mm256_maskload_ps(p + 8 * half, half ? mask1 : mask0);
    return _mm256_loadu_ps(p + 8 * half);
  };
  __m256 acc[kMr][2];
#pragma GCC unroll 6
  for (int i = 0; i < kMr; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  for (int64_t s = 0; s < k; ++s, wp += kMr, x += ldx) {
    const __m256 x0 = load(x, 0), x1 = load(x, 1);
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) {
      const __m256 w = _mm256_broadcast_ss(wp + i);
      acc[i][0] = _mm256_fmadd_ps(w, x0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(w, x1, acc[i][1]);
    }
  }
  const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
#pragma GCC unroll 6
  for (int i = 0; i < kMr; ++i) {
    if (i >= o.rows) break;
    float* y = o.y + i * o.ldy;
    __m256 v0 = acc[i][0], v1 = acc[i][1];
    if (o.bias) {
      const __m256 b = _mm256_broadcast_ss(o.bias + i);
      v0 = _mm256_add_ps(v0, b), v1 = _mm256_add_ps(v1, b);
    }
    if (o.z) {
      const float* z = o.z + i * o.ldy;
      v0 = _mm256_add_ps(v0, load(z, 0)), v1 = _mm256_add_ps(v1, load(z, 1));
    }
    if (clamp) {  // min(max(v, lo), hi) with Clip's NaN behaviour (a NaN stays NaN)
      v0 = _mm256_min_ps(vhi, _mm256_max_ps(vlo, v0));
      v1 = _mm256_min_ps(vhi, _mm256_max_ps(vlo, v1));
    }
    if constexpr (kMasked) {
      _mm256_maskstore_ps(y, mask0, v0);
      _mm256_maskstore_ps(y + 8, mask1, v1);
    } else {
      _mm256_storeu_ps(y, v0);
      _mm256_storeu_ps(y + 8, v1);
    }
  }
}

}  // namespace

void ConvGemm::AlignedFree::operator()(float* p) const { ::operator delete[](p, kAlign); }

ConvGemm::ConvGemm(const float* w, int64_t m, int64_t k) : m_(m), k_(k) {
  const int64_t panels = (m + kMr - 1) / kMr;
  const size_t floats = std::max<size_t>(size_t(panels * kMr * k), 16);
  data_.reset(static_cast<float*>(::operator new[](floats * sizeof(float), kAlign)));
  float* dst = data_.get();
  for (int64_t r0 = 0; r0 < m; r0 += kMr) {
    const int64_t rows = std::min(kMr, m - r0);
    for (int64_t s = 0; s < k; ++s, dst += kMr) {
      for (int64_t i = 0; i < rows; ++i) dst[i] = w[(r0 + i) * k + s];
      std::fill(dst + rows, dst + kMr, 0.f);
    }
  }
}

size_t ConvGemm::packed_bytes() const {
  return size_t((m_ + kMr - 1) / kMr * kMr * k_) * sizeof(float);
}

bool ConvGemm::pays(int64_t k, int64_t cols) {
  const char* v = std::getenv("MINFER_CPU_CONV_GEMM");
  if (v && std::string(v) == "0") return false;
  return k <= kMaxDepth && cols >= kMinColumns;
}

void ConvGemm::run(const float* x, int64_t ldx, int64_t cols, const float* bias, const float* z,
                   float* y, int64_t ldy, const Activation& act) const {
  const bool clamp = act.enabled && act.is_clamp();
  const bool smooth = act.enabled && !act.is_clamp();
  // Blocks of columns whose K x nc block of X (32 KB at most) stays in cache while every row
  // panel passes over it; within a panel, the block's tiles write each row of Y as one
  // sequential run. (Packing the block first lost on the layers with few output channels.)
  const int64_t nc = std::clamp<int64_t>(8192 / std::max<int64_t>(k_, 1) / kNr * kNr, kNr, 512);
  for (int64_t c0 = 0; c0 < cols; c0 += nc) {
    const int64_t c1 = std::min(cols, c0 + nc);
    for (int64_t r0 = 0; r0 < m_; r0 += kMr) {
      const float* wp = data_.get() + r0 * k_;
      for (int64_t q0 = c0; q0 < c1; q0 += kNr) {
        const int64_t n = std::min(kNr, c1 - q0);
        const TileOut o{bias ? bias + r0 : nullptr, z ? z + r0 * ldy + q0 : nullptr,
                        y + r0 * ldy + q0, ldy, std::min(kMr, m_ - r0), n};
        if (n == kNr)
          tile_6x16<false>(k_, wp, x + q0, ldx, o, clamp, act.lo, act.hi);
        else
          tile_6x16<true>(k_, wp, x + q0, ldx, o, clamp, act.lo, act.hi);
      }
      // A smooth activation over the panel's rows of the block while they are in L1 (one
      // call per row: per tile, the calls cost as much as the exponentials).
      if (smooth)
        for (int64_t i = r0; i < std::min(m_, r0 + kMr); ++i) act.apply(y + i * ldy + c0, c1 - c0);
    }
  }
}

}  // namespace minfer::cpu
