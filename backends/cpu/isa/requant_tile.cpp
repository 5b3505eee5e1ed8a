// The int8 kernels' requantizing output stage, one source for every ISA level (the arithmetic:
// backends/cpu/int8/requant.h; the reference: int8::stage_int8). Eight channels per vector on
// the 256-bit levels, sixteen on the 512-bit ones, where masked loads and stores also take a
// layer's last channels and one vpmovsdb turns a vector into bytes.
#include <cstring>

#include "backends/cpu/isa/isa_kernels.h"
#include "backends/cpu/isa/simd.h"

namespace minfer::cpu::MINFER_ISA_NS {

namespace {

#if MINFER_ISA_WIDE
// All-lanes masked forms where GCC 12's plain ones warn (maybe-uninitialized, as in simd.h).
constexpr __mmask16 kAll = 0xffff;
constexpr __mmask8 kAll64 = 0xff;
static inline VI32 add(VI32 a, VI32 b) { return _mm512_add_epi32(a, b); }
static inline VI32 mullo(VI32 a, VI32 b) { return _mm512_mullo_epi32(a, b); }
static inline VI32 max(VI32 a, VI32 b) { return _mm512_maskz_max_epi32(kAll, a, b); }
static inline VI32 min(VI32 a, VI32 b) { return _mm512_maskz_min_epi32(kAll, a, b); }
static inline VI32 shift_left(VI32 v, VI32 n) { return _mm512_maskz_sllv_epi32(kAll, v, n); }
static inline VI32 shift_right(VI32 v, VI32 n) { return _mm512_maskz_srav_epi32(kAll, v, n); }
static inline VI32 shift_right(VI32 v, __m128i n) { return _mm512_maskz_sra_epi32(kAll, v, n); }
static inline VI32 odd_lanes(VI32 m) { return _mm512_maskz_srli_epi64(kAll64, m, 32); }
// floor(a * m / 2^32) per lane: the high halves of the even and odd lanes' 64-bit products.
// The odd products' high halves are in place; a masked in-lane shuffle moves the even ones'
// down into the even lanes.
static inline VI32 mul_high(VI32 a, VI32 m, VI32 m_odd) {
  const VI32 even = _mm512_maskz_mul_epi32(kAll64, a, m);
  const VI32 odd = _mm512_maskz_mul_epi32(kAll64, odd_lanes(a), m_odd);
  return _mm512_mask_shuffle_epi32(odd, 0x5555, even, _MM_PERM_DDBB);
}

// The first n lanes (n <= 16) of int32 or int8 values, and their store as bytes.
using Lanes = __mmask16;
static inline Lanes first_lanes(int64_t n) {
  return n >= kI32Lanes ? Lanes(0xffff) : Lanes((1u << n) - 1);
}
static inline VI32 load_n(const int32_t* p, Lanes n) { return _mm512_maskz_loadu_epi32(n, p); }
static inline VI32 load_bytes(const int8_t* p, Lanes n) {
  return _mm512_maskz_cvtepi8_epi32(kAll, _mm_maskz_loadu_epi8(n, p));
}
// Saturating to [-128, 127]: the output's clamp where its bounds are int8's own.
static inline void store_bytes(int8_t* p, VI32 v, Lanes n) {
  const __m128i b = _mm512_maskz_cvtsepi32_epi8(kAll, v);
  if (n == Lanes(0xffff))
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), b);
  else
    _mm_mask_storeu_epi8(p, n, b);
}
#else
static inline VI32 add(VI32 a, VI32 b) { return _mm256_add_epi32(a, b); }
static inline VI32 mullo(VI32 a, VI32 b) { return _mm256_mullo_epi32(a, b); }
static inline VI32 max(VI32 a, VI32 b) { return _mm256_max_epi32(a, b); }
static inline VI32 min(VI32 a, VI32 b) { return _mm256_min_epi32(a, b); }
static inline VI32 shift_left(VI32 v, VI32 n) { return _mm256_sllv_epi32(v, n); }
static inline VI32 shift_right(VI32 v, VI32 n) { return _mm256_srav_epi32(v, n); }
static inline VI32 shift_right(VI32 v, __m128i n) { return _mm256_sra_epi32(v, n); }
static inline VI32 mul_high(VI32 a, VI32 m, VI32 m_odd) {
  const VI32 even = _mm256_mul_epi32(a, m);
  const VI32 odd = _mm256_mul_epi32(_mm256_srli_epi64(a, 32), m_odd);
  return _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}
