#include "backends/cuda/igemm_tune.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>

#include "minfer/error.h"

namespace minfer::cuda {

namespace {

std::mutex g_cache_mutex;
std::map<std::string, IgemmPlan>& cache() {
  static std::map<std::string, IgemmPlan> plans;
  return plans;
}

bool tuning_enabled() {
  const char* v = std::getenv("MINFER_CUDA_TUNE");
  return !(v && std::string(v) == "0");
}

// Scratch device memory and a stream and events of its own, freed whatever happens.
struct TuneResources {
  IgemmScratch buffers;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  ~TuneResources() {
    for (void* p : {buffers.x, buffers.y, buffers.z, buffers.workspace}) cudaFree(p);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
  }
  bool allocate(void*& p, size_t bytes) {
    return bytes == 0 || (cudaMalloc(&p, bytes) == cudaSuccess &&
                          cudaMemsetAsync(p, 0, bytes, stream) == cudaSuccess);
  }
};

// Milliseconds of one launch of `plan`: kReps launches captured as a CUDA graph (as runs
// replay them: a stream's own launch overhead would hide a short kernel's time, and count
// against a split plan's extra memset and epilogue), replayed once to warm up, then timed.
constexpr int kReps = 8;
float time_plan(TuneResources& r, const IgemmPlan& plan, const IgemmLaunch& launch) {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  MINFER_CUDA_CHECK(cudaStreamBeginCapture(r.stream, cudaStreamCaptureModeThreadLocal));
  try {
    for (int i = 0; i < kReps; ++i) launch(plan, r.buffers, r.stream);
  } catch (...) {
    if (cudaStreamEndCapture(r.stream, &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
    throw;
  }
  MINFER_CUDA_CHECK(cudaStreamEndCapture(r.stream, &graph));
  const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  MINFER_CUDA_CHECK(made);
  float ms = 0.f;
  try {
    MINFER_CUDA_CHECK(cudaGraphLaunch(exec, r.stream));
    MINFER_CUDA_CHECK(cudaEventRecord(r.start, r.stream));
    MINFER_CUDA_CHECK(cudaGraphLaunch(exec, r.stream));
    MINFER_CUDA_CHECK(cudaEventRecord(r.stop, r.stream));
    MINFER_CUDA_CHECK(cudaEventSynchronize(r.stop));
    MINFER_CUDA_CHECK(cudaEventElapsedTime(&ms, r.start, r.stop));
  } catch (...) {
    cudaGraphExecDestroy(exec);
    throw;
  }
  cudaGraphExecDestroy(exec);
  return ms / kReps;
}

IgemmPlan fastest(DeviceContext& dc, const std::vector<IgemmPlan>& candidates,
                  const IgemmScratchSizes& sizes, const IgemmAllow& allow,
                  const IgemmLaunch& launch) {
  const size_t total = sizes.x + sizes.y + sizes.z + sizes.workspace;
  if (total > device_free_memory(dc) / 4) return candidates[0];
  DeviceGuard guard(dc.device);
  TuneResources r;
  if (cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking) != cudaSuccess ||
      cudaEventCreate(&r.start) != cudaSuccess || cudaEventCreate(&r.stop) != cudaSuccess ||
      !r.allocate(r.buffers.x, sizes.x) || !r.allocate(r.buffers.y, sizes.y) ||
      !r.allocate(r.buffers.z, sizes.z) || !r.allocate(r.buffers.workspace, sizes.workspace)) {
    cudaGetLastError();  // a failed allocation is not this process's sticky error
    return candidates[0];
  }
  // Two rounds, the best of each candidate's two: a candidate timed while the clock ramps up
  // or another process's kernel runs gets a second chance.
  std::vector<float> best(candidates.size(), 1e30f);
  for (int round = 0; round < 2; ++round)
    for (size_t i = 0; i < candidates.size(); ++i) {
      allow(candidates[i]);
      best[i] = std::min(best[i], time_plan(r, candidates[i], launch));
    }
  return candidates[std::min_element(best.begin(), best.end()) - best.begin()];
}

}  // namespace

IgemmPlan tuned_igemm_plan(DeviceContext& dc, const std::string& key,
                           const std::vector<IgemmPlan>& candidates,
                           const IgemmScratchSizes& sizes, const IgemmAllow& allow,
                           const IgemmLaunch& launch) {
  check(!candidates.empty(), ErrorCode::Internal, "igemm tuning without candidates");
  if (candidates.size() == 1 || !tuning_enabled()) return candidates[0];
  const std::string full_key = std::to_string(dc.device) + "/" + dc.device_name + "/" + key;
  {
    std::lock_guard<std::mutex> lock(g_cache_mutex);
    auto it = cache().find(full_key);
    if (it != cache().end()) return it->second;
  }
  IgemmPlan plan = candidates[0];
  try {
    plan = fastest(dc, candidates, sizes, allow, launch);
  } catch (const Error&) {  // the heuristic's plan, which the run reports on if it fails too
    cudaGetLastError();
  }
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  return cache().emplace(full_key, plan).first->second;  // a concurrent tuner's if it won
}

std::optional<IgemmPlan> forced_igemm_plan() {
  const char* v = std::getenv("MINFER_IGEMM_PLAN");
  if (!v || !*v) return std::nullopt;
  const std::string s = v;
  const size_t slash = s.find('/');
  const std::string tile = s.substr(0, slash);
  int splits = 1;
  if (slash != std::string::npos) {
    char* end = nullptr;
    const long n = std::strtol(s.c_str() + slash + 1, &end, 10);
    check(*end == '\0' && n >= 1 && n <= 64, ErrorCode::InvalidArgument,
          "MINFER_IGEMM_PLAN='" + s + "': the split count after '/' must be 1 to 64");
    splits = int(n);
  }
  for (IgemmTile t : kIgemmTiles)
    if (tile == igemm_tile_name(t)) return IgemmPlan{t, splits};
  throw Error(ErrorCode::InvalidArgument,
              "MINFER_IGEMM_PLAN='" + s +
                  "': unknown tile (256x64, 128x128, 128x64, 64x64 or 32x64, optionally /SPLITS)");
}

std::string igemm_plan_name(const IgemmPlan& plan) {
  std::string name = igemm_tile_name(plan.tile);
  if (plan.splits > 1) {
    name += '/';
    name += std::to_string(plan.splits);
  }
  return name;
}

std::string igemm_key(const IgemmConv& cv) {
  const Window2d& w = cv.win;
  std::string key;
  for (int v : {cv.c, cv.m, cv.k, cv.ld, cv.rows, w.h, w.w, w.oh, w.ow, w.kh, w.kw, w.sh, w.sw,
                w.dh, w.dw, w.pad_t, w.pad_l})
    key += std::to_string(v) + ",";
  return key;
}

}  // namespace minfer::cuda
