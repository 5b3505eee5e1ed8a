// ScatterND: a copy of `data` with the slices that `indices` address replaced by (or, from
// opset 16, combined with: add, mul, max, min) `updates`. Exporters write it for slice
// assignment (`mask[a:b, c:d] = k`, Swin's attention masks). Any dtype without reduction.
#include <cstring>

#include "ops/builtin_ops.h"
#include "ops/op_util.h"

namespace minfer {

namespace {

std::string reduction_of(const Node& node) {
  const std::string r = node.attrs.get_string("reduction", "none");
  op_require(node, r == "none" || r == "add" || r == "mul" || r == "max" || r == "min",
             "reduction '" + r + "' is not one of none, add, mul, max, min");
  return r;
}

void infer_scatter_nd(InferContext& ctx) {
  const std::string red = reduction_of(ctx.node());
  if (red != "none") require_dtype(ctx, 0, {DType::f32, DType::i32, DType::i64});
  require_dtype(ctx, 1, {DType::i64});
  require_same_dtype(ctx, 0, 2);
  const Shape &data = ctx.input_shape(0), &idx = ctx.input_shape(1), &upd = ctx.input_shape(2);
  if (idx.rank() == 0) ctx.fail("indices must have rank >= 1");
  const int64_t k = idx[idx.rank() - 1];
  if (k >= 0) {
    if (k < 1 || k > int64_t(data.rank()))
      ctx.fail("indices' last dim is " + std::to_string(k) + "; it must be in [1, " +
               std::to_string(data.rank()) + "] for data of shape " + data.to_string());
    // updates = indices.shape[:-1] + data.shape[k:]
    const size_t want = idx.rank() - 1 + data.rank() - size_t(k);
    bool ok = upd.rank() == want;
    for (size_t i = 0; ok && i + 1 < idx.rank(); ++i) ok = dims_compatible(upd[i], idx[i]);
    for (size_t i = size_t(k); ok && i < data.rank(); ++i)
      ok = dims_compatible(upd[idx.rank() - 1 + i - size_t(k)], data[i]);
    if (!ok)
      ctx.fail("updates has shape " + upd.to_string() + "; indices " + idx.to_string() +
               " and data " + data.to_string() + " need indices.shape[:-1] + data.shape[" +
               std::to_string(k) + ":]");
  }
  ctx.set_output(0, ctx.input_dtype(0), data);
}

template <typename T>
void combine(T* dst, const T* src, int64_t n, const std::string& red) {
  for (int64_t i = 0; i < n; ++i) {
    if (red == "add")
      dst[i] = static_cast<T>(dst[i] + src[i]);
    else if (red == "mul")
      dst[i] = static_cast<T>(dst[i] * src[i]);
    else if (red == "max")
      dst[i] = std::max(dst[i], src[i]);
    else
      dst[i] = std::min(dst[i], src[i]);
  }
}

std::vector<Tensor> scatter_nd_reference(const Node& node, const std::vector<Tensor>& in) {
  const std::string red = reduction_of(node);
  const Tensor &data = in[0], &idx = in[1], &upd = in[2];
  Tensor y(data.dtype(), data.shape());
  if (data.nbytes()) std::memcpy(y.raw(), data.raw(), data.nbytes());
  const size_t k = size_t(idx.dim(idx.rank() - 1));
  const int64_t count = dims_product(idx.shape(), 0, idx.rank() - 1);
  const int64_t slice = dims_product(data.shape(), k, data.rank());
  const std::vector<int64_t> strides = row_major_strides(data.shape());
  const size_t es = dtype_size(data.dtype());
  const int64_t* ip = idx.data<int64_t>();
  char* yp = static_cast<char*>(y.raw());
  const char* up = static_cast<const char*>(upd.raw());
  for (int64_t u = 0; u < count; ++u) {
    int64_t offset = 0;
    for (size_t d = 0; d < k; ++d) {
      int64_t i = ip[u * int64_t(k) + int64_t(d)];
      const int64_t n = data.dim(d);
      op_require(node, i >= -n && i < n,
                 "index " + std::to_string(i) + " is out of range for dim " + std::to_string(d) +
                     " of size " + std::to_string(n));
      offset += (i < 0 ? i + n : i) * strides[d];
    }
    char* dst = yp + offset * int64_t(es);
    const char* src = up + u * slice * int64_t(es);
    if (red == "none") {
      std::memcpy(dst, src, size_t(slice) * es);
      continue;
    }
    dispatch_types<float, int32_t, int64_t>(node, data.dtype(), [&](auto zero) {
      using T = decltype(zero);
      combine(reinterpret_cast<T*>(dst), reinterpret_cast<const T*>(src), slice, red);
      return 0;
    });
  }
  return {y};
}

}  // namespace

void register_scatter_nd_op(OpRegistry& r) {
  OpSchema s;
  s.name = "ScatterND";
  s.doc = "copy of data with indexed slices replaced (or reduced) by updates";
  s.min_inputs = s.max_inputs = 3;
  s.attributes = {"reduction"};
  s.infer = infer_scatter_nd;
  s.reference = scatter_nd_reference;
  add_builtin_op(r, std::move(s));
}

}  // namespace minfer
