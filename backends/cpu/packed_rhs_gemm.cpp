#include "backends/cpu/packed_rhs_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "backends/cpu/parallel.h"

namespace minfer::cpu {

namespace {

constexpr int64_t kMr = 6, kNr = 16;  // the register tile
constexpr int64_t kKc = 256;          // depth block: a B panel of 16 KB, 6 rows of A 6 KB (L1)
// Panels per column slice: the slice's rows of C (197 x 128 floats for ViT, 100 KB) stay in L2
// while every depth block adds to them, and its B block (128 KB) is read from L2 by each row
// tile. Looping depth blocks over all of N instead streamed C through L3 per block: 12-17%
// slower on ViT's [197,768] x [768,3072] and x [768,2304] (Zen 3, 1 and 2 threads).
constexpr int64_t kSlicePanels = 8;

// C tile [rows <= 6, cols <= 16] (= when first, += otherwise) the product of A's rows, read in
// place (row r at a + r * lda; the rows past `rows` repeat row 0, computed and not stored, so
// A needs no packing), and a packed B panel, over kc steps. The 12 accumulators are named,
// not an array indexed by a run-time row: that would keep them in memory.
__attribute__((target("avx2,fma"))) void micro_6x16(int64_t kc, const float* a, int64_t lda,
                                                    const float* bp, float* c, int64_t ldc,
                                                    int64_t rows, int64_t cols, bool first,
                                                    const float* bias) {
  const float* a0 = a;
  const float* a1 = rows > 1 ? a + lda : a;
  const float* a2 = rows > 2 ? a + 2 * lda : a;
  const float* a3 = rows > 3 ? a + 3 * lda : a;
  const float* a4 = rows > 4 ? a + 4 * lda : a;
  const float* a5 = rows > 5 ? a + 5 * lda : a;
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
#pragma GCC unroll 4  // 3-12 % faster on a Zen 3 (fewer loop-control ops between FMAs)
  for (int64_t k = 0; k < kc; ++k, bp += kNr) {
    const __m256 b0 = _mm256_load_ps(bp), b1 = _mm256_load_ps(bp + 8);
    __m256 v = _mm256_broadcast_ss(a0 + k);
    c00 = _mm256_fmadd_ps(v, b0, c00), c01 = _mm256_fmadd_ps(v, b1, c01);
    v = _mm256_broadcast_ss(a1 + k);
    c10 = _mm256_fmadd_ps(v, b0, c10), c11 = _mm256_fmadd_ps(v, b1, c11);
    v = _mm256_broadcast_ss(a2 + k);
    c20 = _mm256_fmadd_ps(v, b0, c20), c21 = _mm256_fmadd_ps(v, b1, c21);
    v = _mm256_broadcast_ss(a3 + k);
    c30 = _mm256_fmadd_ps(v, b0, c30), c31 = _mm256_fmadd_ps(v, b1, c31);
    v = _mm256_broadcast_ss(a4 + k);
    c40 = _mm256_fmadd_ps(v, b0, c40), c41 = _mm256_fmadd_ps(v, b1, c41);
    v = _mm256_broadcast_ss(a5 + k);
    c50 = _mm256_fmadd_ps(v, b0, c50), c51 = _mm256_fmadd_ps(v, b1, c51);
  }
  if (rows == kMr && cols == kNr) {  // a whole tile: straight from the registers
    const __m256 r[kMr][2] = {{c00, c01}, {c10, c11}, {c20, c21},
                              {c30, c31}, {c40, c41}, {c50, c51}};
    const __m256 b0 = bias ? _mm256_loadu_ps(bias) : _mm256_setzero_ps();
    const __m256 b1 = bias ? _mm256_loadu_ps(bias + 8) : _mm256_setzero_ps();
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) {
      float* ci = c + i * ldc;
      __m256 lo = r[i][0], hi = r[i][1];
      if (!first) {
        lo = _mm256_add_ps(lo, _mm256_loadu_ps(ci));
        hi = _mm256_add_ps(hi, _mm256_loadu_ps(ci + 8));
      }
      if (bias) lo = _mm256_add_ps(lo, b0), hi = _mm256_add_ps(hi, b1);
      _mm256_storeu_ps(ci, lo);
      _mm256_storeu_ps(ci + 8, hi);
    }
    return;
  }
  alignas(32) float tile[kMr][kNr];
  _mm256_store_ps(tile[0], c00), _mm256_store_ps(tile[0] + 8, c01);
  _mm256_store_ps(tile[1], c10), _mm256_store_ps(tile[1] + 8, c11);
  _mm256_store_ps(tile[2], c20), _mm256_store_ps(tile[2] + 8, c21);
  _mm256_store_ps(tile[3], c30), _mm256_store_ps(tile[3] + 8, c31);
  _mm256_store_ps(tile[4], c40), _mm256_store_ps(tile[4] + 8, c41);
  _mm256_store_ps(tile[5], c50), _mm256_store_ps(tile[5] + 8, c51);
  for (int64_t i = 0; i < rows; ++i) {
    float* ci = c + i * ldc;
    for (int64_t j = 0; j < cols; ++j) {
      const float v = first ? tile[i][j] : ci[j] + tile[i][j];
      ci[j] = bias ? v + bias[j] : v;
    }
  }
}

// Where panel p's rows [k0, k0 + kKc) start: by depth block, then panel, so that the panels a
// slice reads for one depth block lie together (one stream for the prefetcher, no two panels
// 48 KB apart on the same L1 sets).
int64_t panel_offset(int64_t p, int64_t k0, int64_t k, int64_t n) {
  const int64_t panels = (n + kNr - 1) / kNr;
  return (k0 * panels + p * std::min(kKc, k - k0)) * kNr;
}

// B [k, n] (row stride ldb; or B^T [n, k] when transposed) into panels of 16 columns, zero
// past n, each depth block of a panel kc rows of 16 floats at panel_offset.
void pack_panels(const float* b, int64_t k, int64_t n, int64_t ldb, bool transposed, float* out) {
  for (int64_t p = 0; p * kNr < n; ++p) {
    const int64_t j0 = p * kNr, cols = std::min(kNr, n - j0);
    for (int64_t k0 = 0; k0 < k; k0 += kKc) {
      float* dst = out + panel_offset(p, k0, k, n);
      for (int64_t kk = k0; kk < std::min(k, k0 + kKc); ++kk, dst += kNr) {
        for (int64_t j = 0; j < cols; ++j)
          dst[j] = transposed ? b[(j0 + j) * ldb + kk] : b[kk * ldb + j0 + j];
        std::fill(dst + cols, dst + kNr, 0.f);
      }
    }
  }
}

// C's columns of panels [p0, p1) = A * those panels of packed B, on the calling thread. Depth
// blocks inside, so that these columns of C stay in L2 while every block adds to them.
void multiply_panels(const float* a, int64_t m, int64_t lda, const float* bp, int64_t k,
                     int64_t n, int64_t p0, int64_t p1, float* c, int64_t ldc,
                     const float* bias, const Activation* act) {
  const int64_t j0 = p0 * kNr, j1 = std::min(n, p1 * kNr);
  const bool activate = act && act->enabled;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = j0; j < j1; ++j) c[i * ldc + j] = bias ? bias[j] : 0.f;
      if (activate) act->apply(c + i * ldc + j0, j1 - j0);
    }
    return;
  }
  for (int64_t k0 = 0; k0 < k; k0 += kKc) {
    const int64_t kc = std::min(kKc, k - k0);
    const bool last = k0 + kc == k;
    for (int64_t r0 = 0; r0 < m; r0 += kMr) {
      for (int64_t p = p0; p < p1; ++p) {
        const int64_t pj = p * kNr;
        micro_6x16(kc, a + r0 * lda + k0, lda, bp + panel_offset(p, k0, k, n),
                   c + r0 * ldc + pj, ldc, std::min(kMr, m - r0), std::min(kNr, n - pj),
                   k0 == 0, bias && last ? bias + pj : nullptr);  // bias: last block
      }
      if (activate && last)  // these rows of the slice are final and in L1
        for (int64_t i = r0; i < std::min(m, r0 + kMr); ++i) act->apply(c + i * ldc + j0, j1 - j0);
    }
  }
}

