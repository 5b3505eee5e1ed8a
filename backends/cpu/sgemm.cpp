#include "backends/cpu/sgemm.h"

#include <Eigen/Core>
#include <algorithm>

#include "backends/cpu/parallel.h"

namespace minfer::cpu {

namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMat, 0, Eigen::OuterStride<>>;
using Map = Eigen::Map<RowMat, 0, Eigen::OuterStride<>>;

// Eigen's public product API decides by itself whether to use OpenMP threads (from
// omp_get_max_threads), so for a single-threaded product on a worker thread we call its
// GEMM routine directly with no parallel info. The row-major result specialization runs the
// transposed column-major product, as Eigen's own product evaluator does.
template <int AOrder, int BOrder>
void eigen_gemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                const float* b, int64_t ldb, float* c, int64_t ldc) {
  using Index = Eigen::Index;
  using Gemm = Eigen::internal::general_matrix_matrix_product<Index, float, AOrder, false, float,
                                                              BOrder, false, Eigen::RowMajor, 1>;
  Eigen::internal::gemm_blocking_space<Eigen::RowMajor, float, float, Eigen::Dynamic,
                                       Eigen::Dynamic, Eigen::Dynamic, 1, false>
      blocking(m, n, k, 1, true);
  Gemm::run(m, n, k, a, lda, b, ldb, c, 1, ldc, alpha, blocking, nullptr);
}

// Matrix-vector and tiny products: Eigen's GEMV and coefficient-based paths never start
// threads, so the public API is fine (and faster than packing for GEMM).
void eigen_small(int64_t m, int64_t n, int64_t k, float alpha, MatrixRef a, MatrixRef b, float* c,
                 int64_t ldc) {
  Map cm(c, m, n, Eigen::OuterStride<>(ldc));
  ConstMap am(a.data, a.transposed ? k : m, a.transposed ? m : k, Eigen::OuterStride<>(a.ld));
  ConstMap bm(b.data, b.transposed ? n : k, b.transposed ? k : n, Eigen::OuterStride<>(b.ld));
  if (!a.transposed && !b.transposed) cm.noalias() += alpha * am * bm;
  if (!a.transposed && b.transposed) cm.noalias() += alpha * am * bm.transpose();
  if (a.transposed && !b.transposed) cm.noalias() += alpha * am.transpose() * bm;
  if (a.transposed && b.transposed) cm.noalias() += alpha * am.transpose() * bm.transpose();
}

}  // namespace

void sgemm_acc(int64_t m, int64_t n, int64_t k, float alpha, MatrixRef a, MatrixRef b, float* c,
               int64_t ldc) {
  if (m <= 0 || n <= 0 || k <= 0) return;
  // Eigen reads its cache sizes into statics on first use; initParallel does that once.
  static const bool initialized = (Eigen::initParallel(), true);
  (void)initialized;
  if (m == 1 || n == 1 || m + n + k < 20) {
    eigen_small(m, n, k, alpha, a, b, c, ldc);
    return;
  }
  // A row-major matrix read transposed is a column-major one with the same stride.
  constexpr int R = Eigen::RowMajor, C = Eigen::ColMajor;
  if (!a.transposed && !b.transposed)
    eigen_gemm<R, R>(m, n, k, alpha, a.data, a.ld, b.data, b.ld, c, ldc);
  if (!a.transposed && b.transposed)
    eigen_gemm<R, C>(m, n, k, alpha, a.data, a.ld, b.data, b.ld, c, ldc);
  if (a.transposed && !b.transposed)
    eigen_gemm<C, R>(m, n, k, alpha, a.data, a.ld, b.data, b.ld, c, ldc);
  if (a.transposed && b.transposed)
    eigen_gemm<C, C>(m, n, k, alpha, a.data, a.ld, b.data, b.ld, c, ldc);
}

void sgemm_acc_parallel(int threads, int64_t m, int64_t n, int64_t k, float alpha, MatrixRef a,
                        MatrixRef b, float* c, int64_t ldc) {
  // Below ~1 MFLOP per thread, waking the team costs more than it saves. A product with one
  // row or column (a classifier at batch 1) streams its matrix from memory at a few flops per
  // 4 bytes: a quarter of that per thread pays (ResNet-18's 512 -> 1000 at 2 threads: 0.063
  // -> 0.045 ms, Zen 5).
  const double flops = 2.0 * double(m) * double(n) * double(k);
  const double per_thread = m == 1 || n == 1 ? 0.25e6 : 1e6;
  int t = static_cast<int>(std::clamp<double>(flops / per_thread, 1, std::max(threads, 1)));
  // Each thread packs the operand it shares with the others, so split the larger side of C.
  const bool split_rows = m >= n;
  const int64_t split = split_rows ? m : n;
  const int64_t align = split_rows ? 4 : 8;  // Eigen's register block sizes
  t = static_cast<int>(std::min<int64_t>(t, std::max<int64_t>(1, split / align)));
  if (t <= 1) {
    sgemm_acc(m, n, k, alpha, a, b, c, ldc);
    return;
  }
  parallel_for(t, t, [&](int64_t i) {
    int64_t blocks = (split + align - 1) / align;
    int64_t lo = std::min(split, blocks * i / t * align);
    int64_t hi = std::min(split, blocks * (i + 1) / t * align);
    if (lo >= hi) return;
    if (split_rows) {
      MatrixRef ai{a.data + (a.transposed ? lo : lo * a.ld), a.ld, a.transposed};
      sgemm_acc(hi - lo, n, k, alpha, ai, b, c + lo * ldc, ldc);
    } else {
      MatrixRef bi{b.data + (b.transposed ? lo * b.ld : lo), b.ld, b.transposed};
      sgemm_acc(m, hi - lo, k, alpha, a, bi, c + lo, ldc);
    }
  });
}

}  // namespace minfer::cpu
