// The CUDA side of backends/cuda_api.h, and the helpers of cuda_context.h / cuda_check.h.
#include "backends/cuda/cuda_context.h"

#include <string>

#include "backends/cuda_api.h"
#include "minfer/error.h"
#include "runtime/device_allocation_tally.h"

namespace minfer {

namespace cuda {

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  // Reset the thread's last-error state, so that a later cudaGetLastError() check reports its
  // own failure rather than this one (sticky errors stay regardless: the context is lost).
  cudaGetLastError();
  std::string message = std::string(file) + ":" + std::to_string(line) + ": " + call + ": " +
                        cudaGetErrorString(status) + " (" + cudaGetErrorName(status) + ")";
  throw Error(status == cudaErrorMemoryAllocation ? ErrorCode::OutOfMemory : ErrorCode::Device,
              message);
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  std::string message = std::string(file) + ":" + std::to_string(line) + ": " + call + ": " +
                        cublasGetStatusString(status) + " (" + cublasGetStatusName(status) + ")";
  throw Error(status == CUBLAS_STATUS_ALLOC_FAILED ? ErrorCode::OutOfMemory : ErrorCode::Device,
              message);
}

namespace {

struct DeviceQuery {
  int count = 0;
  std::string error;  // why there is no device, when count == 0
};

// Asked once: cudaGetDeviceCount fails (rather than crashing) without a driver or a GPU.
const DeviceQuery& query_devices() {
  static const DeviceQuery query = [] {
    DeviceQuery q;
    cudaError_t status = cudaGetDeviceCount(&q.count);
    if (status != cudaSuccess) {
      cudaGetLastError();
      q.count = 0;
      q.error = std::string(cudaGetErrorString(status)) + " (" + cudaGetErrorName(status) + ")";
    } else if (q.count == 0) {
      q.error = "the driver reports no CUDA devices";
    }
    return q;
  }();
  return query;
}

}  // namespace

bool available() { return query_devices().count > 0; }

int device_count() { return query_devices().count; }

std::shared_ptr<DeviceContext> create_context(int device) {
  const DeviceQuery& q = query_devices();
  if (q.count == 0) throw Error(ErrorCode::Device, "no usable CUDA device: " + q.error);
  if (device < 0 || device >= q.count)
    throw Error(ErrorCode::InvalidArgument, "cuda:" + std::to_string(device) +
                                                " does not exist: this machine has " +
                                                std::to_string(q.count) + " CUDA device(s)");
  auto ctx = std::make_shared<DeviceContext>();
  ctx->device = device;
  DeviceGuard guard(device);
  cudaDeviceProp props{};
  MINFER_CUDA_CHECK(cudaGetDeviceProperties(&props, device));
  ctx->device_name = props.name;
  ctx->sm_count = props.multiProcessorCount;
  MINFER_CUDA_CHECK(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
  return ctx;
}

void* device_alloc(DeviceContext& ctx, size_t bytes) {
  if (bytes == 0) return nullptr;
  DeviceGuard guard(ctx.device);
  void* ptr = nullptr;
  MINFER_CUDA_CHECK(cudaMalloc(&ptr, bytes));
  count_device_allocation(bytes);
  return ptr;
}

void device_free(DeviceContext& ctx, void* ptr) {
  if (!ptr) return;
  DeviceGuard guard(ctx.device);
  // A failure here is an earlier asynchronous error; the next checked call reports it.
  (void)cudaFree(ptr);
}

size_t device_free_memory(DeviceContext& ctx) {
  DeviceGuard guard(ctx.device);
  size_t free_bytes = 0, total = 0;
  MINFER_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
  return free_bytes;
}

void copy_to_device(DeviceContext& ctx, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  DeviceGuard guard(ctx.device);
  MINFER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, ctx.stream));
}

void copy_to_host(DeviceContext& ctx, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  DeviceGuard guard(ctx.device);
  MINFER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, ctx.stream));
}

void copy_on_device(DeviceContext& ctx, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  DeviceGuard guard(ctx.device);
  MINFER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, ctx.stream));
}

void copy_any(DeviceContext& ctx, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return;
  DeviceGuard guard(ctx.device);
  MINFER_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, ctx.stream));
}

namespace {
// `waiter` waits on the GPU for the work queued on `done_by` so far, through `event`.
void order_streams(int device, cudaEvent_t& event, cudaStream_t done_by, cudaStream_t waiter) {
  DeviceGuard guard(device);
  if (!event) MINFER_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  MINFER_CUDA_CHECK(cudaEventRecord(event, done_by));
  MINFER_CUDA_CHECK(cudaStreamWaitEvent(waiter, event, 0));
}
}  // namespace

void wait_for_stream(DeviceContext& ctx, void* stream) {
  order_streams(ctx.device, ctx.caller_done, static_cast<cudaStream_t>(stream), ctx.stream);
}

void* stream_of(DeviceContext& ctx) { return ctx.stream; }

void signal_stream(DeviceContext& ctx, void* stream) {
  order_streams(ctx.device, ctx.run_done, ctx.stream, static_cast<cudaStream_t>(stream));
}

