// MaxSumDiv3 on CUDA: planning and launching (kernels in max_sum_div3.cuh).
#include <algorithm>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/max_sum_div3.cuh"
#include "backends/cuda/max_sum_div3.h"
#include "minfer/error.h"

namespace minfer::cuda {

namespace {

using msd3_device::Summary;

constexpr size_t kAlign = 64;  // workspace: [align slack][overflow word][partial states]

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int blocks_per_sm(DType dtype) {
  int blocks = 0;
  if (dtype == DType::i32)
    MINFER_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &blocks, msd3_device::blocks_kernel<int32_t>, MaxSumDiv3Plan::kThreads, 0));
  else
    MINFER_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &blocks, msd3_device::blocks_kernel<int64_t>, MaxSumDiv3Plan::kThreads, 0));
  return std::max(blocks, 1);
}

template <typename T>
void launch(const MaxSumDiv3Plan& plan, const T* x, int64_t* y, Summary* partials,
            unsigned long long* overflow, cudaStream_t stream) {
  constexpr int kThreads = MaxSumDiv3Plan::kThreads;
  if (plan.warp_per_row) {
    msd3_device::warp_rows_kernel<T>
        <<<unsigned(plan.grid), kThreads, 0, stream>>>(x, plan.rows, plan.n, y, overflow);
  } else {
    msd3_device::blocks_kernel<T><<<unsigned(plan.grid), kThreads, 0, stream>>>(
        x, plan.rows, plan.n, plan.blocks_per_row, y, partials, overflow);
    if (plan.blocks_per_row > 1) {
      const int64_t grid = std::min<int64_t>(ceil_div(plan.rows, kThreads / 32), 1 << 16);
      msd3_device::combine_kernel<<<unsigned(grid), kThreads, 0, stream>>>(
          partials, plan.rows, plan.blocks_per_row, y, overflow);
    }
  }
  MINFER_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

MaxSumDiv3Plan plan_max_sum_div3(DType dtype, int64_t rows, int64_t n, int sm_count) {
  check(dtype == DType::i32 || dtype == DType::i64, ErrorCode::InvalidArgument,
        std::string("MaxSumDiv3 (CUDA): X must be i32 or i64, got ") + dtype_name(dtype));
  check(rows >= 0 && n >= 0, ErrorCode::InvalidArgument, "MaxSumDiv3 (CUDA): negative size");
  MaxSumDiv3Plan plan;
  plan.dtype = dtype;
  plan.rows = rows;
  plan.n = n;
  // int32 rows shorter than 2^32 cannot overflow: 2^32 * (2^31 - 1) < 2^63.
  plan.check_overflow = dtype == DType::i64 || n >= (int64_t{1} << 32);
  if (rows == 0) return plan;
  const int64_t sms = std::max(sm_count, 1);
  constexpr int64_t kWarps = MaxSumDiv3Plan::kThreads / 32;
  if (n <= MaxSumDiv3Plan::kWarpRowMax) {
    plan.warp_per_row = true;
    plan.grid = std::min(ceil_div(rows, kWarps), sms * 64);
  } else {
    // Enough blocks to fill every multiprocessor, split over the rows, but no block with less
    // than 16 vectors per thread (more blocks would only add states to combine).
    const int64_t resident = sms * blocks_per_sm(dtype);
    const int64_t width = 16 / int64_t(dtype_size(dtype));
    const int64_t min_elements = MaxSumDiv3Plan::kThreads * width * 16;
    const int64_t most = std::max<int64_t>(1, n / min_elements);
    plan.blocks_per_row = std::clamp<int64_t>(ceil_div(resident, rows), 1, most);
    plan.grid = std::min(rows * plan.blocks_per_row, resident * 16);
  }
  const bool partials = plan.blocks_per_row > 1;
  if (plan.check_overflow || partials)
    plan.workspace_bytes =
        2 * kAlign + (partials ? size_t(rows * plan.blocks_per_row) * sizeof(Summary) : 0);
  return plan;
}

namespace {
struct Workspace {
  unsigned long long* overflow = nullptr;
  Summary* partials = nullptr;
};

Workspace carve(const MaxSumDiv3Plan& plan, const void* workspace) {
  Workspace w;
  if (plan.workspace_bytes == 0) return w;
  auto base = (reinterpret_cast<uintptr_t>(workspace) + kAlign - 1) / kAlign * kAlign;
  if (plan.check_overflow) w.overflow = reinterpret_cast<unsigned long long*>(base);
  if (plan.blocks_per_row > 1) w.partials = reinterpret_cast<Summary*>(base + kAlign);
  return w;
}
}  // namespace

void launch_max_sum_div3(const MaxSumDiv3Plan& plan, const void* x, int64_t* y, void* workspace,
                         cudaStream_t stream) {
  if (plan.rows == 0) return;
  Workspace w = carve(plan, workspace);
  // All ones = no overflowing row; kernels lower it with atomicMin.
  if (w.overflow) MINFER_CUDA_CHECK(cudaMemsetAsync(w.overflow, 0xFF, sizeof(*w.overflow), stream));
  if (plan.dtype == DType::i32)
    launch(plan, static_cast<const int32_t*>(x), y, w.partials, w.overflow, stream);
  else
    launch(plan, static_cast<const int64_t*>(x), y, w.partials, w.overflow, stream);
}

int64_t max_sum_div3_overflow_row(const MaxSumDiv3Plan& plan, const void* workspace,
                                  cudaStream_t stream) {
  Workspace w = carve(plan, workspace);
  if (!w.overflow || plan.rows == 0) return -1;
  unsigned long long row = 0;
  MINFER_CUDA_CHECK(cudaMemcpyAsync(&row, w.overflow, sizeof(row), cudaMemcpyDeviceToHost, stream));
  MINFER_CUDA_CHECK(cudaStreamSynchronize(stream));
  return row == ~0ull ? -1 : int64_t(row);
}

}  // namespace minfer::cuda
