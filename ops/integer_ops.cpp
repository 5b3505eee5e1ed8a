// The integer-arithmetic family that ONNX Runtime's dynamically quantized models use.
#include "ops/integer_ops.h"

#include "ops/builtin_ops.h"

namespace minfer {

void register_integer_ops(OpRegistry& registry) {
  register_conv_integer_ops(registry);
  register_matmul_integer_ops(registry);
  register_dynamic_quantize_ops(registry);
}

}  // namespace minfer
