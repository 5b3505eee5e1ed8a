// One ISA level's kernel tables gathered in one LevelKernels (compiled once per level, like the
// sources that define the tables).
#include "backends/cpu/isa.h"
#include "backends/cpu/isa/isa_kernels.h"

namespace minfer::cpu::MINFER_ISA_NS {

extern const q8::MicroKernels kInt8MicroKernels;                // qgemm_micro.cpp
extern const q8::RequantKernels kRequantKernels;                // requant_tile.cpp
extern const q8::DepthwiseKernels kInt8Depthwise;               // qdepthwise_sums.cpp
extern const q8::DepthwiseGroupKernels kInt8DepthwiseGroups;    // qdepthwise_groups.cpp
extern const q8::QuantizeKernels kQuantizeKernels;              // quantize_floats.cpp
extern const f32::MicroKernels kFp32MicroKernels;               // sgemm_micro.cpp
extern const f32::DepthwisePlanes kDepthwisePlanes;             // depthwise_plane.cpp
extern const f32::DepthwiseChannelKernels kDepthwiseChannels;  // depthwise_channels.cpp
extern const f32::SmoothActivation kSmoothActivation;           // activation.cpp
extern const f32::WinogradKernels kWinogradKernels;             // winograd_rows.cpp
extern const f32::TransposeKernels kTransposeKernels;           // transpose.cpp
extern const f32::StridedConvKernels kStridedConvKernels;       // strided_conv.cpp
extern const f32::PaddedPlaneKernels kPaddedPlaneKernels;       // padded_planes.cpp
extern const f32::PoolKernels kPoolKernels;                     // pool_flat.cpp

const LevelKernels kLevelKernels{static_cast<Isa>(MINFER_ISA_LEVEL),
                                 &kInt8MicroKernels,
                                 &kRequantKernels,
                                 &kInt8Depthwise,
                                 &kInt8DepthwiseGroups,
                                 &kQuantizeKernels,
                                 &kFp32MicroKernels,
                                 &kDepthwisePlanes,
                                 &kDepthwiseChannels,
                                 &kSmoothActivation,
                                 &kWinogradKernels,
                                 &kTransposeKernels,
                                 &kStridedConvKernels,
                                 &kPaddedPlaneKernels,
                                 &kPoolKernels};

}  // namespace minfer::cpu::MINFER_ISA_NS
