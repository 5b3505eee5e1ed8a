// MaxSumDiv3 bandwidth, each figure next to a peer measured in the same run on the same data:
//   CPU:  the kernel vs a plain OpenMP sum of the array.
//   CUDA: the kernel vs a device-to-device copy of the same bytes (bench/max_sum_div3_torch.py
//         adds torch.max). Also checks that the CUDA result equals the CPU kernel's.
// Usage: max_sum_div3_bench [--cpu-log2 26] [--cuda-log2 28] [--threads T] [--iters 20]
//                           [--no-cpu] [--no-cuda]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/max_sum_div3.h"

#ifdef MINFER_WITH_CUDA
#include <cuda_runtime_api.h>

#include "backends/cuda/max_sum_div3.h"
#endif

namespace {

struct Options {
  int cpu_log2 = 26;
  int cuda_log2 = 28;
  int threads = int(std::max(1u, std::thread::hardware_concurrency()));
  int iters = 20;
  bool cpu = true, cuda = true;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&] {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return std::atoi(argv[++i]);
    };
    if (a == "--cpu-log2")
      o.cpu_log2 = value();
    else if (a == "--cuda-log2")
      o.cuda_log2 = value();
    else if (a == "--threads")
      o.threads = value();
    else if (a == "--iters")
      o.iters = std::max(1, value());
    else if (a == "--no-cpu")
      o.cpu = false;
    else if (a == "--no-cuda")
      o.cuda = false;
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      std::exit(2);
    }
  }
  return o;
}

// Values in [-1000, 1000], as in /work/shared/anchors/gpu_reduction_bandwidth.py.
std::vector<int32_t> random_array(int64_t n) {
  std::vector<int32_t> x(static_cast<size_t>(n), 0);
  std::mt19937 rng(12345);
  std::uniform_int_distribution<int32_t> dist(-1000, 1000);
  for (auto& v : x) v = dist(rng);
  return x;
}

// Best of `iters` runs, in seconds.
template <typename F>
double best_seconds(int iters, F&& f) {
  double best = INFINITY;
  for (int i = 0; i < iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double>(t1 - t0).count());
  }
  return best;
}

int64_t plain_sum(const int32_t* x, int64_t n, int threads) {
  int64_t s = 0;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) reduction(+ : s) schedule(static)
#endif
  for (int64_t i = 0; i < n; ++i) s += x[i];
  (void)threads;
  return s;
}

void bench_cpu(const Options& o, const std::vector<int32_t>& x) {
  const int64_t n = int64_t(x.size());
  const double bytes = double(n) * sizeof(int32_t);
  int64_t answer = 0, sum = 0;
  minfer::cpu::max_sum_div3(x.data(), 1, n, &answer, o.threads);  // warm the pages
  double t_kernel =
      best_seconds(o.iters, [&] { minfer::cpu::max_sum_div3(x.data(), 1, n, &answer, o.threads); });
  double t_sum = best_seconds(o.iters, [&] { sum = plain_sum(x.data(), n, o.threads); });
  std::printf(
      "maxSumDiv3 cpu: %.2f GB/s; plain sum: %.2f GB/s; kernel/sum %.2f "
      "(2^%d int32, %d threads, result %lld, sum %lld)\n",
      bytes / t_kernel / 1e9, bytes / t_sum / 1e9, t_sum / t_kernel, o.cpu_log2, o.threads,
      (long long)answer, (long long)sum);
}

#ifdef MINFER_WITH_CUDA
#define CHECK(expr)                                                                               \
  do {                                                                                            \
    cudaError_t e_ = (expr);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

// Host to device on `stream`, then waits: a plain cudaMemcpy from pageable memory may return
// before the data lands, and kernels on a non-blocking stream do not wait for it.
void upload(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
  CHECK(cudaStreamSynchronize(stream));
}

// Milliseconds per call, averaged over `iters` calls between two events (after warm-up).
template <typename F>
double cuda_ms(int iters, cudaStream_t stream, F&& f) {
  for (int i = 0; i < 3; ++i) f();
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start, stream));
  for (int i = 0; i < iters; ++i) f();
  CHECK(cudaEventRecord(stop, stream));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  return ms / iters;
}

