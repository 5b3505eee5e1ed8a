// Stem space-to-depth (CUDA sessions): a stride-2 QConv/HConv whose NHWC input of at most 4
// channels comes straight from an NCHW tensor (the Transpose the int8 layout pass adds, or
// ToHalfNhwc) becomes a stride-1 conv over SpaceToDepthNhwc of that tensor: 2x2 blocks of
// pixels as 16 channels (the 4C used ones, then padding). With k = (ky, kx) of the original
// kernel, pad p and j = ky - p:
//
//   original row 2 * o + j = 2 * (o - pt + dy) + sy,  dy = floor(j / 2) + pt,  sy = j mod 2
//
// so the new kernel has floor((k - 1 - p) / 2) + pt + 1 taps with pt = ceil(p / 2) leading
// pad, and W'[m][(sy * 2 + sx) * C + c][dy][dx] = W[m][c][ky][kx] (zero elsewhere). Padding
// reads the same zero (point) in both, so int8 results stay bit-exact; the 16-channel pixels
// then load as one 16-byte copy each (a 7x7 RGB stem: 4x4 taps of 16 channels). An int8
// stem's QuantizeLinear moves into SpaceToDepthNhwc too: one pass over the float input.
#include <cstring>

#include "graph/passes/passes.h"
#include "graph/passes/quantize.h"
#include "graph/passes/rewrite.h"
#include "minfer/registry.h"
#include "ops/int8/int8_ops.h"

namespace minfer::passes {

namespace {

constexpr int64_t kChannels = 16;

int64_t floor_div2(int64_t a) { return a >= 0 ? a / 2 : -((1 - a) / 2); }

// The geometry of one spatial axis of the rewritten conv.
struct Axis {
  int64_t pad_begin, pad_end, taps;
};

// Axis of size `in` (even), kernel k, pads (begin, end), output `out`; false if the
// rewritten conv would need a negative end pad.
bool rewrite_axis(int64_t in, int64_t k, int64_t begin, int64_t out, Axis& a) {
  a.pad_begin = (begin + 1) / 2;
  a.taps = floor_div2(k - 1 - begin) + a.pad_begin + 1;
  a.pad_end = out - in / 2 - a.pad_begin + a.taps - 1;
  return a.pad_end >= 0;
}

// Where the stem's NHWC input comes from: an NCHW tensor (`x`) through a Transpose, or
// ToHalfNhwc (`half`); for a Transpose of a per-tensor QuantizeLinear to int8, x is the float
// input and (scale, zero_point) the quantization, which SpaceToDepthNhwc then does itself.
struct Source {
  Value* x = nullptr;
  bool half = false;
  Value* scale = nullptr;
  Value* zero_point = nullptr;
};

bool scalar_constant(const Value* v, DType t) {
  const Tensor* c = rewrite::constant_of(v);
  return c && c->dtype() == t && c->numel() == 1;
}

bool known_nchw(const Value* v) {
  // The batch may be symbolic; channels and the image size must be known.
  return v && v->shape_known && v->shape.rank() == 4 && v->shape[1] > 0 && v->shape[2] > 0 &&
         v->shape[3] > 0;
}

// Per-tensor QuantizeLinear: `axis` does not matter; anything else (block_size, output_dtype)
// is left alone.
bool only_axis_attributes(const Node& q) {
  for (const auto& [name, value] : q.attrs.all())
    if (name != "axis" && name != "saturate") return false;
  return true;
}

Source nchw_source(const Node* conv) {
  Source s;
  const Node* p = conv->input(0) ? conv->input(0)->producer : nullptr;
  if (!p) return s;
  s.half = rewrite::is_op(p, "ToHalfNhwc", kMinferDomain);
  const bool transpose = rewrite::is_op(p, "Transpose") &&
                         p->attrs.get_ints("perm") == std::vector<int64_t>{0, 2, 3, 1};
  if ((!s.half && !transpose) || !known_nchw(p->input(0))) return s;
  s.x = p->input(0);
  const Node* q = s.x->producer;
  if (transpose && q && rewrite::is_op(q, "QuantizeLinear") && known_nchw(q->input(0)) &&
      q->input(0)->dtype == DType::f32 && scalar_constant(q->input(1), DType::f32) &&
      scalar_constant(q->input(2), DType::i8) && only_axis_attributes(*q)) {
    s.x = q->input(0);
    s.scale = q->input(1);
    s.zero_point = q->input(2);
  }
  return s;
}

Tensor rearranged_weight(const Tensor& w, const Axis& ay, const Axis& ax, int64_t pt,
                         int64_t pl) {
  const int64_t m = w.dim(0), c = w.dim(1), kh = w.dim(2), kw = w.dim(3);
  const size_t es = dtype_size(w.dtype());
  Tensor out(w.dtype(), Shape{m, kChannels, ay.taps, ax.taps});
  std::memset(out.raw(), 0, out.nbytes());
  const char* src = static_cast<const char*>(w.raw());
  char* dst = static_cast<char*>(out.raw());
  for (int64_t o = 0; o < m; ++o)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t ky = 0; ky < kh; ++ky)
        for (int64_t kx = 0; kx < kw; ++kx) {
          const int64_t jy = ky - pt, jx = kx - pl;
          const int64_t dy = floor_div2(jy) + ay.pad_begin, sy = jy - 2 * floor_div2(jy);
          const int64_t dx = floor_div2(jx) + ax.pad_begin, sx = jx - 2 * floor_div2(jx);
          const int64_t to = ((o * kChannels + (sy * 2 + sx) * c + ch) * ay.taps + dy) * ax.taps + dx;
          std::memcpy(dst + to * es, src + (((o * c + ch) * kh + ky) * kw + kx) * es, es);
        }
  return out;
}

}  // namespace

