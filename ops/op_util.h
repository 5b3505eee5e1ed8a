// Small helpers shared by the op schemas and reference kernels: errors that name the node,
// element-type dispatch, axis normalization, reading int tensors, and keeping symbolic dim
// names.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "minfer/graph.h"
#include "minfer/op_schema.h"

namespace minfer {

// Throws InvalidModel: "<Op> '<name>': <message>" (what InferContext::fail does, for code
// that has only the Node, such as reference kernels and geometry helpers).
[[noreturn]] void op_fail(const Node& node, const std::string& message);
inline void op_require(const Node& node, bool condition, const std::string& message) {
  if (!condition) op_fail(node, message);
}

// Calls f(T{}) for the T among Ts whose dtype_of<T>() is `t` and returns what it returns;
// fails naming the node and the dtype when none is. f16 is Half (runtime/half.h).
//   dispatch_types<float, int32_t>(node, x.dtype(), [&](auto zero) { using T = ...; });
template <typename T, typename... Ts, typename F>
auto dispatch_types(const Node& node, DType t, F&& f) {
  if (t == dtype_of<T>()) return f(T{});
  if constexpr (sizeof...(Ts) > 0)
    return dispatch_types<Ts...>(node, t, std::forward<F>(f));
  else
    op_fail(node, std::string("dtype ") + dtype_name(t) + " is not supported");
}

// Maps an axis in [-rank, rank) to [0, rank); fails naming `what` ("axis", "perm") otherwise.
int64_t normalize_axis(const Node& node, int64_t axis, int64_t rank, const std::string& what);

// The values of an i32 or i64 tensor as int64 (shape/axes/pads inputs); fails for other types.
std::vector<int64_t> read_int_tensor(const Node& node, const Tensor& t, const std::string& what);

// The name of dim i of `s` if it is symbolic and named, else "".
std::string dim_symbol(const Shape& s, size_t i);
// Names dim i of `s` (growing `symbols` as needed); an empty name is a no-op.
void set_dim_symbol(Shape& s, size_t i, const std::string& name);
// Makes dim i of `s` unknown and unnamed (a new size that is not any input's).
void set_unknown_dim(Shape& s, size_t i);
// Copies dim `from` of `src` (value and symbol name) into dim `to` of `dst`.
void copy_dim(Shape& dst, size_t to, const Shape& src, size_t from);

// "[1,2,3]" for messages.
std::string ints_to_string(const std::vector<int64_t>& v);

// Product of dims [begin, end) of a static shape.
int64_t dims_product(const Shape& s, size_t begin, size_t end);

// Row-major strides of a static shape.
std::vector<int64_t> row_major_strides(const Shape& s);

bool is_integer_dtype(DType t);

// Fails unless input i has one of `allowed` dtypes: "input 0 (X) is i8; Conv supports f32".
void require_dtype(const InferContext& ctx, size_t i, const std::vector<DType>& allowed);
// Fails unless inputs a and b have the same dtype.
void require_same_dtype(const InferContext& ctx, size_t a, size_t b);
// Fails unless input i has the given rank.
void require_rank(const InferContext& ctx, size_t i, size_t rank, const std::string& what);
// True when two dims can be equal (either is symbolic, or they are the same size).
inline bool dims_compatible(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }

}  // namespace minfer