// Runs the CUDA kernel over `rows` x `n` values of `host` (any element type) and returns y.
template <typename T>
std::vector<int64_t> run_cuda(const std::vector<T>& host, int64_t rows, int64_t n, int sms,
                              cudaStream_t stream, int64_t offset = 0) {
  minfer::DType dtype = sizeof(T) == 4 ? minfer::DType::i32 : minfer::DType::i64;
  auto plan = minfer::cuda::plan_max_sum_div3(dtype, rows, n, sms);
  void *x = nullptr, *y = nullptr, *ws = nullptr;
  CHECK(cudaMalloc(&x, (host.size() + size_t(offset)) * sizeof(T) + 16));
  CHECK(cudaMalloc(&y, size_t(std::max<int64_t>(rows, 1)) * 8));
  CHECK(cudaMalloc(&ws, std::max<size_t>(plan.workspace_bytes, 1)));
  T* xs = static_cast<T*>(x) + offset;  // misaligned rows on purpose when offset != 0
  upload(xs, host.data(), host.size() * sizeof(T), stream);
  minfer::cuda::launch_max_sum_div3(plan, xs, static_cast<int64_t*>(y), ws, stream);
  std::vector<int64_t> out(static_cast<size_t>(rows));
  CHECK(cudaStreamSynchronize(stream));
  CHECK(cudaMemcpy(out.data(), y, out.size() * 8, cudaMemcpyDeviceToHost));
  if (minfer::cuda::max_sum_div3_overflow_row(plan, ws, stream) >= 0) out.assign(out.size(), -1);
  cudaFree(x);
  cudaFree(y);
  cudaFree(ws);
  return out;
}

// CUDA == CPU kernel over shapes that exercise every path (warp per row, one block per row,
// several blocks per row, heads and tails of misaligned rows), int32 and int64.
bool check_cuda(int sms, cudaStream_t stream) {
  std::mt19937_64 rng(7);
  const int64_t shapes[][2] = {{1, 0},    {3, 1},      {5, 2},       {1, 33},     {7, 1000},
                               {2, 2048}, {3, 2049},   {1, 65537},   {4, 300001}, {1, 4000037},
                               {1000, 5}, {257, 4097}, {33, 100003}, {1, 1 << 22}};
  bool ok = true;
  for (auto& s : shapes) {
    for (int64_t offset : {0, 1, 3}) {
      const int64_t rows = s[0], n = s[1];
      std::vector<int32_t> a(static_cast<size_t>(rows * n));
      std::vector<int64_t> b(a.size());
      for (size_t i = 0; i < a.size(); ++i) {
        a[i] = int32_t(rng() % 2001) - 1000;
        if (rng() % 97 == 0) a[i] = rng() % 2 ? INT32_MAX : INT32_MIN;
        b[i] = int64_t(rng() >> 24) - (int64_t(1) << 39);  // beyond int32, summable
      }
      std::vector<int64_t> want_a(static_cast<size_t>(rows)), want_b(static_cast<size_t>(rows));
      minfer::cpu::max_sum_div3(a.data(), rows, n, want_a.data(), 4);
      if (minfer::cpu::max_sum_div3(b.data(), rows, n, want_b.data(), 4) >= 0)
        want_b.assign(want_b.size(), -1);
      bool same = run_cuda(a, rows, n, sms, stream, offset) == want_a &&
                  run_cuda(b, rows, n, sms, stream, offset) == want_b;
      if (!same) {
        std::printf("check FAILED: rows %lld n %lld offset %lld\n", (long long)rows, (long long)n,
                    (long long)offset);
        ok = false;
      }
    }
  }
  // int64 overflow is reported, and for the right row.
  {
    std::vector<int64_t> big = {1, 2, 3, INT64_MAX, 5, 6};
    auto plan = minfer::cuda::plan_max_sum_div3(minfer::DType::i64, 2, 3, sms);
    void *x, *y, *ws;
    CHECK(cudaMalloc(&x, big.size() * 8));
    CHECK(cudaMalloc(&y, 16));
    CHECK(cudaMalloc(&ws, plan.workspace_bytes));
    upload(x, big.data(), big.size() * 8, stream);
    minfer::cuda::launch_max_sum_div3(plan, x, static_cast<int64_t*>(y), ws, stream);
    int64_t row = minfer::cuda::max_sum_div3_overflow_row(plan, ws, stream);
    if (row != 1) {
      std::printf("check FAILED: overflow row %lld, want 1\n", (long long)row);
      ok = false;
    }
    cudaFree(x);
    cudaFree(y);
    cudaFree(ws);
  }
  std::printf("check: cuda == cpu on %zu shapes x 3 offsets x {int32, int64}: %s\n",
              std::size(shapes), ok ? "ok" : "FAILED");
  return ok;
}

