// MaxSumDiv3: the reference kernel against brute force, the CPU kernel against the reference,
// shapes, dtypes, the int64 overflow error, and the op through a Session and an ONNX file.
#include <climits>
#include <cstdint>
#include <random>
#include <vector>

#include "backends/cpu/max_sum_div3.h"
#include "ops/max_sum_div3.h"
#include "test_util.h"

namespace minfer::test {
namespace {

Node msd3_node() {
  Node n;
  n.name = "m";
  n.op_type = "MaxSumDiv3";
  n.domain = kMinferDomain;
  return n;
}

const OpSchema& msd3_schema() { return OpRegistry::global().get_op(kMinferDomain, "MaxSumDiv3"); }

// The largest subset sum divisible by 3, by trying all 2^n subsets.
int64_t brute_force(const std::vector<int64_t>& x) {
  const size_t n = x.size();
  int64_t best = 0;
  for (uint32_t mask = 0; mask < (1u << n); ++mask) {
    int64_t s = 0;
    for (size_t i = 0; i < n; ++i)
      if (mask >> i & 1) s += x[i];
    if (s % 3 == 0 && s > best) best = s;
  }
  return best;
}

template <typename T>
Tensor row_tensor(const std::vector<int64_t>& x) {
  std::vector<T> v(x.begin(), x.end());
  return Tensor::from_vector<T>(v, Shape{int64_t(x.size())});
}

Tensor reference(const Tensor& x) {
  Node node = msd3_node();
  return msd3_schema().reference(node, {x}).at(0);
}

// The CPU kernel through the registry, as the session runs it.
Tensor run_cpu_kernel(const Tensor& x, int threads) {
  Node node = msd3_node();
  TensorInfo in;
  in.present = true;
  in.dtype = x.dtype();
  in.shape = x.shape();
  PrepareContext prep(node, {in}, {});
  prep.threads = threads;
  const KernelDef* def = OpRegistry::global().find_kernel(prep, Device::Type::CPU);
  REQUIRE(def != nullptr);
  std::unique_ptr<Kernel> kernel = def->create();
  kernel->prepare(prep);
  std::vector<int64_t> dims(x.shape().dims().begin(), x.shape().dims().end() - 1);
  Tensor y(DType::i64, Shape(dims));
  RunContext run;
  run.inputs = {&x};
  run.outputs = {&y};
  run.threads = threads;
  kernel->run(run);
  return y;
}

std::vector<int64_t> random_values(std::mt19937_64& rng, int64_t n, int64_t lo, int64_t hi) {
  std::uniform_int_distribution<int64_t> dist(lo, hi);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

// The kinds of int32 data the tests draw from.
std::vector<int64_t> int32_data(std::mt19937_64& rng, int64_t n, int kind) {
  switch (kind) {
    case 0:
      return random_values(rng, n, -10, 10);  // many zeros and ties
    case 1:
      return random_values(rng, n, -1000, 1000);
    case 2:
      return random_values(rng, n, INT32_MIN, INT32_MAX);
    case 3:
      return random_values(rng, n, INT32_MIN, -1);  // all negative: the answer is 0
    case 4: {                                       // all = 1 (mod 3)
      auto v = random_values(rng, n, -300000, 300000);
      for (auto& x : v) x = 3 * x + 1;
      return v;
    }
    default: {  // near the int32 limits, INT32_MIN included
      auto v = random_values(rng, n, 0, 5);
      for (auto& x : v) x = (rng() & 1) ? INT32_MAX - x : INT32_MIN + x;
      return v;
    }
  }
}

TEST_CASE("MaxSumDiv3 reference and CPU kernel match brute force on all subsets",
          "[max_sum_div3]") {
  std::mt19937_64 rng(1);
  for (int trial = 0; trial < 3000; ++trial) {
    const int64_t n = trial % 17;
    const int kind = trial % 6;
    std::vector<int64_t> x = int32_data(rng, n, kind);
    const int64_t want = brute_force(x);
    INFO("n " << n << ", kind " << kind << ", trial " << trial);
    for (const Tensor& t : {row_tensor<int32_t>(x), row_tensor<int64_t>(x)}) {
      REQUIRE(reference(t).data<int64_t>()[0] == want);
      REQUIRE(run_cpu_kernel(t, 1).data<int64_t>()[0] == want);
    }
  }
}

TEST_CASE("MaxSumDiv3 small and edge cases", "[max_sum_div3]") {
  auto both = [](std::vector<int64_t> x) {
    int64_t a = reference(row_tensor<int32_t>(x)).data<int64_t>()[0];
    int64_t b = run_cpu_kernel(row_tensor<int32_t>(x), 2).data<int64_t>()[0];
    REQUIRE(a == b);
    return a;
  };
  CHECK(both({}) == 0);
  CHECK(both({3}) == 3);
  CHECK(both({4}) == 0);
  CHECK(both({-3}) == 0);
  CHECK(both({0}) == 0);
  CHECK(both({1, 2}) == 3);
  CHECK(both({4, 4}) == 0);
  CHECK(both({4, -1}) == 3);
  CHECK(both({5, -2}) == 3);
  CHECK(both({-1, -2, -4}) == 0);
  CHECK(both({1, 4, 7, 10}) == 21);
  CHECK(both({3, 6, 5, 1, 8}) == 18);  // the classic example
  CHECK(both({INT32_MIN, INT32_MIN, INT32_MIN}) == 0);
  CHECK(both({INT32_MAX, INT32_MAX, INT32_MAX}) == 3 * int64_t(INT32_MAX));
  CHECK(both({INT32_MAX, 1}) == 0);  // INT32_MAX = 1 (mod 3)
  CHECK(both({INT32_MAX, 2}) == int64_t(INT32_MAX) + 2);
  CHECK(both({INT32_MIN, 1}) == 0);  // |INT32_MIN| = 2^31 = 2 (mod 3)
  CHECK(both({INT32_MIN, 2}) == 0);
  CHECK(both({INT32_MIN, 5, 3}) == 3);
}

TEST_CASE("MaxSumDiv3 CPU kernel matches the reference on large arrays", "[max_sum_div3]") {
  std::mt19937_64 rng(2);
  // Sizes around the SIMD width and the per-thread chunk (2^16) of the CPU kernel.
  const int64_t sizes[] = {5,    8,     9,     31,         32,         33,
                           1000, 65535, 65536, 131072 + 7, 262144 + 3, (1 << 20) + 5};
  for (int64_t n : sizes) {
    for (int kind = 0; kind < 6; ++kind) {
      std::vector<int64_t> x = int32_data(rng, n, kind);
      Tensor t32 = row_tensor<int32_t>(x), t64 = row_tensor<int64_t>(x);
      const int64_t want = reference(t32).data<int64_t>()[0];
      INFO("n " << n << ", kind " << kind);
      if (kind == 3) REQUIRE(want == 0);
      for (int threads : {1, 2, 3}) {
        REQUIRE(run_cpu_kernel(t32, threads).data<int64_t>()[0] == want);
        REQUIRE(run_cpu_kernel(t64, threads).data<int64_t>()[0] == want);
      }
    }
  }
}

TEST_CASE("MaxSumDiv3 CPU kernel on 2^26 values", "[max_sum_div3][slow]") {
  std::mt19937_64 rng(3);
  Tensor t = row_tensor<int32_t>(int32_data(rng, int64_t{1} << 26, 2));
  REQUIRE(run_cpu_kernel(t, 2).data<int64_t>()[0] == reference(t).data<int64_t>()[0]);
}

TEST_CASE("MaxSumDiv3 reduces the last axis of batched rows", "[max_sum_div3]") {
  std::mt19937_64 rng(4);
  for (int64_t n : {0, 1, 2, 17, 5000, 140000}) {
    const Shape shape{2, 3, n};
    std::vector<int64_t> x = int32_data(rng, 6 * n, 1);
    std::vector<int32_t> v(x.begin(), x.end());
    Tensor t = Tensor::from_vector<int32_t>(v, shape);
    Tensor ref = reference(t);
    REQUIRE(ref.shape() == Shape{2, 3});
    for (int64_t r = 0; r < 6; ++r) {
      std::vector<int64_t> row(x.begin() + r * n, x.begin() + (r + 1) * n);
      REQUIRE(ref.data<int64_t>()[r] == reference(row_tensor<int64_t>(row)).data<int64_t>()[0]);
    }
    for (int threads : {1, 2, 8}) {
      Tensor y = run_cpu_kernel(t, threads);
      REQUIRE(y.shape() == Shape{2, 3});
      REQUIRE(y.to_vector<int64_t>() == ref.to_vector<int64_t>());
    }
  }
}

TEST_CASE("MaxSumDiv3 int64 input beyond the int32 range", "[max_sum_div3]") {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t n = trial % 13;
    std::vector<int64_t> x = random_values(rng, n, -(int64_t{1} << 58), int64_t{1} << 58);
    const int64_t want = brute_force(x);
    Tensor t = row_tensor<int64_t>(x);
    REQUIRE(reference(t).data<int64_t>()[0] == want);
    REQUIRE(run_cpu_kernel(t, 2).data<int64_t>()[0] == want);
  }
  // Extreme values whose sum of positives still fits.
  std::vector<int64_t> x = {INT64_MIN, INT64_MIN, INT64_MAX, -1, -2, 0};
  Tensor t = row_tensor<int64_t>(x);
  const int64_t ref = reference(t).data<int64_t>()[0];
  REQUIRE(run_cpu_kernel(t, 1).data<int64_t>()[0] == ref);
  // INT64_MAX = 1 (mod 3): the best is INT64_MAX - 1 (adding -1).
  REQUIRE(ref == INT64_MAX - 1);
}

TEST_CASE("MaxSumDiv3 refuses rows whose positive values sum past INT64_MAX", "[max_sum_div3]") {
  // Row 0 is fine; row 1 overflows.
  Tensor t = Tensor::from_vector<int64_t>({1, 2, 3, INT64_MAX, 1, -5}, Shape{2, 3});
  for (int path = 0; path < 2; ++path) {
    INFO((path == 0 ? "reference" : "CPU kernel"));
    try {
      if (path == 0)
        reference(t);
      else
        run_cpu_kernel(t, 2);
      FAIL("no error");
    } catch (const Error& e) {
      REQUIRE(e.code() == ErrorCode::InvalidArgument);
      std::string m = e.what();
      CHECK(m.find("MaxSumDiv3 'm'") != std::string::npos);
      CHECK(m.find("row 1") != std::string::npos);
      CHECK(m.find("INT64_MAX") != std::string::npos);
    }
  }
  // A long row that overflows only in total (each chunk fits), split across threads.
  std::vector<int64_t> big(300000, int64_t{1} << 50);
  Tensor tb = row_tensor<int64_t>(big);
  REQUIRE_THROWS_AS(run_cpu_kernel(tb, 2), Error);
  int64_t y = 0;
  REQUIRE(cpu::max_sum_div3(big.data(), 1, int64_t(big.size()), &y, 2) == 0);
}

TEST_CASE("MaxSumDiv3 mod3 helper is exact", "[max_sum_div3]") {
  std::mt19937_64 rng(6);
  auto check32 = [](uint32_t u) { REQUIRE(msd3::mod3(u) == u % 3); };
  for (uint32_t u = 0; u < 100000; ++u) check32(u);
  for (uint32_t u = (1u << 31) - 100000; u <= (1u << 31); ++u) check32(u);
  for (int i = 0; i < 100000; ++i) check32(uint32_t(rng() % ((uint64_t{1} << 31) + 1)));
  for (int i = 0; i < 100000; ++i) {
    uint64_t u = rng() >> 1;  // <= 2^63
    REQUIRE(msd3::mod3(u) == u % 3);
  }
  REQUIRE(msd3::mod3(uint64_t{1} << 63) == (uint64_t{1} << 63) % 3);
}

TEST_CASE("MaxSumDiv3 mod3 helper on every int32 magnitude", "[max_sum_div3][slow]") {
  uint32_t bad = msd3::mod3(uint32_t{1} << 31) != 2;
  for (uint32_t u = 0; u < (uint32_t{1} << 31); ++u) bad += msd3::mod3(u) != u % 3;  // SIMD
  REQUIRE(bad == 0);
}

TEST_CASE("MaxSumDiv3 schema: types and shapes and registration", "[max_sum_div3]") {
  const OpSchema& s = msd3_schema();
  CHECK(s.doc.find("INT64_MAX") != std::string::npos);
  bool listed = false;
  for (const OpSchema* op : OpRegistry::global().ops()) listed |= op == &s;
  CHECK(listed);
  bool cpu = false, cuda = false;
  for (const KernelDef* k : OpRegistry::global().kernels(kMinferDomain, "MaxSumDiv3")) {
    cpu |= k->device == Device::Type::CPU;
    cuda |= k->device == Device::Type::CUDA;
  }
  CHECK(cpu);
#ifdef MINFER_WITH_CUDA
  CHECK(cuda);
#else
  CHECK_FALSE(cuda);
#endif

  // The inferred dtype and shape of Y.
  auto infer = [](DType dtype, Shape shape) {
    Graph g;
    Value* x = g.add_input("X", dtype, shape);
    g.add_output(g.add_node("MaxSumDiv3", "m", {x}, 1, {}, kMinferDomain)->outputs[0]);
    g.infer_shapes();
    return std::make_pair(g.outputs()[0]->dtype, g.outputs()[0]->shape);
  };
  Shape batch{-1, 4, 10};
  batch.symbols = {"N", "", ""};
  auto [dtype, shape] = infer(DType::i32, batch);
  CHECK(dtype == DType::i64);
  CHECK(shape.to_string() == "[N,4]");
  CHECK(infer(DType::i64, Shape{7}).second == Shape{});
  try {
    infer(DType::f32, Shape{3});
    FAIL("f32 accepted");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::InvalidModel);
    CHECK(std::string(e.what()).find("i32 or i64") != std::string::npos);
  }
  REQUIRE_THROWS_WITH(infer(DType::i32, Shape{}), Catch::Contains("rank >= 1"));
}

TEST_CASE("MaxSumDiv3 runs in a Session from the builder and from an ONNX file",
          "[max_sum_div3][session]") {
  Graph g;
  GraphBuilder b(g);
  Shape in_shape{-1, 1000};
  in_shape.symbols = {"batch", ""};
  Value* x = b.input("X", DType::i32, in_shape);
  b.output(b.op("MaxSumDiv3", "msd3", {x}, {}, kMinferDomain));
  const auto path = temp_dir("msd3_session") / "msd3.onnx";
  save_onnx(g, path.string());

  std::mt19937_64 rng(7);
  std::vector<int64_t> values = int32_data(rng, 3 * 1000, 1);
  Tensor t = Tensor::from_vector<int32_t>(std::vector<int32_t>(values.begin(), values.end()),
                                          Shape{3, 1000});
  Tensor want = reference(t);
  Session built(std::move(g));
  Session loaded = Session::from_file(path.string());
  for (const Session* s : {&built, &loaded}) {
    Tensor y = s->run_one(t);
    REQUIRE(y.dtype() == DType::i64);
    REQUIRE(y.shape() == Shape{3});
    REQUIRE(y.to_vector<int64_t>() == want.to_vector<int64_t>());
  }
}

}  // namespace
}  // namespace minfer::test
