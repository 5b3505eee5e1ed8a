// Stem channel padding (CUDA sessions): a QConv or HConv whose NHWC input has 1 to 3 channels
// (the RGB stem) gets its input padded to 4 channels with the input's zero (the zero point
// for int8, +0.0 for fp16) and a zero weight for the added channel. The product is unchanged
// (int8 results stay bit-exact), and each input pixel becomes a whole 4- or 8-byte word that
// the implicit GEMM copies in one instruction instead of gathering byte by byte.
#include <cstring>

#include "graph/passes/passes.h"
#include "graph/passes/quantize.h"
#include "graph/passes/rewrite.h"
#include "minfer/registry.h"
#include "ops/int8/int8_ops.h"

namespace minfer::passes {

namespace {

constexpr int64_t kChannels = 4;

// w [M, C, kh, kw] -> [M, 4, kh, kw], the added channels zero (any element type).
Tensor pad_weight_channels(const Tensor& w) {
  const int64_t m = w.dim(0), c = w.dim(1), taps = w.dim(2) * w.dim(3);
  const size_t es = dtype_size(w.dtype());
  Tensor padded(w.dtype(), Shape{m, kChannels, w.dim(2), w.dim(3)});
  std::memset(padded.raw(), 0, padded.nbytes());
  const char* src = static_cast<const char*>(w.raw());
  char* dst = static_cast<char*>(padded.raw());
  for (int64_t o = 0; o < m; ++o)
    std::memcpy(dst + o * kChannels * taps * es, src + o * c * taps * es, size_t(c * taps) * es);
  return padded;
}

}  // namespace

bool pad_stem_channels(Graph& g, PassLog& log) {
  bool changed = false;
  for (Node* n : g.topo_order()) {
    const bool qconv = rewrite::is_op(n, "QConv", kMinferDomain) &&
                       n->attrs.get_string("layout", "NCHW") == "NHWC";
    const bool hconv = rewrite::is_op(n, "HConv", kMinferDomain);
    if ((!qconv && !hconv) || n->attrs.get_int("group", 1) != 1) continue;
    Value* x = n->input(0);
    const Tensor* w = rewrite::constant_of(n->input(1));
    if (!x || !x->shape_known || x->shape.rank() != 4 || !w || w->rank() != 4) continue;
    const int64_t c = x->shape[3];
    if (c < 1 || c >= kChannels || w->dim(1) != c) continue;

    Tensor pads = Tensor::from_vector(std::vector<int64_t>{0, 0, 0, 0, 0, 0, 0, kChannels - c},
                                      Shape{8});
    Tensor value(x->dtype, Shape{});
    std::memset(value.raw(), 0, value.nbytes());  // fp16 +0.0
    if (qconv) *value.data<int8_t>() = static_cast<int8_t>(int8::x_zero_point(*n));
    Node* pad = g.add_node(
        "Pad", n->name + "_pad_channels",
        {x, quant::add_unique_constant(g, n->name + ".pads", std::move(pads)),
         quant::add_unique_constant(g, n->name + ".pad_value", std::move(value))});
    g.set_input(n, 0, pad->outputs[0]);
    g.set_input(n, 1, quant::add_unique_constant(g, n->name + ".weight_4ch",
                                                 pad_weight_channels(*w)));
    log.note("padded the input of " + n->describe() + " from " + std::to_string(c) +
             " to 4 channels");
    changed = true;
  }
  if (changed) g.infer_shapes();
  return changed;
}

}  // namespace minfer::passes
