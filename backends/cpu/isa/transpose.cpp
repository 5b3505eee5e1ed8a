// The fp32 transpose of one ISA level (compiled once per level by cmake/MinferIsa.cmake): 8 x 8
// blocks through registers (transpose8, on ymm at every level), the edges element by element.
// A small-plane conv's reorders into and out of channels-last took 2 cycles an element as
// scalar copies (a 7x7 plane's 2048 channels back with the residual: 51 us of the conv's 600,
// 16 us this way). Rows of dst a multiple of 4 KB apart make it slower than the scalar copies
// (stores that the next blocks' loads wait on, their addresses alike in their low 12 bits).
#include <cstring>

#include "backends/cpu/isa/isa_kernels.h"
#include "backends/cpu/isa/simd.h"

namespace minfer::cpu::MINFER_ISA_NS {

namespace {

// dst [cols, rows] = src [rows, cols]^T (+ add, laid out as dst, where not null). Each element
// of add is read just before dst's element there is written: add may be dst.
void transpose(const float* src, int64_t rows, int64_t cols, int64_t ld_src, float* dst,
               int64_t ld_dst, const float* add) {
  const int64_t rows8 = rows / 8 * 8, cols8 = cols / 8 * 8;
  for (int64_t r0 = 0; r0 < rows8; r0 += 8)
    for (int64_t c0 = 0; c0 < cols8; c0 += 8) {
      Vec8 v[8];
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) std::memcpy(&v[i], src + (r0 + i) * ld_src + c0, sizeof v[i]);
      transpose8(v);
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) {
        const int64_t at = (c0 + i) * ld_dst + r0;
        if (add) {
          Vec8 a;
          std::memcpy(&a, add + at, sizeof a);
          v[i] += a;
        }
        std::memcpy(dst + at, &v[i], sizeof v[i]);
      }
    }
  // The edges: the last rows % 8 rows of every column, the last cols % 8 columns of the others.
  auto one = [&](int64_t r, int64_t c) {
    const int64_t at = c * ld_dst + r;
    dst[at] = add ? src[r * ld_src + c] + add[at] : src[r * ld_src + c];
  };
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t r = rows8; r < rows; ++r) one(r, c);
  for (int64_t c = cols8; c < cols; ++c)
    for (int64_t r = 0; r < rows8; ++r) one(r, c);
}

}  // namespace

extern const f32::TransposeKernels kTransposeKernels;
const f32::TransposeKernels kTransposeKernels{static_cast<Isa>(MINFER_ISA_LEVEL), transpose};

}  // namespace minfer::cpu::MINFER_ISA_NS
