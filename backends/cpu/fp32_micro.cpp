#include "backends/cpu/fp32_micro.h"

#include <string>

#include "minfer/error.h"

namespace minfer::cpu {

const f32::MicroKernels& fp32_micro_kernels(Isa isa) {
  const f32::MicroKernels* best = pick_level<f32::MicroKernels>(
      {
#ifdef MINFER_HAVE_ISA_avx2
          &isa_avx2::kFp32MicroKernels,
#endif
#ifdef MINFER_HAVE_ISA_avxvnni
          &isa_avxvnni::kFp32MicroKernels,
#endif
#ifdef MINFER_HAVE_ISA_avx512
          &isa_avx512::kFp32MicroKernels,
#endif
#ifdef MINFER_HAVE_ISA_avx512vnni
          &isa_avx512vnni::kFp32MicroKernels,
#endif
          nullptr},
      isa);
  check(best != nullptr, ErrorCode::Unsupported,
        std::string("no fp32 CPU GEMM tile of this build runs at ISA level ") + isa_name(isa));
  return *best;
}

}  // namespace minfer::cpu
