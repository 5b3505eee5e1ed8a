#include "backends/cpu/int8/qgemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "minfer/error.h"

namespace minfer::cpu::q8 {

namespace {

const LevelKernels& level(Isa isa) {
  const LevelKernels* level = level_kernels(isa);
  check(level != nullptr, ErrorCode::Unsupported,
        std::string("no int8 CPU kernel of this build runs at ISA level ") + isa_name(isa));
  return *level;
}

}  // namespace

const MicroKernels& micro_kernels(Isa isa) { return *level(isa).int8; }
const RequantKernels& requant_kernels(Isa isa) { return *level(isa).int8_requant; }
const DepthwiseKernels& depthwise_kernels(Isa isa) { return *level(isa).int8_depthwise; }
const DepthwiseGroupKernels& depthwise_group_kernels(Isa isa) {
  return *level(isa).int8_depthwise_groups;
}
const QuantizeKernels& quantize_kernels(Isa isa) { return *level(isa).int8_quantize; }

PackedWeights::PackedWeights(const MicroKernels& geo, const int8_t* w, int64_t n, int64_t k) {
  kq_ = k_steps(geo, k);
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
