// Device code of the MaxSumDiv3 CUDA kernel: per-thread states (ops/max_sum_div3.h), combined
// by warp shuffles, then across the block through shared memory.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "ops/max_sum_div3.h"

namespace minfer::cuda::msd3_device {

using msd3::State;
using msd3::Summary;

constexpr unsigned kFullMask = 0xffffffffu;

// The 16-byte load of each element type.
template <typename T>
struct Vec;
template <>
struct Vec<int32_t> {
  using type = int4;
  static constexpr int width = 4;
};
template <>
struct Vec<int64_t> {
  using type = longlong2;
  static constexpr int width = 2;
};

// One element into a thread's state. For int32, P accumulates without a carry: a thread sees
// far fewer than 2^32 elements (the plan spreads a row over >= 256 threads, and a tensor has
// at most 2^36 bytes), and merges carry.
__device__ __forceinline__ void add_element(State<uint32_t>& s, int32_t v) {
  s.pos_lo += uint32_t(max(v, 0));
  msd3::add_magnitude(s, msd3::magnitude(v));
}
__device__ __forceinline__ void add_element(State<uint64_t>& s, int64_t v) { msd3::add(s, v); }

__device__ __forceinline__ void add_vector(State<uint32_t>& s, int4 v) {
  add_element(s, v.x);
  add_element(s, v.y);
  add_element(s, v.z);
  add_element(s, v.w);
}
__device__ __forceinline__ void add_vector(State<uint64_t>& s, longlong2 v) {
  add_element(s, int64_t(v.x));
  add_element(s, int64_t(v.y));
}

template <typename U>
__device__ __forceinline__ State<U> shuffle_down(const State<U>& s, unsigned offset) {
  State<U> o;
  o.pos_lo = __shfl_down_sync(kFullMask, s.pos_lo, offset);
  o.pos_hi = __shfl_down_sync(kFullMask, s.pos_hi, offset);
  o.a1 = __shfl_down_sync(kFullMask, s.a1, offset);
  o.a2 = __shfl_down_sync(kFullMask, s.a2, offset);
  o.b1 = __shfl_down_sync(kFullMask, s.b1, offset);
  o.b2 = __shfl_down_sync(kFullMask, s.b2, offset);
  return o;
}

// Combines the states of a warp; lane 0 ends with the result. All 32 lanes must call it.
template <typename U>
__device__ __forceinline__ void warp_reduce(State<U>& s) {
#pragma unroll
  for (unsigned offset = 16; offset > 0; offset >>= 1) msd3::merge(s, shuffle_down(s, offset));
}

// Combines the states of a block; thread 0 ends with the result. All threads must call it.
template <typename U>
__device__ __forceinline__ void block_reduce(State<U>& s) {
  // Raw storage: a __shared__ variable cannot have a constructor.
  __shared__ alignas(State<U>) unsigned char storage[32 * sizeof(State<U>)];
  State<U>* warp_states = reinterpret_cast<State<U>*>(storage);
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  warp_reduce(s);
  if (lane == 0) warp_states[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = lane < blockDim.x / 32 ? warp_states[lane] : State<U>();
    warp_reduce(s);
  }
  __syncthreads();  // the storage is reused by the block's next row
}

// Writes a row's answer; a row whose positive values sum past INT64_MAX writes 0 and records
// the smallest such row in *overflow (null where the plan proved that it cannot happen).
template <typename U>
__device__ __forceinline__ void write_answer(const State<U>& s, int64_t row, int64_t* y,
                                             unsigned long long* overflow) {
  int64_t answer = 0;
  if (!msd3::finalize(s, &answer) && overflow)
    atomicMin(overflow, static_cast<unsigned long long>(row));
  y[row] = answer;
}

// Short rows: one warp per row (grid-stride over rows), scalar coalesced loads.
template <typename T>
__global__ void __launch_bounds__(256)
    warp_rows_kernel(const T* __restrict__ x, int64_t rows, int64_t n, int64_t* __restrict__ y,
                     unsigned long long* overflow) {
  using U = std::make_unsigned_t<T>;
  const unsigned lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; row < rows;
       row += warps) {
    const T* p = x + row * n;
    State<U> s;
    int64_t i = lane;
    for (; i + 96 < n; i += 128) {  // four loads in flight per lane
      T v0 = __ldg(p + i), v1 = __ldg(p + i + 32), v2 = __ldg(p + i + 64), v3 = __ldg(p + i + 96);
      add_element(s, v0);
      add_element(s, v1);
      add_element(s, v2);
      add_element(s, v3);
    }
    for (; i < n; i += 32) add_element(s, __ldg(p + i));
    warp_reduce(s);
    if (lane == 0) write_answer(s, row, y, overflow);
  }
}

