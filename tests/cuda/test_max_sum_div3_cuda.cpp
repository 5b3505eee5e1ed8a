// MaxSumDiv3's CUDA kernel equals the CPU kernel, driven directly through its KernelDef with
// device buffers (independent of the session), plus the op through a CUDA Session.
// Returns early with a warning where there is no GPU (CI).
#include <climits>
#include <random>
#include <vector>

#include "backends/cpu/max_sum_div3.h"
#include "cuda/cuda_test_util.h"
#include "test_util.h"

namespace minfer::test {
namespace {

struct CudaRun {
  std::vector<int64_t> y;
  std::string error;  // the Error's message, when the kernel threw
};

// Runs the registered CUDA kernel over `host` viewed as [rows, n], starting `offset` elements
// into a device buffer (so that rows start unaligned).
template <typename T>
CudaRun run_cuda_kernel(DeviceContext& ctx, const std::vector<T>& host, int64_t rows, int64_t n,
                        int64_t offset) {
  Node node;
  node.name = "m";
  node.op_type = "MaxSumDiv3";
  node.domain = kMinferDomain;
  TensorInfo in;
  in.present = true;
  in.dtype = dtype_of<T>();
  in.shape = Shape{rows, n};
  PrepareContext prep(node, {in}, {});
  prep.device = Device::cuda(0);
  prep.device_context = &ctx;
  const KernelDef* def = OpRegistry::global().find_kernel(prep, Device::Type::CUDA);
  REQUIRE(def != nullptr);
  auto kernel = def->create();
  kernel->prepare(prep);

  const size_t bytes = (host.size() + size_t(offset)) * sizeof(T);
  void* x = cuda_backend().device_alloc(ctx, bytes + 16);
  void* y = cuda_backend().device_alloc(ctx, size_t(rows) * 8 + 8);
  void* ws = cuda_backend().device_alloc(ctx, prep.workspace_bytes);
  T* xs = static_cast<T*>(x) + offset;
  cuda_backend().copy_to_device(ctx, xs, host.data(), host.size() * sizeof(T));
  Tensor tx = Tensor::view(xs, dtype_of<T>(), Shape{rows, n}, Device::cuda(0));
  Tensor ty = Tensor::view(y, DType::i64, Shape{rows}, Device::cuda(0));
  RunContext run;
  run.inputs = {&tx};
  run.outputs = {&ty};
  run.workspace = ws;
  run.device_context = &ctx;
  CudaRun result;
  try {
    kernel->run(run);
    result.y.resize(size_t(rows));
    cuda_backend().copy_to_host(ctx, result.y.data(), y, size_t(rows) * 8);
    cuda_backend().synchronize(ctx);
  } catch (const Error& e) {
    result.error = e.what();
  }
  cuda_backend().device_free(ctx, x);
  cuda_backend().device_free(ctx, y);
  cuda_backend().device_free(ctx, ws);
  return result;
}

TEST_CASE("MaxSumDiv3 CUDA kernel equals the CPU kernel", "[cuda][max_sum_div3]") {
  if (!cuda_available()) {
    WARN("no GPU: skipping the MaxSumDiv3 CUDA kernel test");
    return;
  }
  auto ctx = cuda_backend().create_context(0);
  std::mt19937_64 rng(11);
  // Every path: a warp per row (n <= 2048), one block per row, several blocks per row and the
  // combine kernel; rows of every alignment; n = 0, 1, 2.
  const int64_t shapes[][2] = {{1, 0},       {4, 0},    {1, 1},      {3, 2},      {1, 33},
                               {7, 1000},    {2, 2048}, {3, 2049},   {1, 65537},  {4, 300001},
                               {1, 4000037}, {1000, 5}, {257, 4097}, {33, 100003}};
  for (auto& s : shapes) {
    const int64_t rows = s[0], n = s[1];
    for (int kind = 0; kind < 4; ++kind) {
      std::vector<int32_t> a(static_cast<size_t>(rows * n));
      std::vector<int64_t> b(a.size());
      for (size_t i = 0; i < a.size(); ++i) {
        switch (kind) {
          case 0:
            a[i] = int32_t(rng() % 2001) - 1000;
            break;
          case 1:
            a[i] = int32_t(uint32_t(rng()));
            break;
          case 2:
            a[i] = -int32_t(rng() % 1000000) - 1;
            break;  // all negative
          default:
            a[i] = (rng() & 1) ? INT32_MAX - int32_t(rng() % 4) : INT32_MIN;
            break;
        }
        b[i] = int64_t(rng() >> 24) - (int64_t{1} << 39);
      }
      std::vector<int64_t> want_a(static_cast<size_t>(rows)), want_b(want_a.size());
      REQUIRE(cpu::max_sum_div3(a.data(), rows, n, want_a.data(), 2) < 0);
      REQUIRE(cpu::max_sum_div3(b.data(), rows, n, want_b.data(), 2) < 0);
      for (int64_t offset : {0, 1, 3}) {
        INFO("rows " << rows << ", n " << n << ", kind " << kind << ", offset " << offset);
        CudaRun ra = run_cuda_kernel(*ctx, a, rows, n, offset);
        REQUIRE(ra.error.empty());
        REQUIRE(ra.y == want_a);
        CudaRun rb = run_cuda_kernel(*ctx, b, rows, n, offset);
        REQUIRE(rb.error.empty());
        REQUIRE(rb.y == want_b);
      }
    }
  }
}

TEST_CASE("MaxSumDiv3 CUDA kernel refuses int64 rows that overflow", "[cuda][max_sum_div3]") {
  if (!cuda_available()) {
    WARN("no GPU: skipping the MaxSumDiv3 CUDA overflow test");
    return;
  }
  auto ctx = cuda_backend().create_context(0);
  std::vector<int64_t> x = {1, 2, 3, INT64_MAX, 1, -5, 7, 8, 9};
  CudaRun r = run_cuda_kernel(*ctx, x, 3, 3, 0);
  REQUIRE(r.error.find("row 1") != std::string::npos);
  REQUIRE(r.error.find("INT64_MAX") != std::string::npos);
  // A long row that overflows only in total, across many blocks.
  std::vector<int64_t> big(1 << 22, int64_t{1} << 42);
  r = run_cuda_kernel(*ctx, big, 1, int64_t(big.size()), 0);
  REQUIRE(r.error.find("row 0") != std::string::npos);
}

TEST_CASE("MaxSumDiv3 runs in a CUDA Session", "[cuda][max_sum_div3][session]") {
  if (!cuda_available()) {
    WARN("no GPU: skipping the MaxSumDiv3 CUDA session test");
    return;
  }
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("X", DType::i32, Shape{5, 100000});
  b.output(b.op("MaxSumDiv3", "msd3", {x}, {}, kMinferDomain));
  SessionOptions options;
  options.device = Device::cuda(0);
  Session session(std::move(g), options);
  std::mt19937_64 rng(12);
  std::vector<int32_t> v(500000);
  for (auto& e : v) e = int32_t(rng() % 2001) - 1000;
  std::vector<int64_t> want(5);
  REQUIRE(cpu::max_sum_div3(v.data(), 5, 100000, want.data(), 2) < 0);
  Tensor y = session.run_one(Tensor::from_vector<int32_t>(v, Shape{5, 100000}));
  REQUIRE(y.to_vector<int64_t>() == want);
}

}  // namespace
}  // namespace minfer::test
