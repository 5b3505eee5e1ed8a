// The padded input copies of the conv paths that read taps without bounds checks (StridedConv,
// ConvKernel's packed im2col), one source for every ISA level (compiled once per level by
// cmake/MinferIsa.cmake): 8 columns at a time, read with masked loads where they cross the
// plane's edges, so that a row costs a few vector moves, not a memcpy and two memsets (a 14x14
// plane's rows are 14 floats: StridedConv's copy took a quarter of a grouped 3x3 conv's time
// that way). Interleaved copies put 2 or 4 planes' values side by side, position by position.
#include "backends/cpu/isa/isa_kernels.h"
#include "backends/cpu/isa/simd.h"

namespace minfer::cpu::MINFER_ISA_NS {

namespace {

// The lanes l in [lo, hi) of the 8 floats at p (only those are read), zeros elsewhere.
static inline Vec8 load_lanes(const float* p, int64_t lo, int64_t hi) {
  const int l0 = int(max64(0, min64(lo, 8))), l1 = int(max64(l0, min64(hi, 8)));
#if MINFER_ISA_WIDE
  const auto mask = static_cast<__mmask8>(((1u << l1) - 1) & ~((1u << l0) - 1));
  return (Vec8)_mm256_maskz_loadu_ps(mask, p);
#else
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i mask = _mm256_andnot_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32(l0), lane),
                                           _mm256_cmpgt_epi32(_mm256_set1_epi32(l1), lane));
  return (Vec8)_mm256_maskload_ps(p, mask);
#endif
}

// The first n floats of v to p (all 8 from n = 8 on, none up to 0).
static inline void store_first(float* p, Vec8 v, int64_t n) {
  if (n <= 0) return;
  if (n >= 8) {
    _mm256_storeu_ps(p, (__m256)v);
    return;
  }
#if MINFER_ISA_WIDE
  _mm256_mask_storeu_ps(p, static_cast<__mmask8>((1u << n) - 1), (__m256)v);
#else
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  _mm256_maskstore_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n)), lane), (__m256)v);
#endif
}

// in[i] (8 positions of plane i) as 8 positions of I values each, to out[0 .. I): position u's
// values at out floats I * u ...
template <int I>
static inline void interleave(const Vec8 (&in)[I], Vec8 (&out)[I]) {
  if constexpr (I == 2) {
    out[0] = __builtin_shufflevector(in[0], in[1], 0, 8, 1, 9, 2, 10, 3, 11);
    out[1] = __builtin_shufflevector(in[0], in[1], 4, 12, 5, 13, 6, 14, 7, 15);
  } else {
    const Vec8 ab0 = __builtin_shufflevector(in[0], in[1], 0, 8, 1, 9, 2, 10, 3, 11);
    const Vec8 ab1 = __builtin_shufflevector(in[0], in[1], 4, 12, 5, 13, 6, 14, 7, 15);
    const Vec8 cd0 = __builtin_shufflevector(in[2], in[3], 0, 8, 1, 9, 2, 10, 3, 11);
    const Vec8 cd1 = __builtin_shufflevector(in[2], in[3], 4, 12, 5, 13, 6, 14, 7, 15);
    out[0] = __builtin_shufflevector(ab0, cd0, 0, 1, 8, 9, 2, 3, 10, 11);
    out[1] = __builtin_shufflevector(ab0, cd0, 4, 5, 12, 13, 6, 7, 14, 15);
    out[2] = __builtin_shufflevector(ab1, cd1, 0, 1, 8, 9, 2, 3, 10, 11);
    out[3] = __builtin_shufflevector(ab1, cd1, 4, 5, 12, 13, 6, 7, 14, 15);
  }
}

// The lanes l in [lo, hi) of a full vector.
static inline MaskF32 lanes_between(int64_t lo, int64_t hi) {
  const int l0 = int(max64(0, min64(lo, kF32Lanes))), l1 = int(max64(l0, min64(hi, kF32Lanes)));
#if MINFER_ISA_WIDE
  return static_cast<MaskF32>(first_lanes_f32(l1) & ~first_lanes_f32(l0));
#else
  return _mm256_andnot_si256(first_lanes_f32(l0), first_lanes_f32(l1));
#endif
}

// One plane: a full vector of columns at a time.
void copy_plane(const f32::PaddedPlanes& a) {
  for (int64_t v = 0; v < a.rows; ++v) {
    float* out = a.dst + v * a.width;
    const int64_t iy = a.iy0 + v;
    if (iy < 0 || iy >= a.h) {
      fill(out, a.width, 0.f);
      continue;
    }
    for (int64_t u0 = 0; u0 < a.width; u0 += kF32Lanes) {
      const int64_t first = u0 - a.pad_l;  // the input column of padded column u0
      const VF32 in = load_f32(a.src[0] + iy * a.w + first, lanes_between(-first, a.w - first));
      if (a.width - u0 >= kF32Lanes)
        store_f32(out + u0, in);
      else
        store_f32(out + u0, in, first_lanes_f32(int(a.width - u0)));
    }
  }
}

// Interleaved planes: 8 columns of each at a time.
template <int I>
void copy(const f32::PaddedPlanes& a) {
  const int64_t row_floats = a.width * I;
  for (int64_t v = 0; v < a.rows; ++v) {
    float* out = a.dst + v * row_floats;
    const int64_t iy = a.iy0 + v;
    if (iy < 0 || iy >= a.h) {
      fill(out, row_floats, 0.f);
      continue;
    }
    for (int64_t u0 = 0; u0 < a.width; u0 += 8) {
      // Padded columns u0 .. u0 + 7 hold input columns first .. first + 7, those in [0, w).
      const int64_t first = u0 - a.pad_l;
      Vec8 in[I], out8[I];
#pragma GCC unroll 4
      for (int i = 0; i < I; ++i)
        in[i] = a.src[i] ? load_lanes(a.src[i] + iy * a.w + first, -first, a.w - first) : Vec8{};
      interleave<I>(in, out8);
      const int64_t n = min64(8, a.width - u0) * I;  // floats of this step
#pragma GCC unroll 4
      for (int i = 0; i < I; ++i) store_first(out + u0 * I + 8 * i, out8[i], n - 8 * i);
    }
  }
}

void copy_planes(const f32::PaddedPlanes& a) {
  if (a.interleave == 4) return copy<4>(a);
  if (a.interleave == 2) return copy<2>(a);
  copy_plane(a);
}

}  // namespace

extern const f32::PaddedPlaneKernels kPaddedPlaneKernels;
const f32::PaddedPlaneKernels kPaddedPlaneKernels{static_cast<Isa>(MINFER_ISA_LEVEL), copy_planes};

}  // namespace minfer::cpu::MINFER_ISA_NS