// Long rows: `bpr` blocks per row read it once with 16-byte loads in a grid-stride loop, four
// loads in flight per thread. Work item w is part w % bpr of row w / bpr; with bpr == 1 the
// block writes the answer, else its state goes to partials[w] for combine_kernel.
template <typename T>
__global__ void __launch_bounds__(256)
    blocks_kernel(const T* __restrict__ x, int64_t rows, int64_t n, int64_t bpr,
                  int64_t* __restrict__ y, Summary* __restrict__ partials,
                  unsigned long long* overflow) {
  using U = std::make_unsigned_t<T>;
  using V = typename Vec<T>::type;
  constexpr int kWidth = Vec<T>::width;
  const int64_t items = rows * bpr;
  for (int64_t w = blockIdx.x; w < items; w += gridDim.x) {
    const int64_t row = w / bpr, part = w - row * bpr;
    const T* p = x + row * n;
    // A row may start anywhere: scalar loads up to the first 16-byte boundary (head) and after
    // the last whole vector (tail), by the row's first block.
    int64_t head = int64_t((16 - (reinterpret_cast<uintptr_t>(p) & 15)) & 15) / int64_t(sizeof(T));
    if (head > n) head = n;
    const int64_t vectors = (n - head) / kWidth;
    const int64_t tail = head + vectors * kWidth;
    const V* pv = reinterpret_cast<const V*>(p + head);
    State<U> s;
    if (part == 0) {
      if (int64_t(threadIdx.x) < head) add_element(s, p[threadIdx.x]);
      if (int64_t(threadIdx.x) < n - tail) add_element(s, p[tail + threadIdx.x]);
    }
    const int64_t stride = bpr * blockDim.x;
    int64_t i = part * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < vectors; i += 4 * stride) {
      V v0 = __ldg(pv + i), v1 = __ldg(pv + i + stride), v2 = __ldg(pv + i + 2 * stride),
        v3 = __ldg(pv + i + 3 * stride);
      add_vector(s, v0);
      add_vector(s, v1);
      add_vector(s, v2);
      add_vector(s, v3);
    }
    for (; i < vectors; i += stride) add_vector(s, __ldg(pv + i));
    block_reduce(s);
    if (threadIdx.x == 0) {
      if (bpr == 1) {
        write_answer(s, row, y, overflow);
      } else {
        Summary wide;
        msd3::merge(wide, s);
        partials[w] = wide;
      }
    }
  }
}

// The grid-level combine: one warp per row merges the row's `bpr` block states.
__global__ void __launch_bounds__(256)
    combine_kernel(const Summary* __restrict__ partials, int64_t rows, int64_t bpr,
                   int64_t* __restrict__ y, unsigned long long* overflow) {
  const unsigned lane = threadIdx.x % 32;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / 32);
  for (int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32; row < rows;
       row += warps) {
    Summary s;
    for (int64_t k = lane; k < bpr; k += 32) msd3::merge(s, partials[row * bpr + k]);
    warp_reduce(s);
    if (lane == 0) write_answer(s, row, y, overflow);
  }
}

}  // namespace minfer::cuda::msd3_device
