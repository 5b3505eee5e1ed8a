// The fp32 CUDA kernels (Conv/FusedConv, Gemm/FusedGemm, MaxPool, GlobalAveragePool, Relu,
// Add) and the data-movement ones (Transpose, Slice, Pad, Flatten) against the reference
// kernels, each driven through its KernelDef on device buffers.
#include "cuda/cuda_test_util.h"
#include "int8/int8_test_util.h"

namespace minfer::test {
namespace {

Attributes conv_attrs(std::vector<int64_t> kernel, std::vector<int64_t> strides,
                      std::vector<int64_t> pads, int64_t group = 1,
                      std::vector<int64_t> dilations = {}) {
  Attributes a;
  a.set("kernel_shape", kernel);
  a.set("strides", strides);
  a.set("pads", pads);
  a.set("group", group);
  if (!dilations.empty()) a.set("dilations", dilations);
  return a;
}

void require_close_to_reference(const NodeCase& c, DeviceContext& dc, double tolerance = 1e-5) {
  const Tensor want = run_reference_case(c);
  const Tensor got = run_cuda_case(c, dc);
  INFO(c.op << " " << c.inputs[0].shape().to_string());
  REQUIRE(got.shape() == want.shape());
  REQUIRE(relative_difference(got, want) <= tolerance);
}

TEST_CASE("CUDA Conv and FusedConv match the reference", "[cuda][conv]") {
  if (!cuda_available()) {
    WARN("no GPU: skipping the CUDA Conv test");
    return;
  }
  auto dc = cuda_backend().create_context(0);
  std::mt19937 rng(21);
  struct Case {
    Shape x, w;
    Attributes attrs;
  };
  const std::vector<Case> cases = {
      {{2, 8, 9, 9}, {16, 8, 3, 3}, conv_attrs({3, 3}, {1, 1}, {1, 1, 1, 1})},
      {{3, 16, 10, 10}, {8, 16, 1, 1}, conv_attrs({1, 1}, {1, 1}, {0, 0, 0, 0})},   // plain GEMM
      {{1, 6, 11, 7}, {12, 3, 3, 3}, conv_attrs({3, 3}, {2, 1}, {1, 0, 2, 1}, 2)},  // groups
      {{2, 4, 12, 12}, {4, 1, 3, 3}, conv_attrs({3, 3}, {1, 1}, {2, 2, 2, 2}, 4, {2, 2})},
      {{2, 3, 15, 15}, {8, 3, 7, 7}, conv_attrs({7, 7}, {2, 2}, {3, 3, 3, 3})},
      {{2, 8, 8, 8}, {6, 8, 1, 1}, conv_attrs({1, 1}, {2, 2}, {0, 0, 0, 0})},  // strided 1x1
      {{2, 5, 20}, {7, 5, 3}, conv_attrs({3}, {1}, {1, 1})},                   // 1-D
  };
  for (const Case& cs : cases) {
    NodeCase c{"Conv", "", cs.attrs, {random_tensor(cs.x, rng), random_tensor(cs.w, rng)}, {1}};
    require_close_to_reference(c, *dc);
    c.inputs.push_back(random_tensor(Shape{cs.w[0]}, rng));
    c.constants = {1, 2};
    require_close_to_reference(c, *dc);
    // FusedConv: bias, residual and an activation.
    const Tensor y = run_reference_case(c);
    c.op = "FusedConv";
    c.domain = kMinferDomain;
    c.inputs.push_back(random_tensor(y.shape(), rng));
    c.attrs.set("activation", std::string("Relu"));
    require_close_to_reference(c, *dc);
    c.attrs.set("activation", std::string("Clip"));
    c.attrs.set("activation_min", -0.5f);
    c.attrs.set("activation_max", 0.75f);
    require_close_to_reference(c, *dc);
  }
}

TEST_CASE("CUDA Gemm and FusedGemm match the reference", "[cuda][gemm]") {
  if (!cuda_available()) {
    WARN("no GPU: skipping the CUDA Gemm test");
    return;
  }
  auto dc = cuda_backend().create_context(0);
  std::mt19937 rng(22);
  const int64_t m = 5, k = 37, n = 11;
  for (int trans_a = 0; trans_a < 2; ++trans_a)
    for (int trans_b = 0; trans_b < 2; ++trans_b)
      for (const Shape& c_shape : {Shape{}, Shape{n}, Shape{m, 1}, Shape{m, n}}) {
        Attributes a;
        a.set("transA", int64_t{trans_a});
        a.set("transB", int64_t{trans_b});
        a.set("alpha", 0.5f);
        a.set("beta", 2.f);
        NodeCase c{"Gemm",
                   "",
                   a,
                   {random_tensor(trans_a ? Shape{k, m} : Shape{m, k}, rng),
                    random_tensor(trans_b ? Shape{n, k} : Shape{k, n}, rng),
                    c_shape.rank() ? random_tensor(c_shape, rng) : Tensor()},
                   {1, 2}};
        INFO("transA " << trans_a << " transB " << trans_b << " C " << c_shape.to_string());
        require_close_to_reference(c, *dc);
        c.op = "FusedGemm";
        c.domain = kMinferDomain;
        c.attrs.set("activation", std::string("Relu"));
        require_close_to_reference(c, *dc);
      }
}

TEST_CASE("CUDA MaxPool, GlobalAveragePool, Relu and Add match the reference", "[cuda][pool]") {
  if (!cuda_available()) {
    WARN("no GPU: skipping the CUDA pooling and elementwise test");
    return;
  }
  auto dc = cuda_backend().create_context(0);
  std::mt19937 rng(23);
  Attributes pool;
  pool.set("kernel_shape", std::vector<int64_t>{3, 3});
  pool.set("strides", std::vector<int64_t>{2, 2});
  pool.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  require_close_to_reference({"MaxPool", "", pool, {random_tensor(Shape{2, 5, 13, 12}, rng)}, {}},
                             *dc, 0);
  pool.set("ceil_mode", int64_t{1});
  pool.set("dilations", std::vector<int64_t>{2, 1});
  require_close_to_reference({"MaxPool", "", pool, {random_tensor(Shape{1, 3, 9, 10}, rng)}, {}},
                             *dc, 0);
  require_close_to_reference(
      {"GlobalAveragePool", "", {}, {random_tensor(Shape{3, 7, 9, 11}, rng)}, {}}, *dc);
  require_close_to_reference({"Relu", "", {}, {random_tensor(Shape{3, 1000}, rng)}, {}}, *dc, 0);
  require_close_to_reference(
      {"Add", "", {}, {random_tensor(Shape{4, 33}, rng), random_tensor(Shape{4, 33}, rng)}, {}},
      *dc, 0);
  // Broadcasting is left to the CPU kernel.
  NodeCase broadcast{
      "Add", "", {}, {random_tensor(Shape{4, 33}, rng), random_tensor(Shape{33}, rng)}, {}};
  REQUIRE(cuda_kernel_for(broadcast, *dc) == nullptr);
}

TEST_CASE("CUDA Transpose, Slice, Pad and Flatten move what the reference moves",
          "[cuda][layout]") {
  if (!cuda_available()) {
    WARN("no GPU: skipping the CUDA layout test");
    return;
  }
  auto dc = cuda_backend().create_context(0);
  std::mt19937 rng(24);
  auto ints = [](std::vector<int64_t> v) {
    return Tensor::from_vector(v, Shape{int64_t(v.size())});
  };
  for (DType t : {DType::f32, DType::i8}) {
    const Tensor x =
        t == DType::f32 ? random_tensor(Shape{2, 6, 5, 4}, rng) : random_i8(Shape{2, 6, 5, 4}, rng);
    Attributes perm;
    perm.set("perm", std::vector<int64_t>{0, 2, 3, 1});
    std::vector<NodeCase> cases = {
        {"Transpose", "", perm, {x}, {}},
        {"Slice",
         "",
         {},
         {x, ints({0, 1}), ints({6, 5}), ints({1, 2}), ints({2, 2})},
         {1, 2, 3, 4}},
        {"Slice", "", {}, {x, ints({-1}), ints({-100}), ints({3}), ints({-2})}, {1, 2, 3, 4}},
        {"Pad", "", {}, {x, ints({0, 2, 0, 1, 0, 3, 1, 0})}, {1}},
        {"Flatten", "", {}, {x}, {}},
    };
    // A pad value, and a non-constant mode.
    Tensor value = t == DType::f32 ? Tensor::scalar<float>(2.5f) : Tensor::scalar<int8_t>(-7);
    cases.push_back({"Pad", "", {}, {x, ints({1, 0, 2, 0, 0, 1, 0, 2}), value}, {1, 2}});
    Attributes reflect;
    reflect.set("mode", std::string("reflect"));
    cases.push_back({"Pad", "", reflect, {x, ints({0, 0, 2, 1, 0, 0, 1, 3})}, {1}});
    for (const NodeCase& c : cases) {
      INFO(c.op << " on " << dtype_name(t));
      require_equal(run_cuda_case(c, *dc), run_reference_case(c));
    }
  }
}

}  // namespace
}  // namespace minfer::test
