#include "ops/int8/int8_ops.h"

namespace minfer {

void register_int8_ops(OpRegistry& registry) {
  register_quantize_linear_ops(registry);
  register_qconv_ops(registry);
  register_qadd_ops(registry);
  register_qpool_ops(registry);
  register_gated_quantize_ops(registry);
  register_cpu_int8_kernels(registry);
}

}  // namespace minfer
