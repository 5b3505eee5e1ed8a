// MaxPool, AveragePool, GlobalAveragePool: schemas and reference kernels (1-D to 3-D).
#include <limits>

#include "ops/builtin_ops.h"
#include "ops/conv_geometry.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

void infer_pool(InferContext& ctx, const std::vector<DType>& types) {
  require_dtype(ctx, 0, types);
  const Shape& x = ctx.input_shape(0);
  PoolGeometry g = pool_geometry(ctx.node(), x);
  if (g.rank() > 3) ctx.fail("pooling over more than 3 spatial dims is not supported");
  Shape y = window_output_shape(g, x, x[1]);
  ctx.set_output(0, ctx.input_dtype(0), y);
  if (ctx.num_outputs() > 1) {  // MaxPool's Indices
    int64_t order = ctx.attrs().get_int("storage_order", 0);
    if (order != 0 && order != 1)
      ctx.fail("storage_order must be 0 or 1, got " + std::to_string(order));
    ctx.set_output(1, DType::i64, y);
  }
}

// The flat index of input element (n, c, i0, i1, i2) as MaxPool's Indices output defines it:
// row-major over the whole tensor, or with the spatial dims column-major (storage_order 1).
int64_t flat_index(const Window3& q, size_t spatial_rank, int64_t nc, int64_t i0, int64_t i1,
                   int64_t i2, bool column_major) {
  int64_t plane = q.in[0] * q.in[1] * q.in[2];
  if (!column_major) return nc * plane + (i0 * q.in[1] + i1) * q.in[2] + i2;
  // The real spatial dims are the last `spatial_rank` of (i0, i1, i2); first varies fastest.
  int64_t idx[3] = {i0, i1, i2}, off = 0, mul = 1;
  for (size_t j = 3 - spatial_rank; j < 3; ++j) {
    off += idx[j] * mul;
    mul *= q.in[j];
  }
  return nc * plane + off;
}

template <typename T>
void max_pool(const Node& node, const PoolGeometry& g, const Tensor& x, Tensor& y,
              Tensor* indices) {
  Window3 q = to_window3(g);
  bool column_major = node.attrs.get_int("storage_order", 0) == 1;
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  int64_t* ip = indices ? indices->data<int64_t>() : nullptr;
  int64_t planes = x.dim(0) * x.dim(1), in_sz = q.in[0] * q.in[1] * q.in[2];
  for (int64_t nc = 0; nc < planes; ++nc) {
    const T* xc = xp + nc * in_sz;
    for (int64_t o0 = 0; o0 < q.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < q.out[1]; ++o1)
        for (int64_t o2 = 0; o2 < q.out[2]; ++o2) {
          // Padding never wins: start below every real value.
          T best = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                        : std::numeric_limits<T>::lowest();
          int64_t best_idx = -1;
          // The taps inside the input, per dim (the others are padding).
          const int64_t st0 = o0 * q.s[0] - q.pb[0], st1 = o1 * q.s[1] - q.pb[1],
                        st2 = o2 * q.s[2] - q.pb[2];
          const TapRange r0 = taps_in(st0, q.k[0], q.d[0], 0, q.in[0]);
          const TapRange r1 = taps_in(st1, q.k[1], q.d[1], 0, q.in[1]);
          const TapRange r2 = taps_in(st2, q.k[2], q.d[2], 0, q.in[2]);
          for (int64_t k0 = r0.lo; k0 < r0.hi; ++k0) {
            int64_t i0 = st0 + k0 * q.d[0];
            for (int64_t k1 = r1.lo; k1 < r1.hi; ++k1) {
              int64_t i1 = st1 + k1 * q.d[1];
              for (int64_t k2 = r2.lo; k2 < r2.hi; ++k2) {
                int64_t i2 = st2 + k2 * q.d[2];
                T v = xc[(i0 * q.in[1] + i1) * q.in[2] + i2];
                if (best_idx < 0 || v > best) {  // the first maximum wins
                  best = v;
                  best_idx = flat_index(q, g.rank(), nc, i0, i1, i2, column_major);
                }
              }
            }
          }
          *yp++ = best;
          if (ip) *ip++ = best_idx;
        }
  }
}

std::vector<Tensor> max_pool_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  PoolGeometry g = pool_geometry(node, x.shape());
  Shape ys = window_output_shape(g, x.shape(), x.dim(1));
  Tensor y(x.dtype(), ys);
  bool want_indices = node.outputs.size() > 1;
  Tensor indices = want_indices ? Tensor(DType::i64, ys) : Tensor();
  Tensor* ip = want_indices ? &indices : nullptr;
  switch (x.dtype()) {
    case DType::f32:
      max_pool<float>(node, g, x, y, ip);
      break;
    case DType::i8:
      max_pool<int8_t>(node, g, x, y, ip);
      break;
    case DType::u8:
      max_pool<uint8_t>(node, g, x, y, ip);
      break;
    default:
      op_fail(node, std::string("dtype ") + dtype_name(x.dtype()) + " is not supported");
  }
  if (want_indices) return {y, indices};
  return {y};
}

