// Runs a FusedConv node through cpu::ConvKernel as a session would plan it: the weights and
// bias (inputs 1 and 2) constant, the output and a workspace poisoned with NaN first, so that a
// read before a write shows up. Where the kernel may write its output over the residual
// (PrepareContext::overwrites_input), it runs once more that way and must give the same bits.
// Shared by the tests of the conv kernel's paths.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "backends/cpu/conv.h"
#include "minfer/kernel.h"
#include "minfer/registry.h"

namespace minfer::test {

struct ConvRun {
  Tensor y;
  std::string variant;  // the kernel's path, e.g. "winograd avx512vnni"
};

inline ConvRun run_fused_conv(const Node& node, const std::vector<Tensor>& inputs,
                              const Shape& ys, int threads) {
  std::vector<TensorInfo> infos;
  for (size_t i = 0; i < inputs.size(); ++i)
    infos.push_back(inputs[i].defined()
                        ? TensorInfo{true, DType::f32, inputs[i].shape(),
                                     i == 1 || i == 2 ? &inputs[i] : nullptr}
                        : TensorInfo{});
  PrepareContext pctx{node, infos, {{true, DType::f32, ys, nullptr}}};
  pctx.threads = threads;
  cpu::ConvKernel kernel;
  kernel.prepare(pctx);
  Tensor y(DType::f32, ys);
  std::fill(y.data<float>(), y.data<float>() + y.numel(), std::numeric_limits<float>::quiet_NaN());
  void* ws = pctx.workspace_bytes ? ::operator new(pctx.workspace_bytes, std::align_val_t(64))
                                  : nullptr;
  if (ws) std::memset(ws, 0xff, pctx.workspace_bytes);
  RunContext rc;
  for (const Tensor& t : inputs) rc.inputs.push_back(t.defined() ? &t : nullptr);
  rc.outputs.push_back(&y);
  rc.workspace = ws;
  rc.threads = threads;
  kernel.run(rc);
  const int over = pctx.overwrites_input;
  if (over >= 0 && size_t(over) < inputs.size() && inputs[size_t(over)].defined()) {
    Tensor y_over = inputs[size_t(over)].clone();
    rc.inputs[size_t(over)] = &y_over;
    rc.outputs[0] = &y_over;
    kernel.run(rc);
    INFO("the output written over input " << over);
    REQUIRE(std::memcmp(y_over.raw(), y.raw(), y.nbytes()) == 0);
  }
  if (ws) ::operator delete(ws, std::align_val_t(64));
  return {y, kernel.variant()};
}

// The tests' activations on a FusedConv node: 0 none, 1 Relu, 2 Clip [-0.5, 0.75], 3 Silu.
inline void set_activation(Attributes& a, int act) {
  if (act == 1) a.set("activation", std::string("Relu"));
  if (act == 2) {
    a.set("activation", std::string("Clip"));
    a.set("activation_min", -0.5f);
    a.set("activation_max", 0.75f);
  }
  if (act == 3) a.set("activation", std::string("Silu"));
}

// The oracle of those FusedConvs: the Conv reference kernel with `conv_attrs` on inputs
// x, w (and in[2], the bias, where `bias`), plus in[3] (the residual) where `residual`, then
// the activation `act` as set_activation() names it.
inline Tensor conv_reference(const Attributes& conv_attrs, const std::vector<Tensor>& in,
                             bool bias, bool residual, int act) {
  Graph g;
  std::vector<Value*> args;
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < (bias ? 3u : 2u); ++i) {
    args.push_back(g.add_input("in" + std::to_string(i), DType::f32, in[i].shape()));
    tensors.push_back(in[i]);
  }
  Node* conv = g.add_node("Conv", "conv", args, 1, conv_attrs);
  g.infer_shapes();
  Tensor y = OpRegistry::global().get_op("", "Conv").reference(*conv, tensors)[0];
  float* p = y.data<float>();
  for (int64_t i = 0; i < y.numel(); ++i) {
    float v = p[i] + (residual ? in[3].data<float>()[i] : 0.f);
    if (act == 1) v = v > 0.f ? v : 0.f;
    if (act == 2) v = std::min(std::max(v, -0.5f), 0.75f);
    if (act == 3) v = float(v / (1.0 + std::exp(-double(v))));
    p[i] = v;
  }
  return y;
}

}  // namespace minfer::test
