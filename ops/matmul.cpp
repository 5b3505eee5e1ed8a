// Gemm and MatMul: schemas and reference kernels.
#include "ops/matmul.h"

#include "ops/broadcast.h"
#include "ops/builtin_ops.h"
#include "ops/op_util.h"

namespace minfer {

GemmSizes gemm_sizes(const PrepareContext& ctx) {
  const Attributes& attrs = ctx.node.attrs;
  GemmSizes g;
  g.trans_a = attrs.get_int("transA", 0) != 0;
  g.trans_b = attrs.get_int("transB", 0) != 0;
  g.alpha = attrs.get_float("alpha", 1.f);
  g.beta = attrs.get_float("beta", 1.f);
  const Shape& a = ctx.inputs[0].shape;
  const Shape& b = ctx.inputs[1].shape;
  g.m = g.trans_a ? a[1] : a[0];
  g.k = g.trans_a ? a[0] : a[1];
  g.n = g.trans_b ? b[0] : b[1];
  if ((g.trans_b ? b[1] : b[0]) != g.k)
    ctx.fail("A " + a.to_string() + " and B " + b.to_string() + " have different K");
  g.has_c = ctx.inputs.size() > 2 && ctx.inputs[2].present;
  if (g.has_c) {
    const std::vector<int64_t> st = broadcast_strides(ctx.inputs[2].shape, Shape{g.m, g.n});
    g.c_row_stride = st[0];
    g.c_col_stride = st[1];
  }
  return g;
}

MatmulDims matmul_dims(const Node& node, const Shape& a, const Shape& b) {
  op_require(node, a.rank() >= 1 && b.rank() >= 1,
             "needs inputs of rank >= 1, got " + a.to_string() + " and " + b.to_string());
  Shape a2 = a, b2 = b;
  if (a.rank() == 1) a2 = Shape{1, a[0]}, set_dim_symbol(a2, 1, dim_symbol(a, 0));
  if (b.rank() == 1) b2 = Shape{b[0], 1}, set_dim_symbol(b2, 0, dim_symbol(b, 0));
  MatmulDims d;
  d.m = a2[a2.rank() - 2];
  d.k = a2[a2.rank() - 1];
  d.n = b2[b2.rank() - 1];
  const int64_t kb = b2[b2.rank() - 2];
  op_require(node, dims_compatible(d.k, kb),
             "A " + a.to_string() + " has K = " + std::to_string(d.k) + " but B " + b.to_string() +
                 " has K = " + std::to_string(kb));
  auto batch_of = [](const Shape& s) {  // the first rank - 2 dims, with their names
    Shape r(std::vector<int64_t>(s.dims().begin(), s.dims().end() - 2));
    for (size_t i = 0; i < r.rank(); ++i) set_dim_symbol(r, i, dim_symbol(s, i));
    return r;
  };
  d.a_batch = batch_of(a2);
  d.b_batch = batch_of(b2);
  d.batch = broadcast_shapes(node, {d.a_batch, d.b_batch});
  d.out = d.batch;
  if (a.rank() >= 2) {
    d.out.dims().push_back(d.m);
    set_dim_symbol(d.out, d.out.rank() - 1, dim_symbol(a2, a2.rank() - 2));
  }
  if (b.rank() >= 2) {
    d.out.dims().push_back(d.n);
    set_dim_symbol(d.out, d.out.rank() - 1, dim_symbol(b2, b2.rank() - 1));
  }
  return d;
}

namespace {

// ---- Gemm: Y = alpha * op(A) * op(B) + beta * C ------------------------------------------

struct GemmDims {
  int64_t m, k, n;
};

GemmDims gemm_dims(const InferContext& ctx) {
  const Shape& a = ctx.input_shape(0);
  const Shape& b = ctx.input_shape(1);
  require_rank(ctx, 0, 2, "A");
  require_rank(ctx, 1, 2, "B");
  bool ta = ctx.attrs().get_int("transA", 0) != 0, tb = ctx.attrs().get_int("transB", 0) != 0;
  GemmDims d{ta ? a[1] : a[0], ta ? a[0] : a[1], tb ? b[0] : b[1]};
  int64_t kb = tb ? b[1] : b[0];
  if (!dims_compatible(d.k, kb))
    ctx.fail("A " + a.to_string() + (ta ? " (transposed)" : "") +
             " has K = " + std::to_string(d.k) + " but B " + b.to_string() +
             (tb ? " (transposed)" : "") + " has K = " + std::to_string(kb));
  return d;
}

void infer_gemm(InferContext& ctx) {
  require_dtype(ctx, 0, {DType::f32});
  require_same_dtype(ctx, 0, 1);
  GemmDims d = gemm_dims(ctx);
  bool ta = ctx.attrs().get_int("transA", 0) != 0, tb = ctx.attrs().get_int("transB", 0) != 0;
  Shape y{d.m, d.n};
  copy_dim(y, 0, ctx.input_shape(0), ta ? 1 : 0);
  copy_dim(y, 1, ctx.input_shape(1), tb ? 0 : 1);
  if (ctx.has_input(2)) {
    require_same_dtype(ctx, 0, 2);
    const Shape& c = ctx.input_shape(2);
    bool ok = c.rank() <= 2;
    // Unidirectional broadcast: C's dims (right-aligned) are 1 or equal to Y's.
    for (size_t i = 0; ok && i < c.rank(); ++i) {
      int64_t target = y[2 - c.rank() + i];
      ok = c[i] == 1 || dims_compatible(c[i], target);
    }
    if (!ok)
      ctx.fail("C has shape " + c.to_string() + ", which does not broadcast to the output " +
               y.to_string());
  }
  ctx.set_output(0, DType::f32, y);
}

std::vector<Tensor> gemm_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor &a = in[0], &b = in[1], &c = in[2];
  bool ta = node.attrs.get_int("transA", 0) != 0, tb = node.attrs.get_int("transB", 0) != 0;
  double alpha = node.attrs.get_float("alpha", 1.f), beta = node.attrs.get_float("beta", 1.f);
  int64_t M = ta ? a.dim(1) : a.dim(0), K = ta ? a.dim(0) : a.dim(1);
  int64_t N = tb ? b.dim(0) : b.dim(1);
  Tensor y(DType::f32, Shape{M, N});
  const float *ap = a.data<float>(), *bp = b.data<float>();
  const float* cp = c.defined() ? c.data<float>() : nullptr;
  std::vector<int64_t> cst =
      c.defined() ? broadcast_strides(c.shape(), y.shape()) : std::vector<int64_t>{0, 0};
  float* yp = y.data<float>();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        double av = ta ? ap[k * M + i] : ap[i * K + k];
        double bv = tb ? bp[j * K + k] : bp[k * N + j];
        acc += av * bv;
      }
      double v = alpha * acc;
      if (cp) v += beta * cp[i * cst[0] + j * cst[1]];
      yp[i * N + j] = static_cast<float>(v);
    }
  return {y};
}

