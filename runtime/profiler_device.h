// The CUDA side of the profiler: events on a session's stream, and the GPU's peak. Without
// CUDA (backends/cuda_stub.cc builds) these throw Error(Device); a CPU plan never calls them.
#pragma once

#include "minfer/kernel.h"
#include "minfer/profile.h"

namespace minfer::profiler {

void* event_create();
void event_destroy(void* event) noexcept;
void event_record(void* event, DeviceContext& ctx);  // on the context's stream
float event_elapsed_ms(void* start, void* end);      // waits for `end`
// Peak of GPU `device`: cuBLAS SGEMM for arithmetic, a device-to-device copy for bandwidth.
MachinePeak measure_gpu_peak(int device);

}  // namespace minfer::profiler
