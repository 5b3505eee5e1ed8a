#include "ops/broadcast.h"

#include <algorithm>

#include "ops/op_util.h"

namespace minfer {

Shape broadcast_shapes(const Node& node, const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.rank());
  Shape out(std::vector<int64_t>(rank, 1));
  for (size_t d = 0; d < rank; ++d) {
    int64_t dim = 1;
    std::string symbol;
    bool unknown = false;  // some operand has an unknown dim here (and no known d > 1 so far)
    for (const Shape& s : shapes) {
      if (d + s.rank() < rank) continue;  // missing on the left: acts as 1
      size_t sd = d + s.rank() - rank;
      int64_t v = s[sd];
      if (v < 0) {
        std::string name = dim_symbol(s, sd);
        if (!unknown)
          symbol = name;
        else if (symbol != name)
          symbol.clear();
        unknown = true;
        continue;
      }
      if (v == 1) continue;
      if (dim != 1 && dim != v) {
        std::string msg = "cannot broadcast input shapes";
        for (size_t k = 0; k < shapes.size(); ++k)
          msg += (k ? " and " : " ") + shapes[k].to_string();
        op_fail(node, msg + " (dim " + std::to_string(dim) + " vs " + std::to_string(v) + ")");
      }
      dim = v;
    }
    if (dim != 1) {
      out[d] = dim;  // a known size > 1 wins over unknown dims (they must match it at run time)
    } else if (unknown) {
      out[d] = Shape::kDynamic;
      set_dim_symbol(out, d, symbol);
    }
  }
  return out;
}

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.rank(), 0);
  std::vector<int64_t> in_st = row_major_strides(in);
  size_t off = out.rank() - in.rank();
  for (size_t d = 0; d < in.rank(); ++d) st[d + off] = in[d] == 1 ? 0 : in_st[d];
  return st;
}

CollapsedBroadcast collapse_broadcast(const std::vector<Shape>& operands, const Shape& out) {
  std::vector<std::vector<int64_t>> in;
  for (const Shape& s : operands) in.push_back(broadcast_strides(s, out));
  CollapsedBroadcast c;
  c.strides.resize(operands.size());
  for (size_t d = out.rank(); d-- > 0;) {  // from the innermost dim outwards
    if (out[d] == 1) continue;
    bool merges = !c.dims.empty();
    for (size_t k = 0; k < in.size() && merges; ++k)
      merges = in[k][d] == c.strides[k].back() * c.dims.back();
    if (merges) {
      c.dims.back() *= out[d];
      continue;
    }
    c.dims.push_back(out[d]);
    for (size_t k = 0; k < in.size(); ++k) c.strides[k].push_back(in[k][d]);
  }
  if (c.dims.empty()) {  // a single element
    c.dims = {1};
    for (auto& s : c.strides) s = {0};
  }
  std::reverse(c.dims.begin(), c.dims.end());
  for (auto& s : c.strides) std::reverse(s.begin(), s.end());
  return c;
}

}  // namespace minfer
