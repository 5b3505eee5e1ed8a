// ConvInteger, MatMulInteger and DynamicQuantizeLinear: the ONNX spec's examples, random cases
// against plain int64 loops written here, DynamicQuantizeLinear against ONNX Runtime bit for
// bit, errors, and the ONNX conformance cases.
#include <limits>

#include "op_test_util.h"
#include "runtime/conformance.h"
#include "runtime/io_test_util.h"

using namespace minfer;
using namespace minfer::test;

namespace {

Tensor u8(Shape s, std::vector<uint8_t> v) { return Tensor::from_vector<uint8_t>(v, s); }
Tensor s8(Shape s, std::vector<int8_t> v) { return Tensor::from_vector<int8_t>(v, s); }

// A random i8 or u8 tensor.
Tensor random_q(DType t, Shape s, std::mt19937& rng) {
  Tensor r(t, std::move(s));
  std::uniform_int_distribution<int> d(t == DType::i8 ? -128 : 0, t == DType::i8 ? 127 : 255);
  for (int64_t i = 0; i < r.numel(); ++i) {
    if (t == DType::i8)
      r.data<int8_t>()[i] = static_cast<int8_t>(d(rng));
    else
      r.data<uint8_t>()[i] = static_cast<uint8_t>(d(rng));
  }
  return r;
}

int64_t q_at(const Tensor& t, int64_t i) {
  return t.dtype() == DType::i8 ? t.data<int8_t>()[i] : t.data<uint8_t>()[i];
}

// ---- ConvInteger oracle: the ONNX definition, one output element at a time -----------------

struct ConvCase {
  Shape x, w;
  Attributes a;
  bool per_channel_zp = false;
};

// 2-D (or 1-D/3-D through `dims`) direct convolution in int64 over explicit positions.
Tensor conv_integer_oracle(const Tensor& x, const Tensor& w, int64_t xzp,
                           const std::vector<int64_t>& wzp, const Attributes& a,
                           const Shape& out_shape) {
  const size_t k = x.rank() - 2;
  const int64_t group = a.get_int("group", 1);
  std::vector<int64_t> strides = a.get_ints("strides", std::vector<int64_t>(k, 1));
  std::vector<int64_t> dil = a.get_ints("dilations", std::vector<int64_t>(k, 1));
  std::vector<int64_t> pads = a.get_ints("pads", std::vector<int64_t>(2 * k, 0));
  const std::string auto_pad = a.get_string("auto_pad", "NOTSET");
  std::vector<int64_t> begin(k);
  for (size_t d = 0; d < k; ++d) {
    begin[d] = pads[d];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t in = x.dim(2 + d), out = out_shape[2 + d];
      const int64_t total =
          std::max<int64_t>(0, (out - 1) * strides[d] + (w.dim(2 + d) - 1) * dil[d] + 1 - in);
      begin[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    }
  }
  Tensor y(DType::i32, out_shape);
  const int64_t N = x.dim(0), C = x.dim(1), M = w.dim(0), cg = C / group, mg = M / group;
  std::vector<int64_t> in_sp(x.shape().dims().begin() + 2, x.shape().dims().end());
  std::vector<int64_t> k_sp(w.shape().dims().begin() + 2, w.shape().dims().end());
  std::vector<int64_t> o_sp(out_shape.dims().begin() + 2, out_shape.dims().end());
  auto numel = [](const std::vector<int64_t>& v) {
    int64_t n = 1;
    for (int64_t d : v) n *= d;
    return n;
  };
  auto unravel = [](int64_t i, const std::vector<int64_t>& dims) {
    std::vector<int64_t> idx(dims.size());
    for (size_t d = dims.size(); d-- > 0;) idx[d] = i % dims[d], i /= dims[d];
    return idx;
  };
  int64_t yi = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t o = 0; o < numel(o_sp); ++o) {
        const std::vector<int64_t> oi = unravel(o, o_sp);
        int64_t acc = 0;
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t t = 0; t < numel(k_sp); ++t) {
            const std::vector<int64_t> ti = unravel(t, k_sp);
            int64_t xoff = 0;
            bool inside = true;
            for (size_t d = 0; d < k; ++d) {
              const int64_t p = oi[d] * strides[d] - begin[d] + ti[d] * dil[d];
              inside = inside && p >= 0 && p < in_sp[d];
              xoff = xoff * in_sp[d] + p;
            }
            if (!inside) continue;  // padding holds the zero point: contributes 0
            const int64_t xv = q_at(x, (n * C + (m / mg) * cg + c) * numel(in_sp) + xoff) - xzp;
            const int64_t wv =
                q_at(w, (m * cg + c) * numel(k_sp) + t) - wzp[wzp.size() > 1 ? m : 0];
            acc += xv * wv;
          }
        y.data<int32_t>()[yi++] = static_cast<int32_t>(acc);
      }
  return y;
}

