#include "backends/cpu/conv.h"
#include "backends/cpu/conv_nhwc.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/kernels.h"

namespace minfer {

void register_cpu_kernels(OpRegistry& registry) {
  // The Conv and Gemm kernels also run the fused forms, whose epilogues they implement.
  for (const char* domain : {"", kMinferDomain}) {
    const std::string prefix = *domain ? "Fused" : "";
    registry.register_kernel({domain, prefix + "Conv", Device::Type::CPU, {DType::f32},
                              "cpu-conv", cpu::ConvKernel::supports,
                              [] { return std::make_unique<cpu::ConvKernel>(); }});
    registry.register_kernel({domain, prefix + "Gemm", Device::Type::CPU, {DType::f32},
                              "cpu-eigen-gemm", cpu::GemmKernel::supports,
                              [] { return std::make_unique<cpu::GemmKernel>(); }});
  }
  registry.register_kernel({kMinferDomain, "NhwcConv", Device::Type::CPU, {DType::f32},
                            "cpu-nhwc-conv", cpu::NhwcConvKernel::supports,
                            [] { return std::make_unique<cpu::NhwcConvKernel>(); }});
  cpu::register_matmul_kernels(registry);
  cpu::register_elementwise_kernels(registry);
  cpu::register_pool_kernels(registry);
  cpu::register_norm_kernels(registry);
  cpu::register_layout_kernels(registry);
  cpu::register_gather_kernel(registry);
  cpu::register_where_kernel(registry);
  cpu::register_resize_kernels(registry);
  cpu::register_transformer_kernels(registry);
}

}  // namespace minfer