constexpr std::align_val_t kAlign{64};

}  // namespace

void PackedRhs::AlignedFree::operator()(float* p) const { ::operator delete[](p, kAlign); }

PackedRhs::PackedRhs(const float* b, int64_t k, int64_t n, int64_t ldb, bool transposed)
    : k_(k), n_(n), panels_((n + kNr - 1) / kNr) {
  data_.reset(static_cast<float*>(
      ::operator new[](std::max<size_t>(packed_floats(k, n), 16) * sizeof(float), kAlign)));
  pack_panels(b, k, n, ldb, transposed, data_.get());
}

size_t PackedRhs::packed_floats(int64_t k, int64_t n) {
  return size_t(k) * size_t((n + kNr - 1) / kNr * kNr);
}

void PackedRhs::pack(const float* b, int64_t k, int64_t n, int64_t ldb, float* out) {
  pack_panels(b, k, n, ldb, false, out);
}

void PackedRhs::multiply_packed(const float* a, int64_t m, int64_t lda, const float* bp,
                                int64_t k, int64_t n, float* c, int64_t ldc) {
  const int64_t panels = (n + kNr - 1) / kNr;
  for (int64_t s0 = 0; s0 < panels; s0 += kSlicePanels)
    multiply_panels(a, m, lda, bp, k, n, s0, std::min(panels, s0 + kSlicePanels), c, ldc,
                    nullptr, nullptr);
}

void PackedRhs::multiply(const float* a, int64_t m, int64_t lda, float* c, int64_t ldc,
                         int threads, const float* bias, const Activation* act) const {
  if (m <= 0 || n_ <= 0) return;
  // Work units are slices of B's panels (all rows of C there), claimed by the threads as they
  // come: a thread the OS starts late takes fewer. At least 2 slices per thread, where N allows.
  const int used = threads_for(2 * m * n_ * k_, threads, int64_t{1} << 20);
  const int64_t width = std::clamp<int64_t>(panels_ / (2 * used), 1, kSlicePanels);
  const int64_t slices = (panels_ + width - 1) / width;
  parallel_for(used, slices, [&](int64_t slice) {
    const int64_t s0 = slice * width;
    multiply_panels(a, m, lda, data_.get(), k_, n_, s0, std::min(panels_, s0 + width), c, ldc,
                    bias, act);
  });
}

std::shared_ptr<const PackedRhs> share_packed_rhs(PrepareContext& ctx, const std::string& key,
                                                  const Tensor& b, int64_t k, int64_t n,
                                                  bool transposed) {
  const size_t bytes = PackedRhs::packed_floats(k, n) * sizeof(float);
  return ctx.share<PackedRhs>(key, bytes, [&] {
    return std::make_shared<PackedRhs>(b.data<float>(), k, n, transposed ? k : n, transposed);
  });
}

}  // namespace minfer::cpu