// ---- MatMulInteger oracle ------------------------------------------------------------------

// Batched [B, M, K] x [B, K, N] with per-row/per-column zero points already expanded.
void matmul_integer_oracle_2d(const Tensor& a, int64_t a_off, const Tensor& b, int64_t b_off,
                              const std::vector<int64_t>& azp, const std::vector<int64_t>& bzp,
                              int64_t M, int64_t K, int64_t N, int32_t* y) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      int64_t acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += (q_at(a, a_off + i * K + k) - azp[i]) * (q_at(b, b_off + k * N + j) - bzp[j]);
      y[i * N + j] = static_cast<int32_t>(acc);
    }
}

}  // namespace

// ---- ConvInteger ---------------------------------------------------------------------------

TEST_CASE("ConvInteger: the ONNX spec's examples", "[integer][ops]") {
  Tensor x = u8({1, 1, 3, 3}, {2, 3, 4, 5, 6, 7, 8, 9, 10});
  Tensor w = u8({1, 1, 2, 2}, {1, 1, 1, 1});
  Tensor xzp = Tensor::scalar<uint8_t>(1);
  require_values<int32_t>(ref1("ConvInteger", {x, w, xzp}), {1, 1, 2, 2}, {12, 16, 24, 28});
  // Padding holds the zero point, so it contributes nothing.
  require_values<int32_t>(
      ref1("ConvInteger", {x, w, xzp}, attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}})),
      {1, 1, 4, 4}, {1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9});
  // No zero points: plain integer convolution; int8 weights with a per-channel zero point.
  Tensor ws = s8({2, 1, 1, 1}, {-2, 3});
  Tensor wzp = s8({2}, {1, -1});
  require_values<int32_t>(ref1("ConvInteger", {x, ws, Tensor(), wzp}), {1, 2, 3, 3},
                          {-6, -9, -12, -15, -18, -21, -24, -27, -30,  // (x) * (-2 - 1)
                           8, 12, 16, 20, 24, 28, 32, 36, 40});        // (x) * (3 + 1)
}

TEST_CASE("ConvInteger: random cases against the definition", "[integer][ops]") {
  std::mt19937 rng(3);
  using V = std::vector<int64_t>;
  const std::vector<ConvCase> cases{
      {{2, 3, 7, 6}, {4, 3, 3, 3}, attrs({{"pads", V{1, 1, 1, 1}}}), false},
      {{1, 4, 9, 9},
       {6, 2, 3, 2},
       attrs({{"group", int64_t{2}}, {"strides", V{2, 1}}, {"pads", V{0, 2, 1, 1}}}),
       true},
      {{1, 4, 8, 8},
       {4, 1, 3, 3},
       attrs({{"group", int64_t{4}}, {"dilations", V{2, 2}}, {"pads", V{2, 2, 2, 2}}}),
       true},
      {{1, 2, 7, 5},
       {3, 2, 2, 3},
       attrs({{"auto_pad", std::string("SAME_UPPER")}, {"strides", V{2, 2}}}),
       false},
      {{1, 2, 6, 5}, {3, 2, 3, 2}, attrs({{"auto_pad", std::string("SAME_LOWER")}}), true},
      {{1, 3, 5, 5}, {2, 3, 5, 5}, attrs({{"auto_pad", std::string("VALID")}}), false},
      {{1, 3, 4, 4}, {2, 3, 5, 5}, attrs({{"pads", V{3, 3, 3, 3}}, {"strides", V{3, 2}}}), true},
      {{2, 3, 11}, {4, 3, 3}, attrs({{"pads", V{1, 2}}, {"strides", V{2}}}), true},
      {{1, 2, 4, 5, 3}, {3, 2, 2, 3, 2}, attrs({{"pads", V{1, 0, 1, 0, 1, 1}}}), true},
  };
  for (size_t ci = 0; ci < cases.size(); ++ci)
    for (DType xt : {DType::u8, DType::i8})
      for (DType wt : {DType::u8, DType::i8}) {
        const ConvCase& c = cases[ci];
        INFO("case " << ci << " x " << dtype_name(xt) << " w " << dtype_name(wt));
        Tensor x = random_q(xt, c.x, rng), w = random_q(wt, c.w, rng);
        Tensor xzp = random_q(xt, {}, rng);
        Tensor wzp = random_q(wt, c.per_channel_zp ? Shape{c.w[0]} : Shape{}, rng);
        std::vector<int64_t> wz;
        for (int64_t i = 0; i < wzp.numel(); ++i) wz.push_back(q_at(wzp, i));
        Tensor y = ref1("ConvInteger", {x, w, xzp, wzp}, c.a);
        require_equal(y, conv_integer_oracle(x, w, q_at(xzp, 0), wz, c.a, y.shape()));
        // Absent zero points are zeros.
        Tensor y0 = ref1("ConvInteger", {x, w}, c.a);
        require_equal(y0, conv_integer_oracle(x, w, 0, {0}, c.a, y0.shape()));
      }
}

