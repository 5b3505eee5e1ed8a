// The int8 GEMM micro-kernel and activation packing, one source for every ISA level
// (compiled once per level by cmake/MinferIsa.cmake; see backends/cpu/int8/qgemm.h for the
// arithmetic):
//
//   avx2, avx512            int16 operands, vpmaddwd (k in pairs). vpmaddubsw would be faster
//                           but saturates its int16 pair sums.
//   avxvnni, avx512vnni     vpdpbusd (k in quads), unsigned activations x + 128 (x ^ 0x80)
//                           times signed weights; the caller folds -128 * sum(W[j]) into init.
//
// A tile is mr rows x 2 vectors of int32 channels (16 or 32), accumulated in registers:
// 6 rows on 16 ymm registers, 12 rows on 32 zmm registers.
#include <cstring>

#include "backends/cpu/isa/isa_kernels.h"
#include "backends/cpu/isa/simd.h"

namespace minfer::cpu::MINFER_ISA_NS {

namespace {

constexpr int kNr = 2 * kI32Lanes;
constexpr int kMr = MINFER_ISA_WIDE ? 12 : 6;
constexpr int kStep = MINFER_ISA_VNNI ? 4 : 2;

template <int R>
void tile(const uint8_t* a, int64_t a_stride, const uint8_t* b, int64_t kq, const int32_t* init,
          int32_t* c) {
  VI32 acc[R][2];
  const VI32 i0 = load_i32(init), i1 = load_i32(init + kI32Lanes);
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    acc[r][0] = i0;
    acc[r][1] = i1;
  }
  for (int64_t q = 0; q < kq; ++q) {
    const VI32 b0 = load_i32(b + q * kNr * 4);
    const VI32 b1 = load_i32(b + q * kNr * 4 + kI32Lanes * 4);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      int32_t lane;  // 2 int16 or 4 uint8 activations
      std::memcpy(&lane, a + r * a_stride + q * 4, 4);
      const VI32 av = splat_i32(lane);
#if MINFER_ISA_VNNI
      acc[r][0] = dot4_u8i8(acc[r][0], av, b0);
      acc[r][1] = dot4_u8i8(acc[r][1], av, b1);
#else
      acc[r][0] = madd_i16(acc[r][0], av, b0);
      acc[r][1] = madd_i16(acc[r][1], av, b1);
#endif
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    store_i32(c + r * kNr, acc[r][0]);
    store_i32(c + r * kNr + kI32Lanes, acc[r][1]);
  }
}

// tile<rows> for a run-time rows in [1, R].
template <int R>
void tile_rows(int rows, const uint8_t* a, int64_t a_stride, const uint8_t* b, int64_t kq,
               const int32_t* init, int32_t* c) {
  if constexpr (R == 1) {
    tile<1>(a, a_stride, b, kq, init, c);
  } else {
    if (rows >= R)
      tile<R>(a, a_stride, b, kq, init, c);
    else
      tile_rows<R - 1>(rows, a, a_stride, b, kq, init, c);
  }
}

void micro(const uint8_t* a, int64_t a_stride, const uint8_t* b, int64_t kq, int rows,
           const int32_t* init, int32_t* c) {
  tile_rows<kMr>(rows, a, a_stride, b, kq, init, c);
}

// Plain loops: the compiler vectorizes them for the level this file is built for.
void pack_a_row(const int8_t* x, int64_t k, int64_t kq, uint8_t* out) {
#if MINFER_ISA_VNNI
  for (int64_t i = 0; i < k; ++i) out[i] = static_cast<uint8_t>(x[i]) ^ 0x80;
  for (int64_t i = k; i < kq * 4; ++i) out[i] = 0;  // padding lanes: their weights are 0
#else
  int16_t* o = reinterpret_cast<int16_t*>(out);
  for (int64_t i = 0; i < k; ++i) o[i] = x[i];
  for (int64_t i = k; i < kq * 2; ++i) o[i] = 0;
#endif
}

}  // namespace

extern const q8::MicroKernels kInt8MicroKernels;
const q8::MicroKernels kInt8MicroKernels{static_cast<Isa>(MINFER_ISA_LEVEL),
                                         kMr,
                                         kNr,
                                         kStep,
                                         MINFER_ISA_VNNI ? 128 : 0,
                                         micro,
                                         pack_a_row};

}  // namespace minfer::cpu::MINFER_ISA_NS