static inline VI32 odd_lanes(VI32 m) { return _mm256_srli_epi64(m, 32); }

// A count of lanes (n <= 8): the partial vectors go through small buffers.
using Lanes = int64_t;
static inline Lanes first_lanes(int64_t n) { return n < kI32Lanes ? n : kI32Lanes; }
static inline VI32 load_n(const int32_t* p, Lanes n) {
  if (n == kI32Lanes) return load_i32(p);
  int32_t tail[kI32Lanes] = {};
  std::memcpy(tail, p, n * 4);
  return load_i32(tail);
}
// A whole vector's bytes go straight between memory and a register: memcpy of a run-time
// count compiled to a general copy through the stack (a quarter of int8 MobileNet v2's time in
// this stage at MINFER_ISA=avx2).
static inline VI32 load_bytes(const int8_t* p, Lanes n) {
  if (n == kI32Lanes)
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  int64_t bits = 0;
  std::memcpy(&bits, p, n);
  return _mm256_cvtepi8_epi32(_mm_cvtsi64_si128(bits));
}
static inline void store_bytes(int8_t* p, VI32 v, Lanes n) {
  const __m256i w = _mm256_packs_epi32(v, v);  // [0..3 0..3 | 4..7 4..7] as int16
  const __m256i b = _mm256_packs_epi16(w, w);  // [0..3 x4 | 4..7 x4] as int8
  const __m128i lo = _mm256_castsi256_si128(b), hi = _mm256_extracti128_si256(b, 1);
  const __m128i joined = _mm_unpacklo_epi32(lo, hi);
  if (n == kI32Lanes) return _mm_storel_epi64(reinterpret_cast<__m128i*>(p), joined);
  const int64_t bytes = _mm_cvtsi128_si64(joined);
  std::memcpy(p, &bytes, n);
}
#endif

static inline VI32 clamp(VI32 v, VI32 lo, VI32 hi) { return min(max(v, lo), hi); }

#if MINFER_ISA_WIDE
// Two whole vectors' bytes, side by side.
static inline void store_two(int8_t* p, VI32 v0, VI32 v1) {
  store_bytes(p, v0, first_lanes(kI32Lanes));
  store_bytes(p + kI32Lanes, v1, first_lanes(kI32Lanes));
}
#else
// Two whole vectors' bytes in one 16-byte store: the packs leave v0's and v1's halves
// interleaved by 4-byte groups, one permute puts them in order (3 shuffles for 16 bytes,
// where a vector alone takes 4 for 8).
static inline void store_two(int8_t* p, VI32 v0, VI32 v1) {
  const __m256i w = _mm256_packs_epi32(v0, v1);  // [v0 0..3 v1 0..3 | v0 4..7 v1 4..7] as int16
  const __m256i b = _mm256_packs_epi16(w, w);    // 4-byte groups: v0 0..3, v1 0..3 (x2) | 4..7
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5);
  const __m256i o = _mm256_permutevar8x32_epi32(b, order);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(o));
}
#endif

// The per-channel parameters of one vector of channels, loaded once per tile column.
struct Channels {
  VI32 lo, hi, pre, m, m_odd, rnd, shift;
};

// What a tile's outputs add: nothing, a residual, or a residual whose sum holds the output's
// zero point (RequantParams::y_zero_point_in_sum: no add after its shift).
enum Residual { kNone, kAdd, kAddFolded };

