// The runtime's view of the CUDA backend. Implemented in backends/cuda/ when MINFER_WITH_CUDA,
// else by backends/cuda_stub.cc, which reports that CUDA is not built in.
#pragma once

#include <cstddef>
#include <memory>

#include "minfer/kernel.h"

namespace minfer::cuda {

bool available();    // true when built with CUDA and a usable GPU is present
int device_count();  // 0 without CUDA
// Selects the device and creates the session's stream and cuBLAS handle. Throws
// Error(Device) with the CUDA error text when there is no usable GPU.
std::shared_ptr<DeviceContext> create_context(int device);

// Device memory and copies on the context's stream (what the session executor needs).
// Copies are enqueued in order with the kernels; a host buffer they read or write must stay
// valid until synchronize() returns. device_alloc returns null for 0 bytes; device_free never
// throws (null is a no-op). Failures throw Error(Device), or Error(OutOfMemory) for an
// allocation, with the CUDA error text.
void* device_alloc(DeviceContext& ctx, size_t bytes);
void device_free(DeviceContext& ctx, void* ptr);
void copy_to_device(DeviceContext& ctx, void* dst, const void* src, size_t bytes);
void copy_to_host(DeviceContext& ctx, void* dst, const void* src, size_t bytes);
void synchronize(DeviceContext& ctx);

}  // namespace minfer::cuda
