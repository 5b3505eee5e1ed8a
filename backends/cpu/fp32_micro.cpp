#include "backends/cpu/fp32_micro.h"

#include <string>

#include "minfer/error.h"

namespace minfer::cpu {

const f32::MicroKernels& fp32_micro_kernels(Isa isa) {
  const LevelKernels* level = level_kernels(isa);
  check(level != nullptr, ErrorCode::Unsupported,
        std::string("no fp32 CPU GEMM tile of this build runs at ISA level ") + isa_name(isa));
  return *level->fp32;
}

}  // namespace minfer::cpu
