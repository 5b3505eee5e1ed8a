// Registers the int8 CPU kernels (called from register_int8_ops).
#include "backends/cpu/int8/kernels.h"
#include "backends/cpu/int8/qconv_kernel.h"
#include "backends/cpu/int8/qdepthwise_kernel.h"
#include "ops/int8/int8_ops.h"

namespace minfer {

void register_cpu_int8_kernels(OpRegistry& registry) {
  for (const char* op : {"QConv", "QGemm"})
    registry.register_kernel({kMinferDomain,
                              op,
                              Device::Type::CPU,
                              {DType::i8},
                              std::string("cpu-int8-gemm"),
                              cpu::QConvKernel::supports,
                              [] { return std::make_unique<cpu::QConvKernel>(); }});
  // After the GEMM kernel, which takes every QConv (later registrations win): depthwise ones
  // are faster here.
  registry.register_kernel({kMinferDomain, "QConv", Device::Type::CPU, {DType::i8},
                            std::string("cpu-int8-depthwise"), cpu::QDepthwiseKernel::supports,
                            [] { return std::make_unique<cpu::QDepthwiseKernel>(); }});
  cpu::register_int8_elementwise_kernels(registry);
  cpu::register_int8_pool_kernels(registry);
}

}  // namespace minfer
