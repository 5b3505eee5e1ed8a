// DeviceBackend: what the runtime needs of a device besides its kernels (contexts, memory,
// copies, stream ordering, graph capture, profiler events), and the registry of backends.
// The runtime knows devices only through this: the CUDA backend (backends/cuda/) implements it
// and is registered when the build has it, and another backend would plug in the same way.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

#include "minfer/kernel.h"
#include "minfer/profile.h"

namespace minfer {

// One per kind of device. A backend object is registered once and lives for the process; all
// its functions may be called from several threads. Nothing here may touch the device before
// it is asked to (device_count, create_context, ...): a CPU run of a build with a backend must
// not load that backend's driver.
class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  // Usable devices (0 when none, or no driver); asks the driver on first call only.
  virtual int device_count() = 0;
  // Selects the device and creates a session's stream and handles. Throws Error(Device) with
  // the driver's text when there is no usable device, Error(InvalidArgument) for an index
  // past the last device.
  virtual std::shared_ptr<DeviceContext> create_context(int device) = 0;

  // Device memory and copies on the context's stream, enqueued in order with the kernels; a
  // host buffer they read or write must stay valid until synchronize() returns. device_alloc
  // returns null for 0 bytes and counts what it hands out (DeviceAllocationTally); device_free
  // never throws (null is a no-op). Failures throw Error(Device), or Error(OutOfMemory) for an
  // allocation, with the driver's text.
  virtual void* device_alloc(DeviceContext& ctx, size_t bytes) = 0;
  virtual void device_free(DeviceContext& ctx, void* ptr) = 0;
  virtual void copy_to_device(DeviceContext& ctx, void* dst, const void* src, size_t bytes) = 0;
  virtual void copy_to_host(DeviceContext& ctx, void* dst, const void* src, size_t bytes) = 0;
  virtual void copy_on_device(DeviceContext& ctx, void* dst, const void* src, size_t bytes) = 0;
  // Between any two of host and device memory, on the context's stream.
  virtual void copy_any(DeviceContext& ctx, void* dst, const void* src, size_t bytes) = 0;
  virtual void synchronize(DeviceContext& ctx) = 0;
  // Free memory of the context's device now: the default memory budget of a plan.
  virtual size_t device_free_memory(DeviceContext& ctx) = 0;

  // A caller's stream and the context's stream, ordered both ways without the host waiting:
  // wait_for_stream makes the context's stream wait for the work already queued on `stream`;
  // signal_stream makes `stream` wait for the context's work queued so far. Call both with
  // the context's stream locked (lock_stream), which is held while a run enqueues its work so
  // that concurrent runs never interleave their work into one another's graph capture.
  virtual void* stream_of(DeviceContext& ctx) = 0;
  virtual void wait_for_stream(DeviceContext& ctx, void* stream) = 0;
  virtual void signal_stream(DeviceContext& ctx, void* stream) = 0;
  virtual std::unique_lock<std::mutex> lock_stream(DeviceContext& ctx) = 0;

  // Page-locked host memory, which the device copies to and from asynchronously and inside
  // graphs. Throws Error(OutOfMemory); pinned_free never throws.
  virtual void* pinned_alloc(DeviceContext& ctx, size_t bytes) = 0;
  virtual void pinned_free(DeviceContext& ctx, void* ptr) = 0;

  // Graphs: the work enqueued on the context's stream between begin_capture and end_capture
  // (which returns the instantiated graph, or throws Error(Device) when the work could not be
  // captured) is replayed by launch_graph. abort_capture ends a capture that an exception
  // interrupted, discarding it; it and destroy_graph (null: a no-op) never throw.
  virtual void begin_capture(DeviceContext& ctx) = 0;
  virtual void* end_capture(DeviceContext& ctx) = 0;
  virtual void abort_capture(DeviceContext& ctx) noexcept = 0;
  virtual void launch_graph(DeviceContext& ctx, void* graph) = 0;
  virtual void destroy_graph(void* graph) noexcept = 0;

  // For the profiler: timing events recorded on the context's stream (event_elapsed_ms waits
  // for `end`), and the device's peak arithmetic and memory bandwidth.
  virtual void* event_create() = 0;
  virtual void event_destroy(void* event) noexcept = 0;
  virtual void event_record(void* event, DeviceContext& ctx) = 0;
  virtual float event_elapsed_ms(void* start, void* end) = 0;
  virtual MachinePeak measure_peak(int device) = 0;
};

// Adds the backend of the devices named `name` ("cuda"): lookups find it from now on, for the
// rest of the process. Throws Error(InvalidArgument) when `name` already has one.
void register_device_backend(const std::string& name, std::unique_ptr<DeviceBackend> backend);
// The backend named `name`, or null when none is registered.
DeviceBackend* find_device_backend(const std::string& name);
// The backend named `name`, or Error(Device) saying that this build has none.
DeviceBackend& device_backend(const std::string& name);
// The backend of a non-CPU device ("cuda" for Device::cuda()): the CPU has none.
DeviceBackend& device_backend(const Device& device);
// Whether the backend is built in and sees a device (for example the CUDA backend and a GPU).
bool device_available(const std::string& name);

// The backends built into this library, which the registry adds when it is first used: the
// CUDA backend in a CUDA build (backends/cuda/cuda_device_backend.cpp), else null
// (backends/cuda_stub.cc).
std::unique_ptr<DeviceBackend> make_cuda_device_backend();

}  // namespace minfer
