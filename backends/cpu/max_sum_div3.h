// The CPU kernel of MaxSumDiv3 (ops/max_sum_div3.h): one pass, OpenMP over rows or over chunks
// of a long row, a vectorizable inner loop.
#pragma once

#include <cstdint>

namespace minfer::cpu {

// Reduces `rows` contiguous rows of `n` values each into y[0..rows). Returns -1, or the first
// row whose positive values sum past INT64_MAX (y is then unspecified); the caller raises the
// error, so that nothing throws inside an OpenMP region.
int64_t max_sum_div3(const int32_t* x, int64_t rows, int64_t n, int64_t* y, int threads);
int64_t max_sum_div3(const int64_t* x, int64_t rows, int64_t n, int64_t* y, int threads);

}  // namespace minfer::cpu
