// 8 floats as one vector (GCC/Clang vector extension): an AVX register where the target has
// one, a pair of SSE ones otherwise. Loaded and stored with memcpy (unaligned), and never
// passed or returned by value across files: that would change ABI between targets.
#pragma once

#include <cstdint>

namespace minfer::cpu {

using Vec8 = float __attribute__((vector_size(32)));
using Int32x8 = int32_t __attribute__((vector_size(32)));

}  // namespace minfer::cpu