bool space_to_depth_stems(Graph& g, PassLog& log) {
  bool changed = false;
  for (Node* n : g.topo_order()) {
    const bool qconv = rewrite::is_op(n, "QConv", kMinferDomain) &&
                       n->attrs.get_string("layout", "NCHW") == "NHWC";
    if (!qconv && !rewrite::is_op(n, "HConv", kMinferDomain)) continue;
    if (n->attrs.get_int("group", 1) != 1 ||
        n->attrs.get_ints("strides", {1, 1}) != std::vector<int64_t>{2, 2} ||
        n->attrs.get_ints("dilations", {1, 1}) != std::vector<int64_t>{1, 1} ||
        n->attrs.get_string("auto_pad", "NOTSET") != "NOTSET")
      continue;
    const Source source = nchw_source(n);
    Value* src = source.x;
    const Tensor* w = rewrite::constant_of(n->input(1));
    const Value* y = n->outputs[0];
    if (!src || !w || w->rank() != 4 || !y->shape_known || y->shape.rank() != 4 ||
        y->shape[1] <= 0 || y->shape[2] <= 0)
      continue;
    const Shape& s = src->shape;
    if (s[1] * 4 > kChannels || s[2] % 2 || s[3] % 2 || w->dim(1) != s[1]) continue;
    const std::vector<int64_t> pads = n->attrs.get_ints("pads", {0, 0, 0, 0});
    Axis ay, ax;
    if (pads.size() != 4 || !rewrite_axis(s[2], w->dim(2), pads[0], y->shape[1], ay) ||
        !rewrite_axis(s[3], w->dim(3), pads[1], y->shape[2], ax))
      continue;

    std::vector<Value*> inputs = {src};
    if (qconv) {
      Tensor zero(DType::i8, Shape{});
      *zero.data<int8_t>() = static_cast<int8_t>(int8::x_zero_point(*n));
      inputs.push_back(quant::add_unique_constant(g, n->name + ".s2d_pad", std::move(zero)));
      if (source.scale) inputs.insert(inputs.end(), {source.scale, source.zero_point});
    }
    Attributes a;
    a.set("blocksize", int64_t{2});
    a.set("channels", kChannels);
    if (source.half) a.set("half", int64_t{1});
    Node* s2d = g.add_node("SpaceToDepthNhwc", n->name + "_space_to_depth", inputs, 1, a,
                           kMinferDomain);
    g.set_input(n, 0, s2d->outputs[0]);
    g.set_input(n, 1, quant::add_unique_constant(g, n->name + ".weight_s2d",
                                                 rearranged_weight(*w, ay, ax, pads[0], pads[1])));
    n->attrs.set("kernel_shape", std::vector<int64_t>{ay.taps, ax.taps});
    n->attrs.set("strides", std::vector<int64_t>{1, 1});
    n->attrs.set("pads", std::vector<int64_t>{ay.pad_begin, ax.pad_begin, ay.pad_end, ax.pad_end});
    log.note("rewrote " + n->describe() + " as a stride-1 " + std::to_string(ay.taps) + "x" +
             std::to_string(ax.taps) + " conv over 2x2 space-to-depth");
    changed = true;
  }
  if (changed) g.infer_shapes();
  return changed;
}

}  // namespace minfer::passes