// Average over the window taps inside the input; with count_include_pad the divisor also
// counts taps in the explicit/auto padding (but never taps beyond it, which ceil_mode can
// add), as PyTorch and ONNX Runtime do.
std::vector<Tensor> average_pool_reference(const Node& node, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  PoolGeometry g = pool_geometry(node, x.shape());
  Window3 q = to_window3(g);
  Tensor y(DType::f32, window_output_shape(g, x.shape(), x.dim(1)));
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  int64_t planes = x.dim(0) * x.dim(1), in_sz = q.in[0] * q.in[1] * q.in[2];
  for (int64_t nc = 0; nc < planes; ++nc) {
    const float* xc = xp + nc * in_sz;
    for (int64_t o0 = 0; o0 < q.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < q.out[1]; ++o1)
        for (int64_t o2 = 0; o2 < q.out[2]; ++o2) {
          const int64_t st[3] = {o0 * q.s[0] - q.pb[0], o1 * q.s[1] - q.pb[1],
                                 o2 * q.s[2] - q.pb[2]};
          // Per dim, the taps inside the input, and those inside input + padding.
          TapRange r[3];
          int64_t count = 1, padded_count = 1;
          for (int d = 0; d < 3; ++d) {
            r[d] = taps_in(st[d], q.k[d], q.d[d], 0, q.in[d]);
            count *= r[d].size();
            padded_count *= taps_in(st[d], q.k[d], q.d[d], -q.pb[d], q.in[d] + q.pe[d]).size();
          }
          double sum = 0;
          for (int64_t k0 = r[0].lo; k0 < r[0].hi; ++k0) {
            int64_t i0 = st[0] + k0 * q.d[0];
            for (int64_t k1 = r[1].lo; k1 < r[1].hi; ++k1) {
              int64_t i1 = st[1] + k1 * q.d[1];
              for (int64_t k2 = r[2].lo; k2 < r[2].hi; ++k2) {
                int64_t i2 = st[2] + k2 * q.d[2];
                sum += xc[(i0 * q.in[1] + i1) * q.in[2] + i2];
              }
            }
          }
          if (g.count_include_pad) count = padded_count;
          *yp++ = count ? static_cast<float>(sum / double(count)) : 0.f;
        }
  }
  return {y};
}

void infer_global_pool(InferContext& ctx) {
  require_dtype(ctx, 0, {DType::f32});
  const Shape& x = ctx.input_shape(0);
  if (x.rank() < 3)
    ctx.fail("input has shape " + x.to_string() + "; expected rank >= 3 ([N, C, spatial...])");
  Shape y(std::vector<int64_t>(x.rank(), 1));
  copy_dim(y, 0, x, 0);
  copy_dim(y, 1, x, 1);
  ctx.set_output(0, DType::f32, y);
}

std::vector<Tensor> global_average_pool_reference(const Node&, const std::vector<Tensor>& in) {
  const Tensor& x = in[0];
  std::vector<int64_t> dims(x.rank(), 1);
  dims[0] = x.dim(0);
  dims[1] = x.dim(1);
  Tensor y(DType::f32, Shape(dims));
  int64_t planes = x.dim(0) * x.dim(1), sz = dims_product(x.shape(), 2, x.rank());
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  for (int64_t p = 0; p < planes; ++p) {
    double sum = 0;
    for (int64_t i = 0; i < sz; ++i) sum += xp[p * sz + i];
    yp[p] = sz ? static_cast<float>(sum / double(sz)) : 0.f;
  }
  return {y};
}

}  // namespace

void register_pool_ops(OpRegistry& r) {
  OpSchema maxp;
  maxp.name = "MaxPool";
  maxp.doc = "max over sliding windows (optional Indices output)";
  maxp.max_outputs = 2;
  maxp.attributes = {"auto_pad", "ceil_mode",     "dilations", "kernel_shape",
                     "pads",     "storage_order", "strides"};
  maxp.infer = [](InferContext& ctx) { infer_pool(ctx, {DType::f32, DType::i8, DType::u8}); };
  maxp.reference = max_pool_reference;
  add_builtin_op(r, std::move(maxp));

  OpSchema avgp;
  avgp.name = "AveragePool";
  avgp.doc = "mean over sliding windows";
  avgp.attributes = {"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape",
                     "pads",     "strides"};
  avgp.infer = [](InferContext& ctx) { infer_pool(ctx, {DType::f32}); };
  avgp.reference = average_pool_reference;
  add_builtin_op(r, std::move(avgp));

  OpSchema gap;
  gap.name = "GlobalAveragePool";
  gap.doc = "mean over all spatial dims: [N,C,H,W] -> [N,C,1,1]";
  gap.infer = infer_global_pool;
  gap.reference = global_average_pool_reference;
  add_builtin_op(r, std::move(gap));
}

}  // namespace minfer