bool bench_cuda(const Options& o, const std::vector<int32_t>& host, int64_t cpu_answer) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("maxSumDiv3 cuda: skipped (no CUDA device)\n");
    return true;
  }
  cudaDeviceProp props{};
  CHECK(cudaGetDeviceProperties(&props, 0));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const int sms = props.multiProcessorCount;
  bool ok = check_cuda(sms, stream);

  const int64_t n = int64_t(host.size());
  const size_t bytes = size_t(n) * sizeof(int32_t);
  auto plan = minfer::cuda::plan_max_sum_div3(minfer::DType::i32, 1, n, sms);
  void *x, *copy, *y, *ws;
  CHECK(cudaMalloc(&x, bytes));
  CHECK(cudaMalloc(&copy, bytes));
  CHECK(cudaMalloc(&y, 8));
  CHECK(cudaMalloc(&ws, std::max<size_t>(plan.workspace_bytes, 1)));
  upload(x, host.data(), bytes, stream);
  double ms_kernel = cuda_ms(o.iters, stream, [&] {
    minfer::cuda::launch_max_sum_div3(plan, x, static_cast<int64_t*>(y), ws, stream);
  });
  double ms_copy = cuda_ms(o.iters, stream, [&] {
    CHECK(cudaMemcpyAsync(copy, x, bytes, cudaMemcpyDeviceToDevice, stream));
  });
  int64_t answer = 0;
  CHECK(cudaMemcpy(&answer, y, 8, cudaMemcpyDeviceToHost));
  const double gbs_kernel = double(bytes) / ms_kernel / 1e6;
  std::printf(
      "maxSumDiv3 cuda: %.0f GB/s; d2d copy: %.0f GB/s (read+write; %.0f GB/s read) "
      "(2^%d int32 on %s, %.3f ms, %lld blocks, result %lld)\n",
      gbs_kernel, 2 * double(bytes) / ms_copy / 1e6, double(bytes) / ms_copy / 1e6, o.cuda_log2,
      props.name, ms_kernel, (long long)plan.grid, (long long)answer);
  if (cpu_answer >= 0 && answer != cpu_answer) {
    std::printf("check FAILED: cuda %lld, cpu %lld\n", (long long)answer, (long long)cpu_answer);
    ok = false;
  }

  // Other shapes and the int64 path, for the record.
  auto other = [&](minfer::DType dtype, int64_t rows, int64_t cols, const char* what) {
    auto p = minfer::cuda::plan_max_sum_div3(dtype, rows, cols, sms);
    void *py, *pws;
    CHECK(cudaMalloc(&py, size_t(rows) * 8));
    CHECK(cudaMalloc(&pws, std::max<size_t>(p.workspace_bytes, 1)));
    double ms = cuda_ms(o.iters, stream, [&] {
      minfer::cuda::launch_max_sum_div3(p, x, static_cast<int64_t*>(py), pws, stream);
    });
    std::printf("maxSumDiv3 cuda %s: %.0f GB/s\n", what, double(bytes) / ms / 1e6);
    cudaFree(py);
    cudaFree(pws);
  };
  other(minfer::DType::i64, 1, n / 2, "int64 1 row");
  other(minfer::DType::i32, n >> 12, 1 << 12, "int32 rows of 4096");
  other(minfer::DType::i32, n >> 10, 1 << 10, "int32 rows of 1024 (warp per row)");
  // Every element smaller than all before it: each one enters a two-smallest list (the speed
  // does not depend on the data).
  std::vector<int32_t> descending(host.size());
  for (size_t i = 0; i < descending.size(); ++i) descending[i] = int32_t(descending.size() - i);
  upload(x, descending.data(), bytes, stream);
  other(minfer::DType::i32, 1, n, "int32 descending values");
  cudaFree(x);
  cudaFree(copy);
  cudaFree(y);
  cudaFree(ws);
  cudaStreamDestroy(stream);
  return ok;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  if (o.cpu) bench_cpu(o, random_array(int64_t{1} << o.cpu_log2));
  bool ok = true;
#ifdef MINFER_WITH_CUDA
  if (o.cuda) {
    auto x = random_array(int64_t{1} << o.cuda_log2);
    int64_t expected = -1;  // the CPU kernel's answer, to check the GPU's
    minfer::cpu::max_sum_div3(x.data(), 1, int64_t(x.size()), &expected, o.threads);
    ok = bench_cuda(o, x, expected);
  }
#else
  if (o.cuda) std::printf("maxSumDiv3 cuda: skipped (built without CUDA)\n");
#endif
  return ok ? 0 : 1;
}
