// MatMulInteger (opset 10): numpy matmul of 8-bit A and B with zero points, int32 output:
// y = (A - a_zero_point) @ (B - b_zero_point). a_zero_point is a scalar, one per row of A
// ([M]) or broadcasts to [..., M, 1]; b_zero_point a scalar, one per column of B ([N]) or
// broadcasts to [..., 1, N].
#include "ops/broadcast.h"
#include "ops/builtin_ops.h"
#include "ops/integer_ops.h"
#include "ops/matmul.h"

namespace minfer {

namespace {

// A zero point's shape as it broadcasts against [batch..., M, 1] (for A: a 1-D [M] means
// one per row) or [batch..., 1, N] (for B: a 1-D [N] already aligns with the columns).
Shape zero_point_shape(const Shape& z, bool for_a) {
  if (for_a && z.rank() == 1) return Shape{z[0], 1};
  return z;
}

// The shape a zero point must broadcast to.
Shape zero_point_target(const MatmulDims& d, bool for_a) {
  Shape t = d.batch;
  t.dims().push_back(for_a ? d.m : 1);
  t.dims().push_back(for_a ? 1 : d.n);
  return t;
}

bool broadcasts_to(const Shape& z, const Shape& target) {
  if (z.rank() > target.rank()) return false;
  for (size_t i = 0; i < z.rank(); ++i) {
    const int64_t zd = z[z.rank() - 1 - i], td = target[target.rank() - 1 - i];
    if (zd == 1 || zd < 0) continue;  // a symbolic dim is checked again when it is known
    if (td == 1 || !dims_compatible(zd, td)) return false;
  }
  return true;
}

void check_zero_point(InferContext& ctx, const MatmulDims& d, size_t input, bool for_a) {
  if (!ctx.has_input(input)) return;
  require_same_dtype(ctx, for_a ? 0 : 1, input);
  const Shape& z = ctx.input_shape(input);
  if (broadcasts_to(zero_point_shape(z, for_a), zero_point_target(d, for_a))) return;
  const std::string per = for_a ? Shape{d.m}.to_string() + " (one per row of A)"
                                : Shape{d.n}.to_string() + " (one per column of B)";
  ctx.fail(std::string(for_a ? "a" : "b") + "_zero_point has shape " + z.to_string() +
           "; expected a scalar, " + per + " or a shape that broadcasts to " +
           zero_point_target(d, for_a).to_string());
}

void infer_matmul_integer(InferContext& ctx) {
  require_dtype(ctx, 0, int8_types());
  require_dtype(ctx, 1, int8_types());
  const MatmulDims d = matmul_dims(ctx.node(), ctx.input_shape(0), ctx.input_shape(1));
  check_zero_point(ctx, d, 2, true);
  check_zero_point(ctx, d, 3, false);
  ctx.set_output(0, DType::i32, d.out);
}

// Where a zero point's values for one batch entry start, and how they step along the rows
// (A) or columns (B) of that entry.
struct ZeroPointWalk {
  std::vector<int32_t> values{0};
  std::vector<int64_t> batch_strides;  // in entries of `unit` values
  int64_t unit = 1, step = 0;
};

ZeroPointWalk zero_point_walk(const Node& node, const Tensor& z, const MatmulDims& d, bool for_a) {
  ZeroPointWalk w;
  Shape zs = z.defined() ? zero_point_shape(z.shape(), for_a) : Shape{};
  std::vector<int64_t> full(d.batch.rank() + 2 - zs.rank(), 1);
  full.insert(full.end(), zs.dims().begin(), zs.dims().end());
  const int64_t rows = full[full.size() - 2], cols = full.back();
  w.unit = rows * cols;
  w.step = (for_a ? rows : cols) == 1 ? 0 : 1;
  w.batch_strides =
      broadcast_strides(Shape(std::vector<int64_t>(full.begin(), full.end() - 2)), d.batch);
  if (z.defined()) w.values = read_zero_points(node, z, 1);
  return w;
}

std::vector<Tensor> matmul_integer_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor &a = in[0], &b = in[1];
  const MatmulDims d = matmul_dims(node, a.shape(), b.shape());
  const int64_t M = d.m, K = d.k, N = d.n;
  const ZeroPointWalk za = zero_point_walk(node, in[2], d, true);
  const ZeroPointWalk zb = zero_point_walk(node, in[3], d, false);
  const std::vector<int32_t> aw = widen_minus(node, a, {0}, 1), bw = widen_minus(node, b, {0}, 1);
  std::vector<std::vector<int64_t>> st{broadcast_strides(d.a_batch, d.batch),
                                       broadcast_strides(d.b_batch, d.batch), za.batch_strides,
                                       zb.batch_strides};
  Tensor y(DType::i32, d.out);
  int32_t* yp = y.data<int32_t>();
  std::vector<uint32_t> bs(static_cast<size_t>(K * N)), acc(static_cast<size_t>(N));
  for_each_broadcast(d.batch, st, [&](int64_t bi, const std::vector<int64_t>& off) {
    const int32_t* am = aw.data() + off[0] * M * K;
    const int32_t* bm = bw.data() + off[1] * K * N;
    const int32_t* az = za.values.data() + off[2] * za.unit;
    const int32_t* bz = zb.values.data() + off[3] * zb.unit;
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j)
        bs[k * N + j] = static_cast<uint32_t>(bm[k * N + j] - bz[j * zb.step]);
    // Row i of Y accumulates (A[i,k] - za) times row k of B - zb: contiguous inner loops.
    // uint32 accumulation is ONNX's int32 arithmetic, wrapping instead of overflowing.
    for (int64_t i = 0; i < M; ++i) {
      std::fill(acc.begin(), acc.end(), 0u);
      for (int64_t k = 0; k < K; ++k) {
        const uint32_t av = static_cast<uint32_t>(am[i * K + k] - az[i * za.step]);
        if (av == 0) continue;
        const uint32_t* brow = bs.data() + k * N;
        for (int64_t j = 0; j < N; ++j) acc[j] += av * brow[j];
      }
      int32_t* yrow = yp + (bi * M + i) * N;
      for (int64_t j = 0; j < N; ++j) yrow[j] = static_cast<int32_t>(acc[j]);
    }
  });
  return {y};
}

}  // namespace

void register_matmul_integer_ops(OpRegistry& r) {
  OpSchema s;
  s.name = "MatMulInteger";
  s.doc = "int32 y = (A - a_zero_point) @ (B - b_zero_point), 8-bit A and B, numpy matmul";
  s.min_inputs = 2;
  s.max_inputs = 4;
  s.infer = infer_matmul_integer;
  s.reference = matmul_integer_reference;
  add_builtin_op(r, std::move(s));
}

}  // namespace minfer
