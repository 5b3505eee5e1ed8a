// Helpers for the CUDA kernel tests: run one node through a registered CUDA kernel (device
// buffers, prepare, run, copy back) and through the op's reference kernel, to compare them.
// The CUDA tests return early with a warning where there is no GPU (CI).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "runtime/device_backend.h"
#include "test_util.h"

namespace minfer::test {

// The CUDA backend through the registry of device backends (runtime/device_backend.h): these
// tests also build, and return early, where the build has no CUDA backend.
inline bool cuda_available() { return device_available("cuda"); }
inline DeviceBackend& cuda_backend() { return device_backend("cuda"); }

// Device memory freed with the object (through the backend interface only, like the rest of
// this header, which also builds without a CUDA toolkit).
class DeviceMemory {
 public:
  DeviceMemory(DeviceContext& dc, size_t bytes)
      : dc_(dc), ptr_(cuda_backend().device_alloc(dc, bytes)) {}
  ~DeviceMemory() { cuda_backend().device_free(dc_, ptr_); }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  char* get() const { return static_cast<char*>(ptr_); }

 private:
  DeviceContext& dc_;
  void* ptr_;
};

// One node: its op, attributes and input values (undefined = absent input). Inputs whose
// index is in `constants` are shown to the kernel's prepare as constants (weights, params).
struct NodeCase {
  std::string op;
  std::string domain;
  Attributes attrs;
  std::vector<Tensor> inputs;
  std::vector<size_t> constants;
};

// Builds the node in `g` (inputs as constants of the graph, so the node has values).
inline Node* add_case_node(Graph& g, const NodeCase& c) {
  std::vector<Value*> vs;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    vs.push_back(c.inputs[i].defined() ? g.add_constant("in" + std::to_string(i), c.inputs[i])
                                       : nullptr);
  return g.add_node(c.op, "node", vs, 1, c.attrs, c.domain);
}

inline Tensor run_reference_case(const NodeCase& c) {
  Graph g;
  Node* n = add_case_node(g, c);
  return OpRegistry::global().get_op(c.domain, c.op).reference(*n, c.inputs).at(0);
}

// The PrepareContext the planner would make for the node on cuda:0.
inline PrepareContext prepare_context(const Node& n, const NodeCase& c, DeviceContext& dc) {
  std::vector<TensorInfo> infos;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    TensorInfo t;
    t.present = c.inputs[i].defined();
    if (t.present) {
      t.dtype = c.inputs[i].dtype();
      t.shape = c.inputs[i].shape();
      for (size_t k : c.constants)
        if (k == i) t.constant = &c.inputs[i];
    }
    infos.push_back(t);
  }
  InferContext inferred(n, infos);
  OpRegistry::global().get_op(c.domain, c.op).infer(inferred);
  PrepareContext prep(n, infos, inferred.outputs());
  prep.device = Device::cuda(0);
  prep.device_context = &dc;
  return prep;
}

// The CUDA kernel the planner picks for the case, or the one named `kernel` if it accepts the
// case; null when none does.
inline const KernelDef* cuda_kernel_for(const NodeCase& c, DeviceContext& dc,
                                        const std::string& kernel = "") {
  Graph g;
  Node* n = add_case_node(g, c);
  PrepareContext prep = prepare_context(*n, c, dc);
  if (kernel.empty()) return OpRegistry::global().find_kernel(prep, Device::Type::CUDA);
  for (const KernelDef* def : OpRegistry::global().kernels(c.domain, c.op))
    if (def->device == Device::Type::CUDA && def->name == kernel &&
        (!def->supports || def->supports(prep)))
      return def;
  return nullptr;
}

// Runs the case on the GPU with the kernel cuda_kernel_for() finds (REQUIREd to exist);
// returns output 0 on the host.
inline Tensor run_cuda_case(const NodeCase& c, DeviceContext& dc, const std::string& kernel = "") {
  const KernelDef* def = cuda_kernel_for(c, dc, kernel);
  INFO(c.op << ": CUDA kernel '" << kernel << "'");
  REQUIRE(def != nullptr);
  Graph g;
  Node* n = add_case_node(g, c);
  PrepareContext prep = prepare_context(*n, c, dc);
  std::unique_ptr<Kernel> k = def->create();
  k->prepare(prep);

  // Every buffer starts 64 bytes into its allocation: the alignment the planner's arena
  // guarantees, less than cudaMalloc's.
  constexpr size_t kOffset = 64;
  std::vector<std::unique_ptr<DeviceMemory>> buffers;
  auto place = [&](size_t bytes) {
    buffers.push_back(std::make_unique<DeviceMemory>(dc, bytes + kOffset));
    return buffers.back()->get() + kOffset;
  };
  std::vector<Tensor> views;
  views.reserve(c.inputs.size() + 1);
  RunContext run;
  for (const Tensor& t : c.inputs) {
    if (!t.defined()) {
      run.inputs.push_back(nullptr);
      continue;
    }
    char* p = place(t.nbytes());
    cuda_backend().copy_to_device(dc, p, t.raw(), t.nbytes());
    views.push_back(Tensor::view(p, t.dtype(), t.shape(), Device::cuda(0)));
    run.inputs.push_back(&views.back());
  }
  const TensorInfo& out = prep.outputs.at(0);
  char* y_device = place(size_t(out.shape.numel()) * dtype_size(out.dtype));
  views.push_back(Tensor::view(y_device, out.dtype, out.shape, Device::cuda(0)));
  run.outputs.push_back(&views.back());
  run.workspace = place(prep.workspace_bytes);
  run.device_context = &dc;
  k->run(run);
  Tensor y(out.dtype, out.shape);
  cuda_backend().copy_to_host(dc, y.raw(), views.back().raw(), y.nbytes());
  cuda_backend().synchronize(dc);
  return y;
}

// max |a - b| / max |b|: the normwise relative difference of two float tensors.
inline double relative_difference(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    diff = std::max(diff, std::abs(double(a.data<float>()[i]) - double(b.data<float>()[i])));
    scale = std::max(scale, std::abs(double(b.data<float>()[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

// Runs f() with the process's stderr redirected to a file; returns what was written there.
template <typename F>
std::string capture_stderr(const std::string& name, F&& f) {
  const auto path = temp_dir("stderr_" + name) / "stderr.txt";
  std::fflush(stderr);
  const int saved = ::dup(2);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  ::dup2(fd, 2);
  ::close(fd);
  auto restore = [&] {
    std::fflush(stderr);
    ::dup2(saved, 2);
    ::close(saved);
  };
  try {
    f();
  } catch (...) {
    restore();
    throw;
  }
  restore();
  std::FILE* file = std::fopen(path.c_str(), "rb");
  std::string text;
  for (int ch; file && (ch = std::fgetc(file)) != EOF;) text.push_back(char(ch));
  if (file) std::fclose(file);
  return text;
}

// Every plan of the implicit GEMM by its MINFER_IGEMM_PLAN name: each tile, unsplit and with K
// split over `splits` blocks.
inline std::vector<std::string> igemm_plan_names(int splits) {
  std::vector<std::string> names;
  for (const char* tile : {"256x64", "128x128", "128x64", "64x64", "32x64"}) {
    names.push_back(tile);
    names.push_back(std::string(tile) + "/" + std::to_string(splits));
  }
  return names;
}

}  // namespace minfer::test
