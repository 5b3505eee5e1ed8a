#include "minfer/session.h"

#include <map>
#include <mutex>
#include <thread>

#include "backends/cuda_api.h"
#include "graph/pass.h"
#include "minfer/onnx.h"
#include "runtime/plan.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace minfer {

struct Session::Impl {
  SessionOptions options;
  Graph graph;
  int threads = 1;
  std::vector<std::string> input_names, output_names;
  std::shared_ptr<DeviceContext> device_context;
  mutable std::mutex plans_mutex;
  mutable std::map<std::vector<std::vector<int64_t>>, std::shared_ptr<Plan>> plans;  // by shapes

  std::shared_ptr<Plan> plan_for(const std::vector<Shape>& shapes) const {
    std::vector<std::vector<int64_t>> key;
    for (const Shape& s : shapes) key.push_back(s.dims());
    std::lock_guard<std::mutex> lock(plans_mutex);
    auto it = plans.find(key);
    if (it != plans.end()) return it->second;
    std::shared_ptr<Plan> plan = build_plan(graph, shapes, options, threads, device_context.get());
    plans[key] = plan;
    return plan;
  }
};

namespace {
int resolve_threads(int requested) {
  check(requested >= 0, ErrorCode::InvalidArgument,
        "SessionOptions::threads must be >= 0 (0 = all cores), got " + std::to_string(requested));
  if (requested > 0) return requested;
  unsigned n = std::thread::hardware_concurrency();
  return n ? static_cast<int>(n) : 1;
}
}  // namespace

Session::Session(Graph graph, SessionOptions options) : impl_(std::make_unique<Impl>()) {
  check(options.optimization_level >= 0 && options.optimization_level <= 3,
        ErrorCode::InvalidArgument,
        "optimization level must be 0..3, got " + std::to_string(options.optimization_level));
  impl_->options = options;
  impl_->threads = resolve_threads(options.threads);
  if (!options.device.is_cpu()) impl_->device_context = cuda::create_context(options.device.index);
  check(!graph.outputs().empty(), ErrorCode::InvalidModel,
        "graph '" + graph.name + "' has no outputs");
  graph.infer_shapes();
  optimize(graph, options);
  verify(graph);
  impl_->graph = std::move(graph);
  for (const Value* v : impl_->graph.inputs()) impl_->input_names.push_back(v->name);
  for (const Value* v : impl_->graph.outputs()) impl_->output_names.push_back(v->name);
}

Session Session::from_file(const std::string& onnx_path, SessionOptions options) {
  return Session(load_onnx(onnx_path), std::move(options));
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

NamedTensors Session::run(const NamedTensors& inputs) const {
  const Graph& g = impl_->graph;
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (const auto& n : impl_->input_names) known |= (n == name);
    if (!known) {
      std::string list;
      for (const auto& n : impl_->input_names) list += (list.empty() ? "" : ", ") + n;
      throw Error(ErrorCode::InvalidArgument,
                  "run: the model has no input named '" + name + "' (inputs: " + list + ")");
    }
  }
  std::vector<const Tensor*> ordered;
  std::vector<Shape> shapes;
  for (const Value* v : g.inputs()) {
    auto it = inputs.find(v->name);
    check(it != inputs.end(), ErrorCode::InvalidArgument,
          "run: input '" + v->name + "' is missing (expected " + dtype_name(v->dtype) +
              v->shape.to_string() + ")");
    const Tensor& t = it->second;
    check(t.defined() && t.device().is_cpu(), ErrorCode::InvalidArgument,
          "run: input '" + v->name + "' must be a defined CPU tensor");
    check(t.dtype() == v->dtype, ErrorCode::InvalidArgument,
          "run: input '" + v->name + "' is " + dtype_name(t.dtype()) + ", the model expects " +
              dtype_name(v->dtype));
    bool ok = t.rank() == v->shape.rank();
    for (size_t d = 0; ok && d < t.rank(); ++d) ok = v->shape[d] < 0 || v->shape[d] == t.dim(d);
    check(ok, ErrorCode::InvalidArgument,
          "run: input '" + v->name + "' has shape " + t.shape().to_string() +
              ", the model expects " + v->shape.to_string());
    ordered.push_back(&t);
    shapes.push_back(t.shape());
  }
  std::shared_ptr<Plan> plan = impl_->plan_for(shapes);
#ifdef _OPENMP
  omp_set_num_threads(impl_->threads);  // this thread's parallel regions (and Eigen's)
#endif
  std::vector<Tensor> outs = execute_plan(*plan, ordered, impl_->threads);
  NamedTensors result;
  for (size_t i = 0; i < outs.size(); ++i) result[impl_->output_names[i]] = std::move(outs[i]);
  return result;
}

Tensor Session::run_one(const Tensor& input) const {
  check(impl_->input_names.size() == 1, ErrorCode::InvalidArgument,
        "run_one: the model has " + std::to_string(impl_->input_names.size()) +
            " inputs; use run() with named inputs");
  NamedTensors out = run({{impl_->input_names[0], input}});
  return out.at(impl_->output_names[0]);
}

const Graph& Session::graph() const { return impl_->graph; }
const std::vector<std::string>& Session::input_names() const { return impl_->input_names; }
const std::vector<std::string>& Session::output_names() const { return impl_->output_names; }
const SessionOptions& Session::options() const { return impl_->options; }

PlanStats Session::plan_stats(const std::map<std::string, Shape>& input_shapes) const {
  std::vector<Shape> shapes;
  for (const Value* v : impl_->graph.inputs()) {
    auto it = input_shapes.find(v->name);
    check(it != input_shapes.end(), ErrorCode::InvalidArgument,
          "plan_stats: no shape given for input '" + v->name + "'");
    shapes.push_back(it->second);
  }
  return impl_->plan_for(shapes)->stats;
}

}  // namespace minfer
