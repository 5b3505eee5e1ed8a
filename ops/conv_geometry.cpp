#include "ops/conv_geometry.h"

#include <algorithm>

#include "ops/op_util.h"

namespace minfer {

AutoPad parse_auto_pad(const Node& node) {
  std::string s = node.attrs.get_string("auto_pad", "NOTSET");
  if (s == "NOTSET" || s.empty()) return AutoPad::NotSet;
  if (s == "SAME_UPPER") return AutoPad::SameUpper;
  if (s == "SAME_LOWER") return AutoPad::SameLower;
  if (s == "VALID") return AutoPad::Valid;
  op_fail(node, "auto_pad '" + s + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
}

const std::vector<std::string>& conv_attributes() {
  static const std::vector<std::string> names{"auto_pad",     "dilations", "group",
                                              "kernel_shape", "pads",      "strides"};
  return names;
}

bool WindowGeometry::is_static() const {
  for (size_t i = 0; i < rank(); ++i)
    if (input[i] < 0 || output[i] < 0) return false;
  return true;
}

namespace {

// Reads an ints attribute that has one entry per spatial dim (or `count`), all >= min_value.
std::vector<int64_t> per_dim_attr(const Node& node, const std::string& name, size_t count,
                                  int64_t def, int64_t min_value) {
  std::vector<int64_t> v = node.attrs.get_ints(name, std::vector<int64_t>(count, def));
  if (v.size() != count)
    op_fail(node, name + " has " + std::to_string(v.size()) + " values, expected " +
                      std::to_string(count) + " for this input rank");
  for (int64_t x : v)
    if (x < min_value)
      op_fail(node,
              name + " " + ints_to_string(v) + " has a value below " + std::to_string(min_value));
  return v;
}

// Fills strides/dilations/pads/output of `g` (input and kernel must be set).
void resolve_window(const Node& node, WindowGeometry& g) {
  size_t k = g.rank();
  g.strides = per_dim_attr(node, "strides", k, 1, 1);
  g.dilations = per_dim_attr(node, "dilations", k, 1, 1);
  g.auto_pad = parse_auto_pad(node);
  g.pads_begin.assign(k, 0);
  g.pads_end.assign(k, 0);
  g.output.assign(k, -1);
  if (g.auto_pad == AutoPad::NotSet) {
    std::vector<int64_t> pads = per_dim_attr(node, "pads", 2 * k, 0, 0);
    for (size_t i = 0; i < k; ++i) {
      g.pads_begin[i] = pads[i];
      g.pads_end[i] = pads[i + k];
    }
  }
  for (size_t i = 0; i < k; ++i) {
    int64_t in = g.input[i], s = g.strides[i], ek = g.effective_kernel(i);
    if (g.auto_pad == AutoPad::SameUpper || g.auto_pad == AutoPad::SameLower) {
      if (in < 0) {  // the pads depend on the unknown size
        g.pads_begin[i] = g.pads_end[i] = -1;
        continue;
      }
      int64_t out = (in + s - 1) / s;
      int64_t total = std::max<int64_t>(0, (out - 1) * s + ek - in);
      int64_t small = total / 2, large = total - total / 2;
      g.pads_begin[i] = g.auto_pad == AutoPad::SameUpper ? small : large;
      g.pads_end[i] = g.auto_pad == AutoPad::SameUpper ? large : small;
      g.output[i] = out;
      continue;
    }
    if (in < 0) continue;
    int64_t span = in + g.pads_begin[i] + g.pads_end[i] - ek;
    if (span < 0)
      op_fail(node, "spatial dim " + std::to_string(i) + " has size " + std::to_string(in) +
                        " (padded " + std::to_string(in + g.pads_begin[i] + g.pads_end[i]) +
                        "), smaller than the dilated kernel size " + std::to_string(ek));
    int64_t out = span / s + 1;
    if (g.ceil_mode && g.auto_pad == AutoPad::NotSet) {
      out = (span + s - 1) / s + 1;
      // As PyTorch and ONNX Runtime do: the last window must start inside the input or the
      // left padding, not entirely in the right padding.
      if ((out - 1) * s >= in + g.pads_begin[i]) --out;
    }
    g.output[i] = out;
  }
}

void check_input_rank(const Node& node, const Shape& x, const char* what) {
  if (x.rank() < 3)
    op_fail(node, std::string(what) + " has shape " + x.to_string() +
                      "; expected rank >= 3 ([N, C, spatial...])");
}

}  // namespace

ConvGeometry conv_geometry(const Node& node, const Shape& x, const Shape& w) {
  check_input_rank(node, x, "input");
  size_t k = x.rank() - 2;
  if (w.rank() != x.rank())
    op_fail(node, "weight has shape " + w.to_string() + " (rank " + std::to_string(w.rank()) +
                      "), expected rank " + std::to_string(x.rank()) + " like the input " +
                      x.to_string());
  if (!w.is_static()) op_fail(node, "weight shape " + w.to_string() + " must be static");
  ConvGeometry g;
  g.group = node.attrs.get_int("group", 1);
  if (g.group < 1) op_fail(node, "group " + std::to_string(g.group) + " must be >= 1");
  g.batch = x[0];
  g.in_channels = x[1];
  g.out_channels = w[0];
  if (g.out_channels % g.group != 0)
    op_fail(node, "weight has " + std::to_string(g.out_channels) +
                      " output channels, not divisible by group " + std::to_string(g.group));
  if (g.in_channels >= 0 && g.in_channels != w[1] * g.group)
    op_fail(node, "weight has " + std::to_string(w[1]) + " input channels per group, input has " +
                      std::to_string(g.in_channels) + " channels (group " +
                      std::to_string(g.group) + ", so " +
                      (g.in_channels % g.group == 0
                           ? std::to_string(g.in_channels / g.group) + " per group"
                           : "not divisible") +
                      ")");
  if (g.in_channels < 0) g.in_channels = w[1] * g.group;  // implied by the weight
  g.input.assign(x.dims().begin() + 2, x.dims().end());
  g.kernel.assign(w.dims().begin() + 2, w.dims().end());
  if (node.attrs.has("kernel_shape")) {
    std::vector<int64_t> ks = node.attrs.get_ints("kernel_shape");
    if (ks != g.kernel)
      op_fail(node, "kernel_shape " + ints_to_string(ks) + " does not match the weight's " +
                        "spatial dims " + ints_to_string(g.kernel));
  }
  for (size_t i = 0; i < k; ++i)
    if (g.kernel[i] < 1) op_fail(node, "weight " + w.to_string() + " has an empty kernel");
  resolve_window(node, g);
  return g;
}

PoolGeometry pool_geometry(const Node& node, const Shape& x) {
  check_input_rank(node, x, "input");
  size_t k = x.rank() - 2;
  if (!node.attrs.has("kernel_shape")) op_fail(node, "required attribute kernel_shape is missing");
  PoolGeometry g;
  g.batch = x[0];
  g.channels = x[1];
  g.input.assign(x.dims().begin() + 2, x.dims().end());
  g.kernel = per_dim_attr(node, "kernel_shape", k, 1, 1);
  g.ceil_mode = node.attrs.get_int("ceil_mode", 0) != 0;
  g.count_include_pad = node.attrs.get_int("count_include_pad", 0) != 0;
  resolve_window(node, g);
  return g;
}

Shape window_output_shape(const WindowGeometry& g, const Shape& x, int64_t out_channels) {
  std::vector<int64_t> dims{x[0], out_channels};
  dims.insert(dims.end(), g.output.begin(), g.output.end());
  Shape out(std::move(dims));
  copy_dim(out, 0, x, 0);
  if (out_channels == x[1]) copy_dim(out, 1, x, 1);
  return out;
}

Window3 to_window3(const WindowGeometry& g) {
  Window3 w{};
  size_t lead = 3 - g.rank();
  for (size_t i = 0; i < 3; ++i) {
    bool real = i >= lead;
    size_t j = i - lead;
    w.in[i] = real ? g.input[j] : 1;
    w.out[i] = real ? g.output[j] : 1;
    w.k[i] = real ? g.kernel[j] : 1;
    w.s[i] = real ? g.strides[j] : 1;
    w.d[i] = real ? g.dilations[j] : 1;
    w.pb[i] = real ? g.pads_begin[j] : 0;
    w.pe[i] = real ? g.pads_end[j] : 0;
  }
  return w;
}

TapRange taps_in(int64_t start, int64_t k, int64_t dilation, int64_t begin, int64_t end) {
  // start + t * dilation >= begin  <=>  t >= ceil((begin - start) / dilation), and likewise
  // start + t * dilation < end  <=>  t < ceil((end - start) / dilation).
  auto ceil_div = [](int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -(-a / b); };
  TapRange r;
  r.lo = std::clamp<int64_t>(ceil_div(begin - start, dilation), 0, k);
  r.hi = std::clamp<int64_t>(ceil_div(end - start, dilation), r.lo, k);
  return r;
}

}  // namespace minfer