TEST_CASE("ConvInteger: extreme values accumulate in int32", "[integer][ops]") {
  // 255 * 255 * (64 * 9) = 37454400: well inside int32, far outside 16 bits.
  Tensor x(DType::u8, Shape{1, 64, 3, 3}), w(DType::u8, Shape{1, 64, 3, 3});
  std::fill(x.data<uint8_t>(), x.data<uint8_t>() + x.numel(), uint8_t{255});
  std::fill(w.data<uint8_t>(), w.data<uint8_t>() + w.numel(), uint8_t{0});
  Tensor y = ref1("ConvInteger", {x, w, Tensor::scalar<uint8_t>(0), Tensor::scalar<uint8_t>(255)});
  require_values<int32_t>(y, {1, 1, 1, 1}, {-37454400});
}

TEST_CASE("ConvInteger: inference and errors name the node", "[integer][ops]") {
  auto out = infer("ConvInteger",
                   {info(DType::u8, sym({-1, 3, 8, 8}, {"N", "", "", ""})),
                    info(DType::i8, {5, 3, 3, 3}), info(DType::u8, {}), info(DType::i8, {5})},
                   attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  CHECK(out[0].dtype == DType::i32);
  CHECK(shape_str(out[0]) == "[N,5,8,8]");
  const TensorInfo x = info(DType::u8, {1, 3, 8, 8}), w = info(DType::u8, {5, 3, 3, 3});
  require_error(
      [&] {
        infer("ConvInteger", {info({1, 3, 8, 8}), w});
      },
      ErrorCode::InvalidModel, "input 0 ('x0') is f32; ConvInteger supports u8, i8");
  require_error(
      [&] {
        infer("ConvInteger", {x, info(DType::i32, {5, 3, 3, 3})});
      },
      ErrorCode::InvalidModel, "input 1 ('x1') is i32");
  require_error(
      [&] {
        infer("ConvInteger", {x, w, info(DType::i8, {})});
      },
      ErrorCode::InvalidModel, "inputs 0 and 2 must have the same dtype");
  require_error(
      [&] {
        infer("ConvInteger", {x, w, info(DType::u8, {3})});
      },
      ErrorCode::InvalidModel, "x_zero_point has shape [3]; expected a scalar");
  require_error(
      [&] {
        infer("ConvInteger", {x, w, absent(), info(DType::u8, {4})});
      },
      ErrorCode::InvalidModel, "w_zero_point has shape [4]; expected a scalar or [5]");
  require_error(
      [&] {
        infer("ConvInteger", {x, info(DType::u8, {5, 2, 3, 3})});
      },
      ErrorCode::InvalidModel, "weight has 2 input channels per group, input has 3");
  require_error(
      [&] {
        infer("ConvInteger", {x, w}, attrs({{"auto_pad", std::string("BOGUS")}}));
      },
      ErrorCode::InvalidModel, "auto_pad 'BOGUS'");
  require_error([&] { infer("ConvInteger", {x}); }, ErrorCode::InvalidModel,
                "has 1 inputs, expected 2..4");
  // The reference kernel validates the actual tensors the same way.
  require_error(
      [&] {
        ref1("ConvInteger", {u8({1, 1, 2, 2}, {1, 2, 3, 4}), u8({1, 2, 1, 1}, {1, 1})});
      },
      ErrorCode::InvalidModel, "weight has 2 input channels");
}

// ---- MatMulInteger -------------------------------------------------------------------------

TEST_CASE("MatMulInteger: the ONNX spec's example", "[integer][ops]") {
  Tensor a = u8({4, 3}, {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0});
  Tensor b = u8({3, 2}, {1, 4, 2, 5, 3, 6});
  Tensor y = ref1("MatMulInteger", {a, b, Tensor::scalar<uint8_t>(12), Tensor::scalar<uint8_t>(0)});
  require_values<int32_t>(y, {4, 2}, {-38, -83, -44, -98, -50, -113, -56, -128});
  // Per-row a zero point and per-column b zero point.
  Tensor y2 = ref1("MatMulInteger",
                   {a, b, u8({4}, {11, 10, 9, 8}), u8({2}, {1, 4})});  // row i becomes [0,-4,-8]
  require_values<int32_t>(y2, {4, 2}, {-20, -20, -20, -20, -20, -20, -20, -20});
}

TEST_CASE("MatMulInteger: random batched and broadcast cases against the definition",
          "[integer][ops]") {
  std::mt19937 rng(5);
  struct Case {
    Shape a, b, azp, bzp, y;
  };
  // zero point shapes: {} scalar, [M] per row / [N] per column, or broadcasting N-d forms.
  const std::vector<Case> cases{
      {{5, 7}, {7, 3}, {}, {}, {5, 3}},
      {{5, 7}, {7, 3}, {5}, {3}, {5, 3}},
      {{2, 5, 7}, {7, 3}, {1}, {1, 3}, {2, 5, 3}},
      {{2, 1, 4, 6}, {3, 6, 2}, {2, 1, 4, 1}, {3, 1, 2}, {2, 3, 4, 2}},
      {{7}, {7, 3}, {}, {3}, {3}},
      {{4, 7}, {7}, {4}, {}, {4}},
      {{7}, {2, 7, 3}, {1}, {2, 1, 3}, {2, 3}},
      {{3, 1, 17}, {17, 40}, {3, 1, 1}, {40}, {3, 1, 40}},
  };
  for (size_t ci = 0; ci < cases.size(); ++ci)
    for (DType at : {DType::u8, DType::i8})
      for (DType bt : {DType::u8, DType::i8}) {
        const Case& c = cases[ci];
        INFO("case " << ci << " a " << dtype_name(at) << " b " << dtype_name(bt));
        Tensor a = random_q(at, c.a, rng), b = random_q(bt, c.b, rng);
        Tensor azp = random_q(at, c.azp, rng), bzp = random_q(bt, c.bzp, rng);
        Tensor y = ref1("MatMulInteger", {a, b, azp, bzp});
        REQUIRE(y.shape() == c.y);
        // The oracle: promote, broadcast the batch by hand (cases have at most one broadcast
        // pattern each: batch dims equal or 1), expand the zero points per row / column.
        const int64_t M = c.a.rank() == 1 ? 1 : c.a[c.a.rank() - 2], K = c.a[c.a.rank() - 1];
        const int64_t N = c.b.rank() == 1 ? 1 : c.b[c.b.rank() - 1];
        const int64_t batches = y.numel() / (M * N);
        auto batch_dims = [](const Shape& s, size_t drop) {
          return std::vector<int64_t>(s.dims().begin(), s.dims().end() - std::min(drop, s.rank()));
        };
        std::vector<int64_t> out_b = batch_dims(y.shape(), (c.a.rank() >= 2) + (c.b.rank() >= 2));
        // Offset of batch entry `bi` (over out_b) in an operand whose batch dims are `dims`.
        auto offset = [&](int64_t bi, std::vector<int64_t> dims) {
          while (dims.size() < out_b.size()) dims.insert(dims.begin(), 1);
          int64_t off = 0, rem = bi;
          std::vector<int64_t> idx(out_b.size());
          for (size_t d = out_b.size(); d-- > 0;) idx[d] = rem % out_b[d], rem /= out_b[d];
          for (size_t d = 0; d < dims.size(); ++d)
            off = off * dims[d] + (dims[d] == 1 ? 0 : idx[d]);
          return off;
        };
        Tensor want(DType::i32, c.y);
        for (int64_t bi = 0; bi < batches; ++bi) {
          std::vector<int64_t> az(M), bz(N);
          for (int64_t i = 0; i < M; ++i) {
            if (c.azp.rank() == 0 || c.azp.numel() == 1)
              az[i] = q_at(azp, 0);
            else if (c.azp.rank() == 1)
              az[i] = q_at(azp, i);
            else  // [..., M, 1]
              az[i] = q_at(azp, offset(bi, batch_dims(c.azp, 2)) * c.azp[c.azp.rank() - 2] +
                                    (c.azp[c.azp.rank() - 2] == 1 ? 0 : i));
          }
          for (int64_t j = 0; j < N; ++j) {
            if (c.bzp.numel() == 1)
              bz[j] = q_at(bzp, 0);
            else if (c.bzp.rank() == 1)
              bz[j] = q_at(bzp, j);
            else  // [..., 1, N]
              bz[j] = q_at(bzp, offset(bi, batch_dims(c.bzp, 2)) * N + j);
          }
          const int64_t a_off = offset(bi, batch_dims(c.a, 2)) * M * K;
          const int64_t b_off = offset(bi, batch_dims(c.b, 2)) * K * N;
          matmul_integer_oracle_2d(a, a_off, b, b_off, az, bz, M, K, N,
                                   want.data<int32_t>() + bi * M * N);
        }
        require_equal(y, want);
      }
}

TEST_CASE("MatMulInteger: inference and errors name the node", "[integer][ops]") {
  auto out =
      infer("MatMulInteger", {info(DType::u8, sym({-1, 64}, {"N", ""})), info(DType::i8, {64, 10}),
                              info(DType::u8, {}), info(DType::i8, {10})});
  CHECK(out[0].dtype == DType::i32);
  CHECK(shape_str(out[0]) == "[N,10]");
  const TensorInfo a = info(DType::u8, {4, 6}), b = info(DType::i8, {6, 3});
  require_error(
      [&] {
        infer("MatMulInteger", {info({4, 6}), b});
      },
      ErrorCode::InvalidModel, "input 0 ('x0') is f32; MatMulInteger supports u8, i8");
  require_error(
      [&] {
        infer("MatMulInteger", {a, info(DType::u8, {5, 3})});
      },
      ErrorCode::InvalidModel, "A [4,6] has K = 6 but B [5,3] has K = 5");
  require_error(
      [&] {
        infer("MatMulInteger", {a, b, info(DType::i8, {})});
      },
      ErrorCode::InvalidModel, "inputs 0 and 2 must have the same dtype");
  require_error(
      [&] {
        infer("MatMulInteger", {a, b, info(DType::u8, {3})});
      },
      ErrorCode::InvalidModel,
      "a_zero_point has shape [3]; expected a scalar, [4] (one per row of A)");
  require_error(
      [&] {
        infer("MatMulInteger", {a, b, absent(), info(DType::i8, {4})});
      },
      ErrorCode::InvalidModel,
      "b_zero_point has shape [4]; expected a scalar, [3] (one per column of B)");
  require_error(
      [&] {
        infer("MatMulInteger", {a, b, absent(), info(DType::i8, {6, 3})});
      },
      ErrorCode::InvalidModel, "or a shape that broadcasts to [1,3]");
  require_error(
      [&] {
        infer("MatMulInteger", {info(DType::u8, {2, 4, 6}), info(DType::u8, {3, 6, 3})});
      },
      ErrorCode::InvalidModel, "cannot broadcast");
}

// ---- DynamicQuantizeLinear -----------------------------------------------------------------

TEST_CASE("DynamicQuantizeLinear: the ONNX spec's examples (float32 arithmetic)",
          "[integer][ops]") {
  auto run = [](Tensor x) { return run_ref("DynamicQuantizeLinear", {x}, {}, 3); };
  auto out = run(f32({6}, {0.f, 2.f, -3.f, -2.5f, 1.34f, 0.5f}));
  CHECK(out[1].shape() == Shape{});
  CHECK(out[1].to_vector<float>()[0] == 5.f / 255.f);
  require_values<uint8_t>(out[2], {}, {153});
  // 0.5 / scale is 25.5 in float32: a tie, rounded to the even 26 (26 + 153 = 179).
  require_values<uint8_t>(out[0], {6}, {153, 255, 0, 26, 221, 179});

  out = run(f32({6}, {-1.f, -2.1f, -1.3f, -2.5f, -3.34f, -4.f}));
  CHECK(out[1].to_vector<float>()[0] == 4.f / 255.f);
  require_values<uint8_t>(out[2], {}, {255});
  require_values<uint8_t>(out[0], {6}, {191, 121, 172, 96, 42, 0});

  out = run(f32({3, 4}, {1.f, 2.1f, 1.3f, 2.5f, 3.34f, 4.f, 1.5f, 2.6f, 3.9f, 4.f, 3.f, 2.345f}));
  CHECK(out[1].to_vector<float>()[0] == 4.f / 255.f);
  require_values<uint8_t>(out[2], {}, {0});
  require_values<uint8_t>(out[0], {3, 4},
                          {64, 134, 83, 159, 213, 255, 96, 166, 249, 255, 191, 149});

  // All zeros: ONNX Runtime's scale 1 (the spec would divide by zero).
  out = run(f32({3}, {0.f, 0.f, -0.f}));
  CHECK(out[1].to_vector<float>()[0] == 1.f);
  require_values<uint8_t>(out[2], {}, {0});
  require_values<uint8_t>(out[0], {3}, {0, 0, 0});
}

TEST_CASE("DynamicQuantizeLinear: inference and errors", "[integer][ops]") {
  auto out = infer("DynamicQuantizeLinear", {info(sym({-1, 8}, {"N", ""}))}, {}, 3);
  CHECK(out[0].dtype == DType::u8);
  CHECK(shape_str(out[0]) == "[N,8]");
  CHECK(out[1].dtype == DType::f32);
  CHECK(shape_str(out[1]) == "[]");
  CHECK(out[2].dtype == DType::u8);
  require_error([&] { infer("DynamicQuantizeLinear", {info(DType::i32, {4})}, {}, 3); },
                ErrorCode::InvalidModel,
                "input 0 ('x0') is i32; DynamicQuantizeLinear supports f32");
  require_error([&] { infer("DynamicQuantizeLinear", {info({4})}, {}, 1); },
                ErrorCode::InvalidModel, "has 1 outputs, expected 3");
}

TEST_CASE("DynamicQuantizeLinear matches ONNX Runtime bit for bit", "[integer][python]") {
  const auto dir = temp_dir("dql_ort");
  std::mt19937 rng(17);
  std::vector<Tensor> xs;
  xs.push_back(random_tensor({4, 50}, rng, -1.f, 1.f));
  xs.push_back(random_tensor({1000}, rng, -0.3f, 7.f));
  xs.push_back(random_tensor({3, 3, 31}, rng, -13.f, -2.f));  // all negative: zero point 255
  xs.push_back(random_tensor({777}, rng, 0.5f, 100.f));       // all positive: zero point 0
  xs.push_back(random_tensor({2, 512}, rng, -1e-4f, 3e-5f));
  xs.push_back(random_tensor({4000}, rng, -2.55f, 2.55f));
  // Many values on exact halves of a round scale: x / scale ties (min -1, max 1.55: scale
  // 0.01 up to float rounding).
  std::vector<float> ties{-1.f, 1.55f};
  for (int i = -200; i <= 310; ++i) ties.push_back(0.005f * float(i));
  xs.push_back(f32({int64_t(ties.size())}, ties));
  xs.push_back(f32({4}, {0.f, 0.f, 0.f, 0.f}));
  xs.push_back(random_tensor({2, 16, 32, 32}, rng, 0.f, 3.f));  // a ReLU output's shape
  for (size_t k = 0; k < xs.size(); ++k)
    save_npy(xs[k], (dir / ("x" + std::to_string(k) + ".npy")).string());
  REQUIRE(run_python("ort_integer_ops.py",
                     "dql '" + dir.string() + "' " + std::to_string(xs.size())) == 0);
  for (size_t k = 0; k < xs.size(); ++k) {
    INFO("input " << k << ": " << xs[k].shape().to_string());
    auto ours = run_ref("DynamicQuantizeLinear", {xs[k]}, {}, 3);
    const std::string s = std::to_string(k);
    require_equal(ours[1], load_npy((dir / ("scale" + s + ".npy")).string()));
    require_equal(ours[2], load_npy((dir / ("zp" + s + ".npy")).string()));
    require_equal(ours[0], load_npy((dir / ("y" + s + ".npy")).string()));
  }
}

// ---- the ONNX conformance cases ------------------------------------------------------------

TEST_CASE("ConvInteger and MatMulInteger pass their ONNX conformance cases", "[integer][onnx]") {
  const auto root = data_dir() / "onnx-node-tests";
  for (const char* name : {"test_convinteger_with_padding", "test_convinteger_without_padding",
                           "test_matmulinteger"}) {
    INFO(name);
    CaseResult r = run_conformance_case((root / name).string());
    INFO(r.reason);
    CHECK(r.status == CaseStatus::Pass);
    CHECK(r.data_sets >= 1);
  }
}
