// The epilogue's smooth activations (backends/cpu/smooth_activation.h) at each ISA level's
// vector width: 16 lanes on AVX-512 (SiLU is about a quarter of EfficientNet-B0's time).
#include "backends/cpu/isa/isa_kernels.h"
#include "backends/cpu/isa/simd.h"
#include "backends/cpu/smooth_activation.h"

namespace minfer::cpu::MINFER_ISA_NS {

namespace {
using VecW = float __attribute__((vector_size(4 * kF32Lanes)));
using IntW = int32_t __attribute__((vector_size(4 * kF32Lanes)));
}  // namespace

extern const f32::SmoothActivation kSmoothActivation;
const f32::SmoothActivation kSmoothActivation{static_cast<Isa>(MINFER_ISA_LEVEL),
                                              smooth_activation<VecW, IntW>};

}  // namespace minfer::cpu::MINFER_ISA_NS
