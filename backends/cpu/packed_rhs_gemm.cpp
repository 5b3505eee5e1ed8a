#include "backends/cpu/packed_rhs_gemm.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "backends/cpu/parallel.h"

namespace minfer::cpu {

namespace {

constexpr int64_t kMr = 6, kNr = 16;  // the register tile
constexpr int64_t kKc = 256;          // depth block: an A panel (6 KB) and a B panel (16 KB) in L1
// Rows per packed A block (264 KB with kKc: in a 512 KB L2). Each block streams all of B once,
// so a ViT's 197 rows must fit in one.
constexpr int64_t kMc = 264;
constexpr size_t kScratchFloats = size_t(kMc * kKc);  // one thread's packed block of A
constexpr size_t kAlign = 32;                          // each packed A block on 32 bytes

// A [rows, kc] (row stride lda) into panels of 6 rows, k-major, zero rows past `rows`.
void pack_a(const float* a, int64_t rows, int64_t kc, int64_t lda, float* dst) {
  for (int64_t r0 = 0; r0 < rows; r0 += kMr) {
    const int64_t n = std::min(kMr, rows - r0);
    for (int64_t k = 0; k < kc; ++k, dst += kMr) {
      for (int64_t i = 0; i < n; ++i) dst[i] = a[(r0 + i) * lda + k];
      for (int64_t i = n; i < kMr; ++i) dst[i] = 0.f;
    }
  }
}

// C tile [rows <= 6, cols <= 16] (= when first, += otherwise) the product of a packed A panel
// and a packed B panel over kc steps. The 12 accumulators are named, not an array indexed by
// a run-time row: that would keep them in memory.
__attribute__((target("avx2,fma"))) void micro_6x16(int64_t kc, const float* ap, const float* bp,
                                                    float* c, int64_t ldc, int64_t rows,
                                                    int64_t cols, bool first) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int64_t k = 0; k < kc; ++k, ap += kMr, bp += kNr) {
    const __m256 b0 = _mm256_load_ps(bp), b1 = _mm256_load_ps(bp + 8);
    __m256 a = _mm256_broadcast_ss(ap);
    c00 = _mm256_fmadd_ps(a, b0, c00), c01 = _mm256_fmadd_ps(a, b1, c01);
    a = _mm256_broadcast_ss(ap + 1);
    c10 = _mm256_fmadd_ps(a, b0, c10), c11 = _mm256_fmadd_ps(a, b1, c11);
    a = _mm256_broadcast_ss(ap + 2);
    c20 = _mm256_fmadd_ps(a, b0, c20), c21 = _mm256_fmadd_ps(a, b1, c21);
    a = _mm256_broadcast_ss(ap + 3);
    c30 = _mm256_fmadd_ps(a, b0, c30), c31 = _mm256_fmadd_ps(a, b1, c31);
    a = _mm256_broadcast_ss(ap + 4);
    c40 = _mm256_fmadd_ps(a, b0, c40), c41 = _mm256_fmadd_ps(a, b1, c41);
    a = _mm256_broadcast_ss(ap + 5);
    c50 = _mm256_fmadd_ps(a, b0, c50), c51 = _mm256_fmadd_ps(a, b1, c51);
  }
  if (rows == kMr && cols == kNr) {  // a whole tile: straight from the registers
    const __m256 r[kMr][2] = {{c00, c01}, {c10, c11}, {c20, c21},
                              {c30, c31}, {c40, c41}, {c50, c51}};
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) {
      float* ci = c + i * ldc;
      __m256 lo = r[i][0], hi = r[i][1];
      if (!first) {
        lo = _mm256_add_ps(lo, _mm256_loadu_ps(ci));
        hi = _mm256_add_ps(hi, _mm256_loadu_ps(ci + 8));
      }
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
    if (first)
      for (int64_t j = 0; j < cols; ++j) ci[j] = tile[i][j];
    else
      for (int64_t j = 0; j < cols; ++j) ci[j] += tile[i][j];
  }
}

}  // namespace

void PackedRhs::AlignedFree::operator()(float* p) const { std::free(p); }

PackedRhs::PackedRhs(const float* b, int64_t k, int64_t n, int64_t ldb, bool transposed)
    : k_(k), n_(n), panels_((n + kNr - 1) / kNr) {
  const size_t floats = size_t(panels_ * k * kNr);
  data_.reset(static_cast<float*>(std::aligned_alloc(64, std::max<size_t>(floats, 16) * 4)));
  for (int64_t p = 0; p < panels_; ++p) {
    const int64_t j0 = p * kNr, cols = std::min(kNr, n - j0);
    float* dst = data_.get() + p * k * kNr;
    for (int64_t kk = 0; kk < k; ++kk, dst += kNr) {
      for (int64_t j = 0; j < cols; ++j)
        dst[j] = transposed ? b[(j0 + j) * ldb + kk] : b[kk * ldb + j0 + j];
      std::fill(dst + cols, dst + kNr, 0.f);
    }
  }
}

size_t PackedRhs::workspace_bytes(int threads) {
  return size_t(std::max(threads, 1)) * kScratchFloats * sizeof(float) + kAlign;
}

void PackedRhs::multiply(const float* a, int64_t m, int64_t lda, float* c, int64_t ldc, int threads,
                         void* workspace) const {
  const auto at = reinterpret_cast<std::uintptr_t>(workspace);
  float* scratch = reinterpret_cast<float*>((at + kAlign - 1) / kAlign * kAlign);
  if (m <= 0 || n_ <= 0) return;
  if (k_ == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n_, 0.f);
    return;
  }
  // Each thread takes a range of B's panels (all rows of C there) and packs A itself: A is
  // small next to B for these products, and the threads never wait for one another.
  const int parts =
      int(std::min<int64_t>(panels_, threads_for(2 * m * n_ * k_, threads, int64_t{1} << 20)));
  parallel_region(parts, [&](int part, int nparts) {
    float* ap = scratch + size_t(part) * kScratchFloats;
    const int64_t p0 = split_begin(panels_, nparts, part),
                  p1 = split_begin(panels_, nparts, part + 1);
    for (int64_t m0 = 0; m0 < m; m0 += kMc) {
      const int64_t mc = std::min(kMc, m - m0);
      for (int64_t k0 = 0; k0 < k_; k0 += kKc) {
        const int64_t kc = std::min(kKc, k_ - k0);
        pack_a(a + m0 * lda + k0, mc, kc, lda, ap);
        for (int64_t p = p0; p < p1; ++p) {
          const float* bp = data_.get() + (p * k_ + k0) * kNr;
          const int64_t j0 = p * kNr, cols = std::min(kNr, n_ - j0);
          for (int64_t r0 = 0; r0 < mc; r0 += kMr)
            micro_6x16(kc, ap + r0 * kc, bp, c + (m0 + r0) * ldc + j0, ldc, std::min(kMr, mc - r0),
                       cols, k0 == 0);
        }
      }
    }
  });
}

std::shared_ptr<const PackedRhs> share_packed_rhs(PrepareContext& ctx, const std::string& key,
                                                  const Tensor& b, int64_t k, int64_t n,
                                                  bool transposed) {
  const size_t bytes = size_t(k) * size_t((n + kNr - 1) / kNr * kNr) * sizeof(float);
  ctx.workspace_bytes = PackedRhs::workspace_bytes(ctx.threads);
  return ctx.share<PackedRhs>(key, bytes, [&] {
    return std::make_shared<PackedRhs>(b.data<float>(), k, n, transposed ? k : n, transposed);
  });
}

}  // namespace minfer::cpu
