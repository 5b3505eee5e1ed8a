// Conv tap trimming: kernel rows and columns that read only padding, for every output
// position, are cut from the weight, and the pads shrink to match. Such taps multiply zeros
// (int8: the zero point, real 0), so the output is unchanged. It happens to dilated convs on
// planes smaller than their dilation: DeepLabv3's ASPP branches (3x3 at rates 12, 24, 36) on
// the 4x4 plane of a 64x64 input become 1x1 convs, 9x less work (at 520x520, 33x33, the rate-36
// one), and the dilated 5x5 depthwise convs of its last MobileNet blocks there 3x3.
#include <algorithm>
#include <cstring>

#include "graph/passes/passes.h"
#include "graph/passes/quantize.h"
#include "graph/passes/rewrite.h"
#include "minfer/registry.h"
#include "ops/conv_geometry.h"
#include "ops/op_util.h"

namespace minfer::passes {

namespace {

// The taps [first, last] of one spatial dim that read the input for some output position.
struct LiveTaps {
  int64_t first = 0, last = -1;
};

LiveTaps live_taps(const WindowGeometry& g, size_t dim) {
  LiveTaps live{g.kernel[dim], -1};
  for (int64_t o = 0; o < g.output[dim]; ++o) {
    const TapRange r = taps_in(o * g.strides[dim] - g.pads_begin[dim], g.kernel[dim],
                               g.dilations[dim], 0, g.input[dim]);
    if (r.size() == 0) continue;
    live.first = std::min(live.first, r.lo);
    live.last = std::max(live.last, r.hi - 1);
  }
  return live;
}

// w [M, C/g, K1..Kk] cut to the taps [first[d], first[d] + kept[d]) of each spatial dim d.
Tensor cut_weight(const Tensor& w, const std::vector<int64_t>& first,
                  const std::vector<int64_t>& kept) {
  const size_t k = first.size(), es = dtype_size(w.dtype());
  std::vector<int64_t> dims{w.dim(0), w.dim(1)};
  dims.insert(dims.end(), kept.begin(), kept.end());
  Tensor out(w.dtype(), Shape(dims));
  // Odometer over the kept taps of all but the last dim; the last dim's taps are contiguous.
  const int64_t filters = w.dim(0) * w.dim(1);
  const int64_t rows = out.numel() / (filters * kept[k - 1]);
  const char* src = static_cast<const char*>(w.raw());
  char* dst = static_cast<char*>(out.raw());
  const int64_t filter_in = w.numel() / filters;
  const size_t run = size_t(kept[k - 1]) * es;
  for (int64_t f = 0; f < filters; ++f)
    for (int64_t r = 0; r < rows; ++r) {
      int64_t offset = 0, rest = r, stride = 1;
      for (size_t d = k; d-- > 0;) {  // the tap index in w of each dim, innermost first
        const int64_t tap = d == k - 1 ? first[d] : first[d] + rest % kept[d];
        if (d != k - 1) rest /= kept[d];
        offset += tap * stride;
        stride *= w.dim(2 + d);
      }
      std::memcpy(dst + (f * rows + r) * run, src + (f * filter_in + offset) * int64_t(es), run);
    }
  return out;
}

// The input shape as NCHW: QConv reads NHWC where its layout says so.
Shape nchw_shape(const Node& conv, const Shape& x) {
  if (conv.attrs.get_string("layout", "NCHW") != "NHWC") return x;
  std::vector<int64_t> dims{x[0], x[x.rank() - 1]};
  for (size_t d = 1; d + 1 < x.rank(); ++d) dims.push_back(x[d]);
  return Shape(dims);
}

}  // namespace

bool trim_conv_taps(Graph& g, PassLog& log) {
  bool changed = false;
  for (Node* n : g.topo_order()) {
    if (!rewrite::is_op(n, "Conv") && !rewrite::is_op(n, "QConv", kMinferDomain)) continue;
    const Value* x = n->input(0);
    const Tensor* w = rewrite::constant_of(n->input(1));
    if (!x || !x->shape_known || !w || w->rank() < 3 || x->shape.rank() != w->rank()) continue;
    const ConvGeometry geo = conv_geometry(*n, nchw_shape(*n, x->shape), w->shape());
    if (!geo.is_static()) continue;
    std::vector<int64_t> first(geo.rank()), kept(geo.rank()), begins, ends;
    bool trims = false;
    for (size_t d = 0; d < geo.rank(); ++d) {
      const LiveTaps live = live_taps(geo, d);
      const int64_t pad_begin = geo.pads_begin[d] - live.first * geo.dilations[d];
      const int64_t pad_end = geo.pads_end[d] - (geo.kernel[d] - 1 - live.last) * geo.dilations[d];
      // Keep a dim whole where nothing reads the input (the output is the bias alone) or
      // where a trimmed window would need negative pads.
      const bool cut = live.last >= live.first && pad_begin >= 0 && pad_end >= 0;
      first[d] = cut ? live.first : 0;
      kept[d] = cut ? live.last - live.first + 1 : geo.kernel[d];
      begins.push_back(cut ? pad_begin : geo.pads_begin[d]);
      ends.push_back(cut ? pad_end : geo.pads_end[d]);
      trims |= kept[d] < geo.kernel[d];
    }
    if (!trims) continue;
    Tensor cut = cut_weight(*w, first, kept);
    log.note("trimmed " + n->describe() + " from kernel " + ints_to_string(geo.kernel) + " to " +
             ints_to_string(kept) + " (the other taps read only padding)");
    g.set_input(n, 1, quant::add_unique_constant(g, n->name + ".weight_trimmed", std::move(cut)));
    begins.insert(begins.end(), ends.begin(), ends.end());
    n->attrs.set("pads", begins);
    n->attrs.set("auto_pad", std::string("NOTSET"));
    if (n->attrs.has("kernel_shape")) n->attrs.set("kernel_shape", kept);
    changed = true;
  }
  return changed;
}

}  // namespace minfer::passes
