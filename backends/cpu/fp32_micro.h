// The fp32 GEMM tiles (backends/cpu/isa/sgemm_micro.cpp) of the ISA level a kernel is prepared
// for: ConvGemm and PackedRhs take them when they are built, so that a plan keeps the level it
// was prepared at (cpu::set_isa_cap, MINFER_ISA) whatever is capped later.
#pragma once

#include "backends/cpu/isa.h"
#include "backends/cpu/isa/isa_kernels.h"

namespace minfer::cpu {

// The tiles of the highest compiled level <= isa that this CPU runs; throws Unsupported when
// there is none (a CPU without AVX2: callers check has_any_isa() first).
const f32::MicroKernels& fp32_micro_kernels(Isa isa);
// Those of active_isa().
inline const f32::MicroKernels& fp32_micro_kernels() { return fp32_micro_kernels(active_isa()); }

}  // namespace minfer::cpu
