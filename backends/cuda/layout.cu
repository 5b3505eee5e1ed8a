// Data movement by an index map: y[i] = x[map[i]], or the pad value where map[i] < 0. The map
// is computed once at prepare (layout_kernels.cpp), so one kernel serves Transpose, Slice and
// Pad on any element type.
#include "backends/cuda/device_util.cuh"
#include "backends/cuda/launch.h"

namespace minfer::cuda {

namespace {

template <typename T>
__global__ void gather_kernel(const T* __restrict__ x, const int32_t* __restrict__ map,
                              T* __restrict__ y, int n, T pad) {
  MINFER_GRID_STRIDE(i, n) {
    const int32_t src = map[i];
    y[i] = src >= 0 ? x[src] : pad;
  }
}

template <typename T>
void launch(const void* x, const int32_t* map, void* y, int n, uint64_t pad, cudaStream_t stream) {
  T value;
  __builtin_memcpy(&value, &pad, sizeof(T));  // the low bytes (little endian)
  gather_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(static_cast<const T*>(x), map,
                                                         static_cast<T*>(y), n, value);
}

}  // namespace

void gather(const void* x, const int32_t* map, void* y, int n, int elem_size, uint64_t pad,
            cudaStream_t stream) {
  if (n == 0) return;
  switch (elem_size) {
    case 1:
      launch<uint8_t>(x, map, y, n, pad, stream);
      break;
    case 2:
      launch<uint16_t>(x, map, y, n, pad, stream);
      break;
    case 4:
      launch<uint32_t>(x, map, y, n, pad, stream);
      break;
    default:
      launch<uint64_t>(x, map, y, n, pad, stream);
      break;
  }
  MINFER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace minfer::cuda
