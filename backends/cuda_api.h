// The CUDA backend's own C++ API, implemented in backends/cuda/ (CUDA builds only). The runtime
// does not use it: it reaches the backend through runtime/device_backend.h, whose CUDA
// implementation (backends/cuda/cuda_device_backend.cpp) forwards to these functions.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>

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
void copy_on_device(DeviceContext& ctx, void* dst, const void* src, size_t bytes);
void synchronize(DeviceContext& ctx);
// A copy between any two of host and device memory (cudaMemcpyDefault), on the context's stream.
void copy_any(DeviceContext& ctx, void* dst, const void* src, size_t bytes);
// A caller's stream (a cudaStream_t) and the context's stream, ordered both ways without the
// host waiting: wait_for_stream makes the context's stream wait for the work already queued
// on `stream`; signal_stream makes `stream` wait for the context's work queued so far. Call
// both with the context's stream locked (lock_stream).
void wait_for_stream(DeviceContext& ctx, void* stream);
void* stream_of(DeviceContext& ctx);  // the context's cudaStream_t
void signal_stream(DeviceContext& ctx, void* stream);
// Free memory of the context's device now (cudaMemGetInfo): the default budget of a plan.
size_t device_free_memory(DeviceContext& ctx);

// Page-locked host memory: the GPU copies to and from it asynchronously, and inside CUDA
// graphs. Throws Error(OutOfMemory); pinned_free never throws.
void* pinned_alloc(DeviceContext& ctx, size_t bytes);
void pinned_free(DeviceContext& ctx, void* ptr);

// Held while a run enqueues work on the context's stream, so that concurrent runs never
// interleave their work into one another's CUDA graph capture.
std::unique_lock<std::mutex> lock_stream(DeviceContext& ctx);

// CUDA graphs: the work enqueued on the context's stream between begin_capture and
// end_capture (which returns the instantiated graph, or throws Error(Device) when the work
// could not be captured) is replayed by launch_graph. abort_capture ends a capture that an
// exception interrupted, discarding it; both it and destroy_graph never throw.
void begin_capture(DeviceContext& ctx);
void* end_capture(DeviceContext& ctx);
void abort_capture(DeviceContext& ctx) noexcept;
void launch_graph(DeviceContext& ctx, void* graph);
void destroy_graph(void* graph) noexcept;

}  // namespace minfer::cuda
