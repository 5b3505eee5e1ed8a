// Square blocks transposed in registers (AVX2; the caller checks has_any_isa()): the Transpose
// kernel's tiles and the kernels that write channels-last output from channel rows.
#pragma once

#include <cstdint>

namespace minfer::cpu {

// dst row a (16 bytes at dst + a * dst_stride) = column a of the 16 source rows of 16 bytes
// (src + b * src_stride).
__attribute__((target("avx2"))) void transpose_bytes_16x16(const uint8_t* src, int64_t src_stride,
                                                           uint8_t* dst, int64_t dst_stride);
// The same for an 8x8 block of 4-byte elements (strides in elements).
__attribute__((target("avx2"))) void transpose_words_8x8(const uint32_t* src, int64_t src_stride,
                                                         uint32_t* dst, int64_t dst_stride);

}  // namespace minfer::cpu
