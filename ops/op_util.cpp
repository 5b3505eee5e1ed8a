#include "ops/op_util.h"

namespace minfer {

void op_fail(const Node& node, const std::string& message) {
  throw Error(ErrorCode::InvalidModel, node.describe() + ": " + message);
}

int64_t normalize_axis(const Node& node, int64_t axis, int64_t rank, const std::string& what) {
  if (axis < -rank || axis >= rank)
    op_fail(node, what + " " + std::to_string(axis) + " is out of range for rank " +
                      std::to_string(rank) + " (valid: " + std::to_string(-rank) + ".." +
                      std::to_string(rank - 1) + ")");
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> read_int_tensor(const Node& node, const Tensor& t, const std::string& what) {
  if (t.dtype() == DType::i64) return t.to_vector<int64_t>();
  if (t.dtype() == DType::i32) {
    std::vector<int64_t> r;
    for (int32_t v : t.to_vector<int32_t>()) r.push_back(v);
    return r;
  }
  op_fail(node, what + " must be i32 or i64, got " + dtype_name(t.dtype()));
}

std::string dim_symbol(const Shape& s, size_t i) {
  if (i >= s.rank() || s[i] >= 0 || i >= s.symbols.size()) return "";
  return s.symbols[i];
}

void set_dim_symbol(Shape& s, size_t i, const std::string& name) {
  if (name.empty()) return;
  if (s.symbols.size() <= i) s.symbols.resize(i + 1);
  s.symbols[i] = name;
}

void set_unknown_dim(Shape& s, size_t i) {
  s[i] = Shape::kDynamic;
  if (i < s.symbols.size()) s.symbols[i].clear();
}

void copy_dim(Shape& dst, size_t to, const Shape& src, size_t from) {
  dst[to] = src[from];
  set_dim_symbol(dst, to, dim_symbol(src, from));
}

std::string ints_to_string(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s + "]";
}

int64_t dims_product(const Shape& s, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i) n *= s[i];
  return n;
}

std::vector<int64_t> row_major_strides(const Shape& s) {
  std::vector<int64_t> st(s.rank(), 1);
  for (size_t i = s.rank(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

bool is_integer_dtype(DType t) {
  return t == DType::i8 || t == DType::u8 || t == DType::i32 || t == DType::i64;
}

void require_dtype(const InferContext& ctx, size_t i, const std::vector<DType>& allowed) {
  DType t = ctx.input_dtype(i);
  for (DType a : allowed)
    if (a == t) return;
  std::string names;
  for (DType a : allowed) names += std::string(names.empty() ? "" : ", ") + dtype_name(a);
  const Value* v = ctx.node().input(i);
  ctx.fail("input " + std::to_string(i) + (v ? " ('" + v->name + "')" : std::string()) + " is " +
           dtype_name(t) + "; " + ctx.node().op_type + " supports " + names);
}

void require_same_dtype(const InferContext& ctx, size_t a, size_t b) {
  if (ctx.input_dtype(a) != ctx.input_dtype(b))
    ctx.fail("inputs " + std::to_string(a) + " and " + std::to_string(b) +
             " must have the same dtype, got " + dtype_name(ctx.input_dtype(a)) + " and " +
             dtype_name(ctx.input_dtype(b)));
}

void require_rank(const InferContext& ctx, size_t i, size_t rank, const std::string& what) {
  const Shape& s = ctx.input_shape(i);
  if (s.rank() != rank)
    ctx.fail(what + " has shape " + s.to_string() + "; expected rank " + std::to_string(rank));
}

}  // namespace minfer
