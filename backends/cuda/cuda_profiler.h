// The CUDA side of the profiler: events on a context's stream, and the GPU's peak. The CUDA
// DeviceBackend (cuda_device_backend.cpp) hands them to the runtime's profiler.
#pragma once

#include "minfer/kernel.h"
#include "minfer/profile.h"

namespace minfer::cuda {

void* event_create();
void event_destroy(void* event) noexcept;
void event_record(void* event, DeviceContext& ctx);  // on the context's stream
float event_elapsed_ms(void* start, void* end);      // waits for `end`
// Peak of GPU `device`: cuBLAS SGEMM for arithmetic, a device-to-device copy for bandwidth.
MachinePeak measure_gpu_peak(int device);

}  // namespace minfer::cuda