void* pinned_alloc(DeviceContext& ctx, size_t bytes) {
  DeviceGuard guard(ctx.device);
  void* ptr = nullptr;
  MINFER_CUDA_CHECK(cudaHostAlloc(&ptr, bytes ? bytes : 1, cudaHostAllocDefault));
  return ptr;
}

void pinned_free(DeviceContext& ctx, void* ptr) {
  if (!ptr) return;
  int previous = -1;
  const bool switched = cudaGetDevice(&previous) == cudaSuccess && previous != ctx.device &&
                        cudaSetDevice(ctx.device) == cudaSuccess;
  (void)cudaFreeHost(ptr);
  if (switched) cudaSetDevice(previous);
}

std::unique_lock<std::mutex> lock_stream(DeviceContext& ctx) {
  return std::unique_lock<std::mutex>(ctx.stream_mutex);
}

void begin_capture(DeviceContext& ctx) {
  DeviceGuard guard(ctx.device);
  // Thread-local mode: other threads' CUDA calls (allocations of another session) stay legal.
  MINFER_CUDA_CHECK(cudaStreamBeginCapture(ctx.stream, cudaStreamCaptureModeThreadLocal));
}

void* end_capture(DeviceContext& ctx) {
  DeviceGuard guard(ctx.device);
  cudaGraph_t graph = nullptr;
  MINFER_CUDA_CHECK(cudaStreamEndCapture(ctx.stream, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t status = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  if (status != cudaSuccess)
    throw_cuda_error(status, "cudaGraphInstantiate(&exec, graph, 0)", __FILE__, __LINE__);
  return exec;
}

void abort_capture(DeviceContext& ctx) noexcept {
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(ctx.stream, &capturing) != cudaSuccess ||
      capturing == cudaStreamCaptureStatusNone)
    return;
  cudaGraph_t graph = nullptr;
  if (cudaStreamEndCapture(ctx.stream, &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
  cudaGetLastError();  // an invalidated capture is not this context's lasting error
}

void launch_graph(DeviceContext& ctx, void* graph) {
  DeviceGuard guard(ctx.device);
  MINFER_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), ctx.stream));
}

void destroy_graph(void* graph) noexcept {
  if (graph) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph));
}

void synchronize(DeviceContext& ctx) {
  DeviceGuard guard(ctx.device);
  MINFER_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
}

DeviceGuard::DeviceGuard(int device) {
  MINFER_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device) MINFER_CUDA_CHECK(cudaSetDevice(device));
}

DeviceGuard::~DeviceGuard() {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current != previous_) cudaSetDevice(previous_);
}

DeviceBuffer::DeviceBuffer(DeviceContext& ctx, size_t bytes)
    : ctx_(&ctx), ptr_(device_alloc(ctx, bytes)), bytes_(bytes) {}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ctx_(o.ctx_), ptr_(o.ptr_), bytes_(o.bytes_) {
  o.ptr_ = nullptr;
  o.bytes_ = 0;
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    ctx_ = o.ctx_, ptr_ = o.ptr_, bytes_ = o.bytes_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (ptr_) device_free(*ctx_, ptr_);
  ptr_ = nullptr;
  bytes_ = 0;
}

}  // namespace cuda

DeviceContext::~DeviceContext() {
  // Destructors must not throw: release what exists and ignore errors (a lost context).
  int previous = -1;
  bool switched = cudaGetDevice(&previous) == cudaSuccess && previous != device &&
                  cudaSetDevice(device) == cudaSuccess;
  if (cublas_) cublasDestroy(cublas_);
  if (cublas_workspace_) cudaFree(cublas_workspace_);
  if (stream) {
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
  }
  if (caller_done) cudaEventDestroy(caller_done);
  if (run_done) cudaEventDestroy(run_done);
  if (switched) cudaSetDevice(previous);
}

cublasHandle_t DeviceContext::cublas() {
  std::call_once(cublas_once_, [this] {
    cuda::DeviceGuard guard(device);
    // cuBLAS's recommended workspace on Hopper; smaller ones may rule out its fastest kernels.
    constexpr size_t kWorkspaceBytes = size_t{32} << 20;
    void* workspace = cuda::device_alloc(*this, kWorkspaceBytes);
    cublasHandle_t handle = nullptr;
    cublasStatus_t status = cublasCreate(&handle);
    const char* call = "cublasCreate(&handle)";
    if (status == CUBLAS_STATUS_SUCCESS) {
      status = cublasSetStream(handle, stream);
      call = "cublasSetStream(handle, stream)";
    }
    if (status == CUBLAS_STATUS_SUCCESS) {
      status = cublasSetWorkspace(handle, workspace, kWorkspaceBytes);
      call = "cublasSetWorkspace(handle, workspace, bytes)";
    }
    if (status != CUBLAS_STATUS_SUCCESS) {
      if (handle) cublasDestroy(handle);
      cuda::device_free(*this, workspace);
      cuda::throw_cublas_error(status, call, __FILE__, __LINE__);
    }
    cublas_ = handle;
    cublas_workspace_ = workspace;
  });
  return cublas_;
}

}  // namespace minfer