// One vector of a tile's outputs from its accumulators. kFolded: the zero point is in rnd
// (RequantParams::rnd_zp), so no add after the shift.
template <bool kPreShift, Residual kResidual, bool kFolded>
struct Stage {
  explicit Stage(const q8::RequantParams& rq)
      : rq(rq),
        zero_point(splat_i32(rq.zero_point)),
        qmin(splat_i32(rq.qmin)),
        qmax(splat_i32(rq.qmax)),
        ma(splat_i32(rq.ma)),
        mb(splat_i32(rq.mb)),
        sum_start(splat_i32(rq.residual_start)),
        y_zero_point(splat_i32(rq.y_zero_point)),
        k(_mm_cvtsi32_si128(rq.k)),
        lo(splat_i32(out_lo())),
        hi(splat_i32(out_hi())),
        clamp_lo(out_lo() > -128),
        clamp_hi(out_hi() < 127) {}

  // The output's bounds; one at int8's own limit is the saturating store's (no instruction).
  int32_t out_lo() const { return kResidual != kNone ? rq.y_min : rq.qmin; }
  int32_t out_hi() const { return kResidual != kNone ? rq.y_max : rq.qmax; }

  Channels channels(int64_t c) const {
    Channels ch;
    ch.m = load_i32(rq.m + c);
    ch.m_odd = odd_lanes(ch.m);
    ch.rnd = load_i32((kFolded ? rq.rnd_zp : rq.rnd) + c);
    ch.shift = load_i32(rq.shift + c);
    if constexpr (kPreShift) {
      ch.lo = load_i32(rq.lo + c);
      ch.hi = load_i32(rq.hi + c);
      ch.pre = load_i32(rq.pre + c);
    }
    return ch;
  }

  // z: the residual's n bytes (kResidual only).
  VI32 operator()(const Channels& ch, VI32 a, const int8_t* z, Lanes n) const {
    if constexpr (kPreShift) a = shift_left(clamp(a, ch.lo, ch.hi), ch.pre);
    VI32 t = shift_right(add(mul_high(a, ch.m, ch.m_odd), ch.rnd), ch.shift);
    if constexpr (!kFolded) t = add(t, zero_point);
    if constexpr (kResidual != kNone) {
      t = clamp(t, qmin, qmax);
      const VI32 zv = load_bytes(z, n);
      t = shift_right(add(add(mullo(t, ma), mullo(zv, mb)), sum_start), k);
      if constexpr (kResidual == kAdd) t = add(t, y_zero_point);
    }
    if (clamp_lo) t = max(t, lo);
    if (clamp_hi) t = min(t, hi);
    return t;
  }

  const q8::RequantParams& rq;
  VI32 zero_point, qmin, qmax, ma, mb, sum_start, y_zero_point;
  __m128i k;
  VI32 lo, hi;
  bool clamp_lo, clamp_hi;
};

template <bool kPreShift, Residual kResidual, bool kFolded>
void requant_columns(const q8::RequantParams& rq, const int32_t* acc, int64_t acc_stride,
                     int rows, int64_t c0, int64_t cols, int8_t* y, int64_t y_stride,
                     const int8_t* z) {
  const Stage<kPreShift, kResidual, kFolded> stage(rq);
  const auto residual = [&](int r, int64_t j) {
    return kResidual != kNone ? z + r * y_stride + j : nullptr;
  };
  // A whole tile row by row, its two vectors together: two independent chains to interleave
  // (int8 ResNet-50's 1x1 convs with a residual 1-3 % faster, MobileNet v2's at
  // MINFER_ISA=avx2 2 %), and on 256 bits one 16-byte store.
  if (cols == 2 * kI32Lanes) {
    const Channels ch0 = stage.channels(c0), ch1 = stage.channels(c0 + kI32Lanes);
    const Lanes all = first_lanes(kI32Lanes);
    for (int r = 0; r < rows; ++r) {
      const int32_t* a = acc + r * acc_stride;
      const VI32 t0 = stage(ch0, load_i32(a), residual(r, 0), all);
      const VI32 t1 = stage(ch1, load_i32(a + kI32Lanes), residual(r, kI32Lanes), all);
      store_two(y + r * y_stride, t0, t1);
    }
    return;
  }
  for (int64_t j = 0; j < cols; j += kI32Lanes) {
    const Channels ch = stage.channels(c0 + j);
    const Lanes n = first_lanes(cols - j);
    for (int r = 0; r < rows; ++r) {
      const VI32 t = stage(ch, load_n(acc + r * acc_stride + j, n), residual(r, j), n);
      store_bytes(y + r * y_stride + j, t, n);
    }
  }
}

