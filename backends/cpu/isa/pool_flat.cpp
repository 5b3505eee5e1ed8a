// The flat path of the pools (backends/cpu/pool.cpp: stride-1 pools of the input's size on
// small planes, a block of planes as one flat array), one source for every ISA level (compiled
// once per level by cmake/MinferIsa.cmake): a vector of positions at a time, all the window's
// taps combined in a register, each read through the mask of the positions where it lies
// inside the plane (a masked load never faults), where the scalar loop passed over y once per
// tap. The same operations in the same order as that loop, so the results are its bit for
// bit: from -inf, std::max(acc, x) (vmaxps with x first: a NaN in x is passed over); from 0, the
// taps added in order, +0 for those outside.
#include "backends/cpu/isa/isa_kernels.h"
#include "backends/cpu/isa/simd.h"

namespace minfer::cpu::MINFER_ISA_NS {

namespace {

// kV vectors of positions side by side: kV chains of max or add (one chain waited on each
// vmaxps' latency, tap after tap).
constexpr int kV = 4;

template <bool kMax>
void pool(const f32::PoolFlat& a) {
  const VF32 start = splat_f32(kMax ? -__builtin_inff() : 0.f);
  for (int64_t f0 = 0; f0 < a.count; f0 += kV * kF32Lanes) {
    MaskF32 lanes[kV];
    VF32 acc[kV];
#pragma GCC unroll 4
    for (int v = 0; v < kV; ++v) {
      lanes[v] = first_lanes_f32(int(max64(0, min64(kF32Lanes, a.count - f0 - v * kF32Lanes))));
      acc[v] = start;
    }
    for (int i = 0; i < a.kh; ++i) {
      const int32_t* rows = a.row_inside + i * a.block + f0;
      const float* x = a.x + f0 + (i - a.pad_t) * a.w - a.pad_l;
#if MINFER_ISA_WIDE
      __m512i row[kV];
#pragma GCC unroll 4
      for (int v = 0; v < kV; ++v)
        row[v] = _mm512_maskz_loadu_epi32(lanes[v], rows + v * kF32Lanes);
#else
      __m256i row[kV];
#pragma GCC unroll 4
      for (int v = 0; v < kV; ++v) row[v] = _mm256_maskload_epi32(rows + v * kF32Lanes, lanes[v]);
#endif
      for (int j = 0; j < a.kw; ++j) {
        const int32_t* cols = a.col_inside + j * a.block + f0;
#pragma GCC unroll 4
        for (int v = 0; v < kV; ++v) {
          const float* xv = x + j + v * kF32Lanes;
#if MINFER_ISA_WIDE
          const MaskF32 inside = _mm512_test_epi32_mask(
              row[v], _mm512_maskz_loadu_epi32(lanes[v], cols + v * kF32Lanes));
          const VF32 t = load_f32(xv, inside);
          acc[v] = kMax ? _mm512_mask_max_ps(acc[v], inside, t, acc[v]) : add_f32(acc[v], t);
#else
          const MaskF32 inside =
              _mm256_and_si256(row[v], _mm256_maskload_epi32(cols + v * kF32Lanes, lanes[v]));
          const VF32 t = load_f32(xv, inside);  // (0 where the tap is outside)
          acc[v] = kMax ? _mm256_blendv_ps(acc[v], max_f32(t, acc[v]), _mm256_castsi256_ps(inside))
                        : add_f32(acc[v], t);
#endif
        }
      }
    }
#pragma GCC unroll 4
    for (int v = 0; v < kV; ++v) store_f32(a.y + f0 + v * kF32Lanes, acc[v], lanes[v]);
  }
}

void flat(const f32::PoolFlat& a) { a.max ? pool<true>(a) : pool<false>(a); }

}  // namespace

extern const f32::PoolKernels kPoolKernels;
const f32::PoolKernels kPoolKernels{static_cast<Isa>(MINFER_ISA_LEVEL), flat};

}  // namespace minfer::cpu::MINFER_ISA_NS
