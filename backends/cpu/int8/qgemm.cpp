#include "backends/cpu/int8/qgemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "minfer/error.h"

namespace minfer::cpu::q8 {

GemmGeometry gemm_geometry(Int8Isa isa) {
  switch (isa) {
    case Int8Isa::avx2:
      return {6, 16, 2};
    case Int8Isa::avx_vnni:
      return {6, 16, 4};
    case Int8Isa::avx512_vnni:
      return {8, 32, 4};
  }
  return {};
}

int32_t a_offset(Int8Isa isa, int32_t x_zero_point) {
  return isa == Int8Isa::avx2 ? x_zero_point : x_zero_point + 128;
}

MicroKernel micro_kernel(Int8Isa isa) {
  switch (isa) {
    case Int8Isa::avx2:
      return micro_kernel_avx2;
    case Int8Isa::avx_vnni:
      return micro_kernel_avx_vnni;
    case Int8Isa::avx512_vnni:
      return micro_kernel_avx512_vnni;
  }
  return nullptr;
}

void pack_a_row(Int8Isa isa, const int8_t* x, int64_t k, int64_t kq, uint8_t* out) {
  if (isa == Int8Isa::avx2)
    pack_a_row_avx2(x, k, kq, out);
  else
    pack_a_row_vnni(x, k, kq, out);
}

PackedWeights::PackedWeights(Int8Isa isa, const int8_t* w, int64_t n, int64_t k) {
  const GemmGeometry geo = gemm_geometry(isa);
  kq_ = k_steps(isa, k);
  blocks_ = (n + geo.nr - 1) / geo.nr;
  block_bytes_ = static_cast<size_t>(kq_) * geo.nr * 4;
  const size_t total = std::max<size_t>(64, (block_bytes_ * blocks_ + 63) / 64 * 64);
  data_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, total)));
  check(data_ != nullptr, ErrorCode::OutOfMemory, "cannot allocate packed int8 weights");
  std::memset(data_.get(), 0, total);
  row_sums_.assign(n, 0);
  for (int64_t j = 0; j < n; ++j) {
    int64_t sum = 0;
    for (int64_t i = 0; i < k; ++i) sum += w[j * k + i];
    row_sums_[j] = static_cast<int32_t>(sum);
  }
  for (int64_t b = 0; b < blocks_; ++b) {
    uint8_t* dst = data_.get() + b * block_bytes_;
    for (int64_t q = 0; q < kq_; ++q)
      for (int jj = 0; jj < geo.nr; ++jj) {
        const int64_t j = b * geo.nr + jj;
        for (int t = 0; t < geo.kstep; ++t) {
          const int64_t i = q * geo.kstep + t;
          const int8_t v = (j < n && i < k) ? w[j * k + i] : 0;
          uint8_t* lane = dst + (q * geo.nr + jj) * 4;
          if (geo.kstep == 2) {
            const int16_t wide = v;
            std::memcpy(lane + 2 * t, &wide, 2);
          } else {
            std::memcpy(lane + t, &v, 1);
          }
        }
      }
  }
}

}  // namespace minfer::cpu::q8
