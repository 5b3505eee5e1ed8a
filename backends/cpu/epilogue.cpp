#include "backends/cpu/epilogue.h"

namespace minfer::cpu {

Activation parse_activation(const Node& node) {
  Activation act;
  const std::string kind = node.attrs.get_string("activation", "");
  if (kind.empty()) return act;
  act.enabled = true;
  if (kind == "Relu") {
    act.lo = 0.f;
  } else if (kind == "Clip") {
    act.lo = node.attrs.get_float("activation_min", act.lo);
    act.hi = node.attrs.get_float("activation_max", act.hi);
  } else {
    throw Error(ErrorCode::InvalidModel, node.describe() + ": fused activation '" + kind +
                                             "' is not supported (expected Relu or Clip)");
  }
  return act;
}

}  // namespace minfer::cpu
