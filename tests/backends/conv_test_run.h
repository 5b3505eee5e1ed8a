// Runs a FusedConv node through cpu::ConvKernel as a session would plan it: the weights and
// bias (inputs 1 and 2) constant, the output and a workspace poisoned with NaN first, so that a
// read before a write shows up. Where the kernel may write its output over the residual
// (PrepareContext::overwrites_input), it runs once more that way and must give the same bits.
// Shared by the tests of the conv kernel's paths.
#pragma once

#include <catch2/catch.hpp>

#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "backends/cpu/conv.h"
#include "minfer/kernel.h"

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

}  // namespace minfer::test