void requant_tile(const q8::RequantParams& rq, const int32_t* acc, int64_t acc_stride, int rows,
                  int64_t c0, int64_t cols, int8_t* y, int64_t y_stride, const int8_t* z) {
  using Columns = void (*)(const q8::RequantParams&, const int32_t*, int64_t, int, int64_t,
                           int64_t, int8_t*, int64_t, const int8_t*);
  // By [pre_shift][Residual][zero_point_in_rnd].
  static constexpr Columns kColumns[2][3][2] = {
      {{requant_columns<false, kNone, false>, requant_columns<false, kNone, true>},
       {requant_columns<false, kAdd, false>, requant_columns<false, kAdd, true>},
       {requant_columns<false, kAddFolded, false>, requant_columns<false, kAddFolded, true>}},
      {{requant_columns<true, kNone, false>, requant_columns<true, kNone, true>},
       {requant_columns<true, kAdd, false>, requant_columns<true, kAdd, true>},
       {requant_columns<true, kAddFolded, false>, requant_columns<true, kAddFolded, true>}}};
  const Residual residual = !z ? kNone : rq.y_zero_point_in_sum ? kAddFolded : kAdd;
  kColumns[rq.pre_shift][residual][rq.zero_point_in_rnd](rq, acc, acc_stride, rows, c0, cols, y,
                                                        y_stride, z);
}

// The float output: y = float(acc) * scale[c], then max(y, +0) with relu (-0 and NaN give +0,
// as the reference's y > 0 ? y : 0). In place (y == acc) too: each vector is read first.
void dequant_tile(const float* scale, bool relu, const int32_t* acc, int64_t acc_stride,
                  int rows, int64_t c0, int64_t cols, float* y, int64_t y_stride) {
  const VF32 zero = zero_f32();
  for (int64_t j = 0; j < cols; j += kF32Lanes) {
    const VF32 s = load_f32(scale + c0 + j);  // (padded by 32)
    const Lanes n = first_lanes(cols - j);
    const MaskF32 m = first_lanes_f32(int(min64(cols - j, kF32Lanes)));
    for (int r = 0; r < rows; ++r) {
      const VI32 a = load_n(acc + r * acc_stride + j, n);
#if MINFER_ISA_WIDE
      VF32 v = _mm512_mul_ps(_mm512_maskz_cvtepi32_ps(0xffff, a), s);  // (GCC 12: masked form)
#else
      VF32 v = _mm256_mul_ps(_mm256_cvtepi32_ps(a), s);
#endif
      if (relu) v = max_f32(v, zero);
      float* out = y + r * y_stride + j;
      if (cols - j >= kF32Lanes)
        store_f32(out, v);
      else
        store_f32(out, v, m);
    }
  }
}

}  // namespace

extern const q8::RequantKernels kRequantKernels;
const q8::RequantKernels kRequantKernels{static_cast<Isa>(MINFER_ISA_LEVEL), requant_tile,
                                         dequant_tile};

}  // namespace minfer::cpu::MINFER_ISA_NS
