#include "backends/cpu/packed_gemm.h"

#include <Eigen/Core>
#include <algorithm>
#include <new>

namespace minfer::cpu {

namespace {

// The pieces of Eigen's GEMM for float, named as in GeneralMatrixMatrix.h, for the
// column-major product Y^T[n, m] += X^T[n, k] * W^T[k, m].
using Index = Eigen::Index;
using Traits = Eigen::internal::gebp_traits<float, float>;
using LhsMapper = Eigen::internal::const_blas_data_mapper<float, Index, Eigen::ColMajor>;
using RhsMapper = Eigen::internal::const_blas_data_mapper<float, Index, Eigen::ColMajor>;
using ResMapper =
    Eigen::internal::blas_data_mapper<float, Index, Eigen::ColMajor, Eigen::Unaligned, 1>;
using PackLhs =
    Eigen::internal::gemm_pack_lhs<float, Index, LhsMapper, Traits::mr, Traits::LhsProgress,
                                   Traits::LhsPacket4Packing, Eigen::ColMajor>;
using PackRhs =
    Eigen::internal::gemm_pack_rhs<float, Index, RhsMapper, Traits::nr, Eigen::ColMajor>;
using Gebp = Eigen::internal::gebp_kernel<float, float, Index, ResMapper, Traits::mr, Traits::nr,
                                          false, false>;
static_assert(Traits::mr == 3 * Traits::LhsProgress &&
                  Traits::mr <= minfer::cpu::PackedWeights::kMaxPanelWidth,
              "panel_width() assumes the micro-kernel's panels of 3 packets");
static_assert(Traits::nr == 4, "the row ranges of multiply() assume panels of 4 rows of W");

}  // namespace


PackedWeights::PackedWeights(const float* w, int64_t m, int64_t k, int64_t ldw, int64_t max_n)
    : m_(m), k_(k) {
  static const bool initialized = (Eigen::initParallel(), true);  // Eigen's cache sizes
  (void)initialized;
  Index kc = k, mc = std::max<int64_t>(max_n, 1), nc = m;
  Eigen::internal::computeProductBlockingSizes<float, float, 1>(kc, mc, nc, Index(1));
  kc_ = std::max<Index>(kc, 1);
  mc_ = std::max<Index>(mc, 1);
  nc_ = std::max<Index>(nc / 4 * 4, 4);
  data_ = AlignedArray<float>::uninitialized(size_t(std::max<int64_t>(m * k, 1)));
  // W^T [k, m] column-major is W row-major: element (kk, j) at w[j * ldw + kk].
  RhsMapper rhs(w, ldw);
  PackRhs pack;
  for (int64_t k2 = 0; k2 < k; k2 += kc_) {
    const int64_t kb = std::min(kc_, k - k2);
    pack(data_.data() + k2 * m, rhs.getSubMapper(k2, 0), kb, m);
  }
}

size_t PackedWeights::scratch_floats() const { return size_t((kc_ * mc_ + 15) / 16 * 16); }

void PackedWeights::multiply(int64_t r0, int64_t r1, const float* x, int64_t ldx, int64_t n,
                             float* y, int64_t ldy, float* scratch) const {
  if (r0 >= r1 || n <= 0) return;
  LhsMapper lhs(x, ldx);  // X^T [n, k] column-major is X row-major
  ResMapper res(y, ldy);  // Y^T [n, m] column-major is Y row-major
  PackLhs pack;
  Gebp gebp;
  for (int64_t i2 = 0; i2 < n; i2 += mc_) {
    const int64_t mb = std::min(mc_, n - i2);
    for (int64_t k2 = 0; k2 < k_; k2 += kc_) {
      const int64_t kb = std::min(kc_, k_ - k2);
      pack(scratch, lhs.getSubMapper(i2, k2), kb, mb);
      const float* panel = data_.data() + k2 * m_;
      // Rows of W in blocks of nc_ (a multiple of 4): a run of whole 4-row panels, packed
      // back to back, is itself a packed operand.
      for (int64_t j2 = r0; j2 < r1; j2 += nc_) {
        const int64_t nb = std::min(nc_, r1 - j2);
        gebp(res.getSubMapper(i2, j2), scratch, panel + j2 * kb, mb, kb, nb, 1.f);
      }
    }
  }
}

// (Packet types are SIMD vector types, whose attributes template arguments drop: harmless.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"
int64_t PackedWeights::panel_width(int64_t n, int64_t q0) {
  // The peeling of gemm_pack_lhs (ColMajor): panels of 3, 2 and 1 packets, of a half and a
  // quarter packet where those are smaller, then single rows.
  using Packet = Traits::LhsPacket4Packing;
  using Half = Eigen::internal::unpacket_traits<Packet>::half;
  using Quarter = Eigen::internal::unpacket_traits<Half>::half;
  constexpr int64_t p = Eigen::internal::unpacket_traits<Packet>::size;
  constexpr int64_t half = Eigen::internal::unpacket_traits<Half>::size;
  constexpr int64_t quarter = Eigen::internal::unpacket_traits<Quarter>::size;
  static_assert(p == Traits::LhsProgress, "one packet per LhsProgress rows");
  const int64_t r = n - q0;
  if (r >= 3 * p) return 3 * p;
  if (r >= 2 * p) return 2 * p;
  if (r >= p) return p;
  if (half < p && r >= half) return half;
  if (quarter < half && r >= quarter) return quarter;
  return 1;
}
#pragma GCC diagnostic pop

void PackedWeights::multiply_packed(int64_t r0, int64_t r1, const float* xp, int64_t n,
                                   float* y, int64_t ldy) const {
  if (r0 >= r1 || n <= 0) return;
  ResMapper res(y, ldy);
  Gebp gebp;
  const int64_t block_stride = packed_stride(n);
  for (int64_t k2 = 0; k2 < k_; k2 += kc_) {
    const int64_t kb = std::min(kc_, k_ - k2);
    const float* panel = data_.data() + k2 * m_;
    for (int64_t j2 = r0; j2 < r1; j2 += nc_) {
      const int64_t nb = std::min(nc_, r1 - j2);
      gebp(res.getSubMapper(0, j2), xp + k2 * block_stride, panel + j2 * kb, n, kb, nb, 1.f);
    }
  }
}

}  // namespace minfer::cpu
