#include "backends/cpu/conv_gemm.h"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <string>

#include "minfer/error.h"

namespace minfer::cpu {

namespace {

constexpr int64_t kMr = 6;  // the rows of a tile (f32::MicroKernels::mr on every level)
constexpr std::align_val_t kAlign{64};

}  // namespace

void ConvGemm::AlignedFree::operator()(float* p) const { ::operator delete[](p, kAlign); }

ConvGemm::ConvGemm(const float* w, int64_t m, int64_t k, const f32::MicroKernels& tiles)
    : m_(m), k_(k), tiles_(&tiles) {
  check(tiles.mr == kMr, ErrorCode::Internal, "ConvGemm packs panels of 6 rows");
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
  const int64_t nr = tiles_->nr;
  const int64_t nc = std::clamp<int64_t>(8192 / std::max<int64_t>(k_, 1) / nr * nr, nr, 512);
  for (int64_t c0 = 0; c0 < cols; c0 += nc) {
    const int64_t c1 = std::min(cols, c0 + nc);
    for (int64_t r0 = 0; r0 < m_; r0 += kMr) {
      const float* wp = data_.get() + r0 * k_;
      for (int64_t q0 = c0; q0 < c1; q0 += nr) {
        const f32::ConvTileOut o{bias ? bias + r0 : nullptr, z ? z + r0 * ldy + q0 : nullptr,
                                 y + r0 * ldy + q0,          ldy,
                                 std::min(kMr, m_ - r0),     std::min(nr, c1 - q0)};
        tiles_->conv_tile(k_, wp, x + q0, ldx, o, clamp, act.lo, act.hi);
      }
      // A smooth activation over the panel's rows of the block while they are in L1 (one
      // call per row: per tile, the calls cost as much as the exponentials).
      if (smooth)
        for (int64_t i = r0; i < std::min(m_, r0 + kMr); ++i) act.apply(y + i * ldy + c0, c1 - c0);
    }
  }
}

}  // namespace minfer::cpu
