// Parsing of the int8 ops' quantization attributes into integer parameters, and the
// NCHW <-> NHWC helpers the reference kernels use.
#include <cstring>

#include "ops/int8/int8_ops.h"
#include "ops/op_util.h"

namespace minfer::int8 {

float require_scale(const Node& node, const std::string& name) {
  op_require(node, node.attrs.has(name), "attribute '" + name + "' is missing");
  float s = node.attrs.get_float(name, 0.f);
  op_require(node, std::isfinite(s) && s > 0,
             "attribute '" + name + "' must be a positive finite scale, got " + std::to_string(s));
  return s;
}

int32_t require_zero_point(const Node& node, const std::string& name) {
  int64_t z = node.attrs.get_int(name, 0);
  op_require(node, z >= kQMin && z <= kQMax,
             "attribute '" + name + "' must be in [-128, 127], got " + std::to_string(z));
  return static_cast<int32_t>(z);
}

namespace {
void read_bounds(const Node& node, const std::string& prefix, int32_t& lo, int32_t& hi) {
  int64_t a = node.attrs.get_int(prefix + "_min", kQMin);
  int64_t b = node.attrs.get_int(prefix + "_max", kQMax);
  op_require(node, a >= kQMin && b <= kQMax && a <= b,
             "attributes " + prefix + "_min/" + prefix +
                 "_max must satisfy -128 <= min <= max "
                 "<= 127, got " +
                 std::to_string(a) + ", " + std::to_string(b));
  lo = static_cast<int32_t>(a);
  hi = static_cast<int32_t>(b);
}

Multiplier multiplier_or_fail(const Node& node, double M) {
  try {
    return make_multiplier(M);
  } catch (const Error& e) {
    throw Error(e.code(), node.describe() + ": " + e.what());
  }
}
}  // namespace

int32_t x_zero_point(const Node& node) { return require_zero_point(node, "x_zero_point"); }

OutputStage parse_output_stage(const Node& node, int64_t channels, bool has_residual) {
  OutputStage st;
  const float sx = require_scale(node, "x_scale");
  x_zero_point(node);
  std::vector<float> sw = node.attrs.get_floats("w_scale");
  op_require(node, sw.size() == 1 || static_cast<int64_t>(sw.size()) == channels,
             "attribute 'w_scale' has " + std::to_string(sw.size()) + " values, expected 1 or " +
                 std::to_string(channels));
  for (float s : sw)
    op_require(node, std::isfinite(s) && s > 0, "attribute 'w_scale' must be positive and finite");
  if (sw.size() == 1) sw.assign(static_cast<size_t>(channels), sw[0]);

  st.int8_out = node.attrs.has("y_scale");
  const std::string act = node.attrs.get_string("activation", "");
  const bool smooth = act == "Sigmoid" || act == "Silu" || act == "HardSigmoid" ||
                      act == "HardSwish" || act == "Gelu" || act == "GeluTanh";
  op_require(node, act.empty() || act == "Relu" || smooth,
             "activation must be \"\", \"Relu\", \"Sigmoid\", \"Silu\", \"HardSigmoid\", "
             "\"HardSwish\", \"Gelu\" or \"GeluTanh\", got \"" +
                 act + "\"");
  if (!st.int8_out || smooth) {
    op_require(node, !has_residual, "a fused residual needs an int8 output without activation");
    st.relu = act == "Relu";
    st.smooth = smooth;
    for (float s : sw) st.out_scale.push_back(sx * s);  // the float32 product
    if (!st.int8_out) return st;
    // An int8 output after a smooth activation: QuantizeLinear of the float output.
    op_require(node, !node.attrs.has("y_min") && !node.attrs.has("y_max"),
               "an int8 output after activation \"" + act + "\" saturates to int8: no y_min/y_max");
    st.quantize_float = true;
    st.y_scale = require_scale(node, "y_scale");
    st.y_zero_point = require_zero_point(node, "y_zero_point");
    return st;
  }
  op_require(node, act.empty(),
             "activation \"Relu\" needs a float output (no y_scale); an int8 output clamps with "
             "y_min/y_max");
  const float sy = require_scale(node, "y_scale");
  st.y_zero_point = require_zero_point(node, "y_zero_point");
  read_bounds(node, "y", st.y_min, st.y_max);
  float stage_scale = sy;
  if (has_residual) {
    st.residual = true;
    stage_scale = require_scale(node, "conv_scale");
    st.zero_point = require_zero_point(node, "conv_zero_point");
    read_bounds(node, "conv", st.qmin, st.qmax);
    const float sz = require_scale(node, "z_scale");
    st.z_zero_point = require_zero_point(node, "z_zero_point");
    try {
      st.add = make_add_multipliers(double(stage_scale) / sy, double(sz) / sy);
    } catch (const Error& e) {
      throw Error(e.code(), node.describe() + ": " + e.what());
    }
  } else {
    st.zero_point = st.y_zero_point;
    st.qmin = st.y_min;
    st.qmax = st.y_max;
  }
  for (float s : sw)
    st.mult.push_back(multiplier_or_fail(node, double(sx) * double(s) / double(stage_scale)));
  return st;
}

AddStage parse_add_stage(const Node& node) {
  AddStage st;
  const float sa = require_scale(node, "a_scale");
  const float sb = require_scale(node, "b_scale");
  const float sy = require_scale(node, "y_scale");
  st.a_zero_point = require_zero_point(node, "a_zero_point");
  st.b_zero_point = require_zero_point(node, "b_zero_point");
  st.y_zero_point = require_zero_point(node, "y_zero_point");
  read_bounds(node, "y", st.y_min, st.y_max);
  try {
    st.mult = make_add_multipliers(double(sa) / sy, double(sb) / sy);
  } catch (const Error& e) {
    throw Error(e.code(), node.describe() + ": " + e.what());
  }
  return st;
}

PoolStage parse_pool_stage(const Node& node) {
  PoolStage st;
  st.x_scale = require_scale(node, "x_scale");
  st.y_scale = require_scale(node, "y_scale");
  st.x_zero_point = require_zero_point(node, "x_zero_point");
  st.y_zero_point = require_zero_point(node, "y_zero_point");
  // The largest multiplier (a window of one element) must be representable.
  multiplier_or_fail(node, double(st.x_scale) / double(st.y_scale));
  return st;
}

Multiplier pool_multiplier(const PoolStage& st, int64_t count) {
  return make_multiplier(double(st.x_scale) / (double(st.y_scale) * double(count)));
}

bool is_nhwc(const Node& node) {
  const std::string layout = node.attrs.get_string("layout", "NCHW");
  op_require(node, layout == "NCHW" || layout == "NHWC",
             "layout must be \"NCHW\" or \"NHWC\", got \"" + layout + "\"");
  return layout == "NHWC";
}

Shape nhwc_to_nchw_shape(const Shape& s) {
  std::vector<int64_t> d = s.dims();
  if (d.size() >= 3) {
    int64_t c = d.back();
    d.pop_back();
    d.insert(d.begin() + 1, c);
  }
  Shape r(d);
  for (size_t i = 0; i < s.rank(); ++i) {
    std::string sym = dim_symbol(s, i);
    size_t to = (d.size() >= 3 && i == s.rank() - 1) ? 1 : (d.size() >= 3 && i >= 1 ? i + 1 : i);
    if (!sym.empty()) set_dim_symbol(r, to, sym);
  }
  return r;
}

Shape nchw_to_nhwc_shape(const Shape& s) {
  std::vector<int64_t> d = s.dims();
  if (d.size() >= 3) {
    int64_t c = d[1];
    d.erase(d.begin() + 1);
    d.push_back(c);
  }
  Shape r(d);
  for (size_t i = 0; i < s.rank(); ++i) {
    std::string sym = dim_symbol(s, i);
    size_t to = (d.size() >= 3 && i == 1) ? d.size() - 1 : (d.size() >= 3 && i >= 2 ? i - 1 : i);
    if (!sym.empty()) set_dim_symbol(r, to, sym);
  }
  return r;
}

namespace {
// Copies [N, A, B] -> [N, B, A] element by element (A, B flattened groups of dims).
Tensor swap_inner(const Tensor& t, Shape out_shape, int64_t a, int64_t b) {
  Tensor y(t.dtype(), std::move(out_shape));
  const size_t es = dtype_size(t.dtype());
  const char* src = static_cast<const char*>(t.raw());
  char* dst = static_cast<char*>(y.raw());
  const int64_t n = a * b == 0 ? 0 : t.numel() / (a * b);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t x = 0; x < a; ++x)
      for (int64_t z = 0; z < b; ++z)
        std::memcpy(dst + ((i * b + z) * a + x) * es, src + ((i * a + x) * b + z) * es, es);
  return y;
}
}  // namespace

Tensor quantize_to_int8(const Tensor& x, float scale, int32_t zero_point) {
  Tensor q(DType::i8, x.shape());
  const float* xp = x.data<float>();
  int8_t* qp = q.data<int8_t>();
  for (int64_t i = 0; i < x.numel(); ++i)
    qp[i] = static_cast<int8_t>(quantize_value(xp[i], scale, zero_point, -128, 127));
  return q;
}

Tensor nhwc_to_nchw(const Tensor& t) {
  if (t.rank() < 3) return t;
  const int64_t c = t.dim(t.rank() - 1);
  const int64_t hw = dims_product(t.shape(), 1, t.rank() - 1);
  return swap_inner(t, nhwc_to_nchw_shape(t.shape()), hw, c);
}

Tensor nchw_to_nhwc(const Tensor& t) {
  if (t.rank() < 3) return t;
  const int64_t c = t.dim(1);
  const int64_t hw = dims_product(t.shape(), 2, t.rank());
  return swap_inner(t, nchw_to_nhwc_shape(t.shape()), c, hw);
}

}  // namespace minfer::int8