// ---- MatMul: numpy matmul ------------------------------------------------------------------

void infer_matmul(InferContext& ctx) {
  require_dtype(ctx, 0, {DType::f32});
  require_same_dtype(ctx, 0, 1);
  ctx.set_output(0, DType::f32,
                 matmul_dims(ctx.node(), ctx.input_shape(0), ctx.input_shape(1)).out);
}

std::vector<Tensor> matmul_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor &a = in[0], &b = in[1];
  const MatmulDims d = matmul_dims(node, a.shape(), b.shape());
  const int64_t M = d.m, K = d.k, N = d.n;
  std::vector<std::vector<int64_t>> st{broadcast_strides(d.a_batch, d.batch),
                                       broadcast_strides(d.b_batch, d.batch)};
  Tensor y(DType::f32, d.out);
  const float *ap = a.data<float>(), *bp = b.data<float>();
  float* yp = y.data<float>();
  for_each_broadcast(d.batch, st, [&](int64_t bi, const std::vector<int64_t>& off) {
    const float* am = ap + off[0] * M * K;
    const float* bm = bp + off[1] * K * N;
    float* ym = yp + bi * M * N;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k) acc += double(am[i * K + k]) * double(bm[k * N + j]);
        ym[i * N + j] = static_cast<float>(acc);
      }
  });
  return {y};
}

}  // namespace

void register_matmul_ops(OpRegistry& r) {
  OpSchema gemm;
  gemm.name = "Gemm";
  gemm.doc = "Y = alpha * op(A) * op(B) + beta * C, C broadcast to Y";
  gemm.min_inputs = 2;
  gemm.max_inputs = 3;
  gemm.attributes = {"alpha", "beta", "transA", "transB"};
  gemm.infer = infer_gemm;
  gemm.reference = gemm_reference;
  add_builtin_op(r, std::move(gemm));

  OpSchema mm;
  mm.name = "MatMul";
  mm.doc = "numpy matmul: batched, broadcast, 1-D promotion";
  mm.min_inputs = mm.max_inputs = 2;
  mm.infer = infer_matmul;
  mm.reference = matmul_reference;
  add_builtin_op(r, std::move(mm));
}

}  // namespace minfer
