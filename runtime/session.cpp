#include "minfer/session.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "graph/pass.h"
#include "minfer/calibrate.h"
#include "minfer/onnx.h"
#include "runtime/device_backend.h"
#include "runtime/memory_budget.h"
#include "runtime/plan.h"
#include "runtime/plan_cache.h"
#include "runtime/session_observe.h"

#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace minfer {

struct Session::Impl {
  SessionOptions options;
  Graph graph;
  int threads = 1;
  std::vector<std::string> input_names, output_names;
  // Declared before the plans, which use them until they are destroyed.
  std::shared_ptr<DeviceContext> device_context;
  mutable SessionConstants constants;  // packed weights, uploaded constants: shared by plans
  mutable BufferPool host_buffers;  // host arenas, lent to runs
  mutable OutputBuffers output_buffers;  // run()'s outputs, written again once dropped
  PlanEnvironment env;
  mutable std::mutex plans_mutex;
  mutable PlanCache plans{16, 0};
  // Shapes for which some output shape depends on the values of shape-like inputs (say, a
  // Reshape whose target shape is a graph input); their plans are keyed by those values too.
  mutable std::set<PlanCache::Dims> needs_values;

  std::shared_ptr<Plan> build(const std::vector<Shape>& shapes,
                              const std::vector<const Tensor*>& values) const {
    try {
      return build_plan(graph, shapes, values, options, threads, device_context.get(), env);
    } catch (const std::bad_alloc&) {
      throw Error(ErrorCode::OutOfMemory,
                  "out of memory while planning graph '" + graph.name + "'");
    }
  }

  // `inputs` (in graph-input order) may be empty when only the shapes are known.
  std::shared_ptr<Plan> plan_for(const std::vector<Shape>& shapes,
                                 const std::vector<const Tensor*>& inputs) const {
    PlanCache::Key key;
    for (const Shape& s : shapes) key.first.push_back(s.dims());
    std::lock_guard<std::mutex> lock(plans_mutex);
    if (auto plan = plans.find(key)) return plan;
    if (!needs_values.count(key.first)) {
      try {
        std::shared_ptr<Plan> plan = build(shapes, {});
        plans.insert(key, plan);
        return plan;
      } catch (const NeedsInputValues&) {
        needs_values.insert(key.first);
      }
    }
    check(!inputs.empty(), ErrorCode::Unsupported,
          "the output shapes of graph '" + graph.name +
              "' depend on the values of its integer inputs, not only on the input shapes; "
              "run it to plan it");
    std::vector<const Tensor*> values(inputs.size(), nullptr);
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!is_shape_like_input(inputs[i]->dtype(), inputs[i]->shape())) continue;
      check(inputs[i]->device().is_cpu(), ErrorCode::InvalidArgument,
            "run: input '" + input_names[i] +
                "' shapes the plan through its values, so it must be a CPU tensor");
      values[i] = inputs[i];
      std::vector<int64_t> v;
      for (int64_t e = 0; e < inputs[i]->numel(); ++e)
        v.push_back(inputs[i]->dtype() == DType::i64 ? inputs[i]->data<int64_t>()[e]
                                                     : inputs[i]->data<int32_t>()[e]);
      key.second.push_back(std::move(v));
    }
    if (auto plan = plans.find(key)) return plan;
    std::shared_ptr<Plan> plan = build(shapes, values);
    plans.insert(key, plan);
    return plan;
  }

  std::vector<const Tensor*> ordered_inputs(const NamedTensors& inputs) const;
  std::vector<const Tensor*> ordered_outputs(const NamedTensors& outputs, const Plan& plan) const;
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

namespace {
// The Impl of a Session that still has one. Moving a Session leaves the source without one:
// every method on it then throws this error rather than dereferencing null. (A template, so
// that it can take Session's private Impl without naming it.)
template <typename ImplPtr>
auto& live(const ImplPtr& impl, const char* method) {
  check(impl != nullptr, ErrorCode::InvalidArgument,
        std::string("Session::") + method +
            ": this Session has been moved from and holds no model; use the Session it was "
            "moved to");
  return *impl;
}
}  // namespace

Session::Session(Graph graph, SessionOptions options) : impl_(std::make_unique<Impl>()) {
  check(options.optimization_level >= 0 && options.optimization_level <= 3,
        ErrorCode::InvalidArgument,
        "optimization level must be 0..3, got " + std::to_string(options.optimization_level));
  impl_->options = options;
  impl_->threads = resolve_threads(options.threads);
  if (!options.device.is_cpu())
    impl_->device_context = device_backend(options.device).create_context(options.device.index);
  check(!graph.outputs().empty(), ErrorCode::InvalidModel,
        "graph '" + graph.name + "' has no outputs");
  if (options.precision == Precision::int8) {
    check(is_quantized(graph), ErrorCode::InvalidArgument,
          "precision int8: graph '" + graph.name +
              "' is not quantized; calibrate it and run quantize_graph first (minfer/calibrate.h)");
    check(options.optimization_level >= 2, ErrorCode::InvalidArgument,
          "precision int8 needs optimization level 2 or more (the level that folds "
          "QuantizeLinear/DequantizeLinear into int8 kernels), got " +
              std::to_string(options.optimization_level));
  }
  if (options.precision == Precision::fp16) {
    check(!options.device.is_cpu(), ErrorCode::Unsupported,
          "precision fp16 runs on CUDA only; on the CPU use fp32 or int8");
    check(!is_quantized(graph), ErrorCode::InvalidArgument,
          "precision fp16: graph '" + graph.name + "' is quantized; fp16 takes an fp32 model");
  }
  check(options.plan_cache_plans >= 1, ErrorCode::InvalidArgument,
        "SessionOptions::plan_cache_plans must be at least 1");
  graph.infer_shapes();
  optimize(graph, options);
  verify(graph);
  impl_->graph = std::move(graph);
  impl_->plans = PlanCache(options.plan_cache_plans, options.plan_cache_bytes);
  PlanEnvironment& env = impl_->env;
  env.constants = &impl_->constants;
  env.host_buffers = &impl_->host_buffers;
  for (const Value* v : impl_->graph.values())
    if (v->is_constant()) env.graph_constant_bytes += v->constant->nbytes();
  env.host_limit = options.memory_limit ? options.memory_limit : physical_memory_bytes();
  env.device_limit = options.memory_limit;
  env.limit_source = options.memory_limit ? "the memory limit (SessionOptions::memory_limit)"
                                          : "the machine's physical memory";
  for (const Value* v : impl_->graph.inputs()) impl_->input_names.push_back(v->name);
  for (const Value* v : impl_->graph.outputs()) impl_->output_names.push_back(v->name);
}

Session Session::from_file(const std::string& onnx_path, SessionOptions options) {
  return Session(load_onnx(onnx_path), std::move(options));
}

Session::~Session() = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;

// Checks `inputs` against the graph inputs; returns them in graph-input order.
std::vector<const Tensor*> Session::Impl::ordered_inputs(const NamedTensors& inputs) const {
  const Graph& g = graph;
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (const auto& n : input_names) known |= (n == name);
    if (!known) {
      std::string list;
      for (const auto& n : input_names) list += (list.empty() ? "" : ", ") + n;
      throw Error(ErrorCode::InvalidArgument,
                  "run: the model has no input named '" + name + "' (inputs: " + list + ")");
    }
  }
  std::vector<const Tensor*> ordered;
  for (const Value* v : g.inputs()) {
    auto it = inputs.find(v->name);
    check(it != inputs.end(), ErrorCode::InvalidArgument,
          "run: input '" + v->name + "' is missing (expected " + dtype_name(v->dtype) +
              v->shape.to_string() + ")");
    const Tensor& t = it->second;
    check(t.defined(), ErrorCode::InvalidArgument,
          "run: input '" + v->name + "' is an undefined tensor");
    check(t.device().is_cpu() || t.device() == options.device, ErrorCode::InvalidArgument,
          "run: input '" + v->name + "' is on " + t.device().to_string() +
              "; this session takes CPU tensors" +
              (options.device.is_cpu() ? std::string()
                                       : " or tensors on " + options.device.to_string()));
    check(t.dtype() == v->dtype, ErrorCode::InvalidArgument,
          "run: input '" + v->name + "' is " + dtype_name(t.dtype()) + ", the model expects " +
              dtype_name(v->dtype));
    bool ok = t.rank() == v->shape.rank();
    for (size_t d = 0; ok && d < t.rank(); ++d) ok = v->shape[d] < 0 || v->shape[d] == t.dim(d);
    check(ok, ErrorCode::InvalidArgument,
          "run: input '" + v->name + "' has shape " + t.shape().to_string() +
              ", the model expects " + v->shape.to_string());
    ordered.push_back(&t);
  }
  return ordered;
}

namespace {
// A host allocation that fails becomes Error(OutOfMemory). By then what the call allocated
// is freed (everything is owned by RAII) and the session is as before the call.
template <typename F>
auto host_oom_as_error(const char* method, F f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::OutOfMemory, std::string("Session::") + method +
                                            ": out of host memory");
  }
}
}  // namespace

NamedTensors Session::run(const NamedTensors& inputs) const {
  return host_oom_as_error("run", [&] {
    const Impl& impl = live(impl_, "run");
    std::vector<const Tensor*> ordered = impl.ordered_inputs(inputs);
    std::vector<Shape> shapes;
    for (const Tensor* t : ordered) shapes.push_back(t->shape());
    std::shared_ptr<Plan> plan = impl.plan_for(shapes, ordered);
#ifdef _OPENMP
    omp_set_num_threads(impl.threads);  // this thread's parallel regions (and Eigen's)
#endif
    std::vector<Tensor> outs =
        execute_plan(*plan, ordered, impl.threads, nullptr, nullptr, &impl.output_buffers);
    NamedTensors result;
    for (size_t i = 0; i < outs.size(); ++i) result[impl.output_names[i]] = std::move(outs[i]);
    return result;
  });
}

void Session::run_into(const NamedTensors& inputs, const NamedTensors& outputs,
                       const RunOptions& run_options) const {
  host_oom_as_error("run_into", [&] {
    const Impl& impl = live(impl_, "run_into");
    check(run_options.cuda_stream == nullptr || !impl.options.device.is_cpu(),
          ErrorCode::InvalidArgument,
          "run_into: a CUDA stream was given, but this session runs on the CPU");
    std::vector<const Tensor*> ordered = impl.ordered_inputs(inputs);
    std::vector<Shape> shapes;
    for (const Tensor* t : ordered) shapes.push_back(t->shape());
    std::shared_ptr<Plan> plan = impl.plan_for(shapes, ordered);
    RunTargets targets;
    targets.cuda_stream = run_options.cuda_stream;
    targets.outputs = impl.ordered_outputs(outputs, *plan);
#ifdef _OPENMP
    omp_set_num_threads(impl.threads);
#endif
    execute_plan(*plan, ordered, impl.threads, nullptr, &targets);
  });
}

// Checks `outputs` against what the plan makes; returns them in graph-output order.
std::vector<const Tensor*> Session::Impl::ordered_outputs(const NamedTensors& outputs,
                                                          const Plan& plan) const {
  for (const auto& [name, t] : outputs)
    check(std::find(output_names.begin(), output_names.end(), name) != output_names.end(),
          ErrorCode::InvalidArgument, "run_into: the model has no output named '" + name + "'");
  std::vector<const Tensor*> ordered;
  for (size_t o = 0; o < output_names.size(); ++o) {
    const std::string& name = output_names[o];
    const Slot& made = plan.slots[plan.output_slots[o]];
    const std::string want = dtype_name(made.dtype) + made.shape.to_string();
    auto it = outputs.find(name);
    check(it != outputs.end(), ErrorCode::InvalidArgument,
          "run_into: output '" + name + "' is missing (expected " + want + ")");
    const Tensor& t = it->second;
    check(t.defined(), ErrorCode::InvalidArgument,
          "run_into: output '" + name + "' is an undefined tensor");
    check(t.device().is_cpu() || t.device() == options.device, ErrorCode::InvalidArgument,
          "run_into: output '" + name + "' is on " + t.device().to_string() +
              "; this session writes to CPU memory" +
              (options.device.is_cpu() ? std::string() : " or to " + options.device.to_string()));
    check(t.dtype() == made.dtype && t.shape() == made.shape, ErrorCode::InvalidArgument,
          "run_into: output '" + name + "' is " + dtype_name(t.dtype()) + t.shape().to_string() +
              ", the model makes " + want);
    ordered.push_back(&t);
  }
  return ordered;
}

Tensor Session::run_one(const Tensor& input) const {
  return host_oom_as_error("run_one", [&] {
    const Impl& impl = live(impl_, "run_one");
    check(impl.input_names.size() == 1, ErrorCode::InvalidArgument,
          "run_one: the model has " + std::to_string(impl.input_names.size()) +
              " inputs; use run() with named inputs");
    NamedTensors out = run({{impl.input_names[0], input}});
    return out.at(impl.output_names[0]);
  });
}

const Graph& Session::graph() const { return live(impl_, "graph").graph; }
const std::vector<std::string>& Session::input_names() const {
  return live(impl_, "input_names").input_names;
}
const std::vector<std::string>& Session::output_names() const {
  return live(impl_, "output_names").output_names;
}
const SessionOptions& Session::options() const { return live(impl_, "options").options; }

PlanStats Session::plan_stats(const std::map<std::string, Shape>& input_shapes) const {
  return host_oom_as_error("plan_stats", [&] {
    const Impl& impl = live(impl_, "plan_stats");
    std::vector<Shape> shapes;
    for (const Value* v : impl.graph.inputs()) {
      auto it = input_shapes.find(v->name);
      check(it != input_shapes.end(), ErrorCode::InvalidArgument,
            "plan_stats: no shape given for input '" + v->name + "'");
      shapes.push_back(it->second);
    }
    return impl.plan_for(shapes, {})->stats;
  });
}

void Session::trim() const {
  const Impl& impl = live(impl_, "trim");
  {
    std::lock_guard<std::mutex> lock(impl.plans_mutex);
    impl.plans.for_each([](Plan& p) { p.trim(); });
    impl.plans.clear();
  }
  impl.host_buffers.trim();
  impl.output_buffers.clear();
  impl.constants.forget_expired();
#if defined(__GLIBC__)
  malloc_trim(0);  // hand the freed heap pages back to the system too
#endif
}

MemoryStats Session::memory_stats() const {
  const Impl& impl = live(impl_, "memory_stats");
  MemoryStats m;
  {
    std::lock_guard<std::mutex> lock(impl.plans_mutex);
    m.plans = impl.plans.size();
    impl.plans.for_each([&](const Plan& p) { m.idle_bytes += p.idle_context_bytes(); });
  }
  m.graph_constant_bytes = impl.env.graph_constant_bytes;
  m.packed_bytes = impl.constants.live_bytes(Device::cpu());
  if (!impl.options.device.is_cpu())
    m.device_packed_bytes = impl.constants.live_bytes(impl.options.device);
  m.buffer_bytes = impl.host_buffers.held_bytes();
  m.idle_bytes += impl.host_buffers.idle_bytes();
  m.output_bytes = impl.output_buffers.bytes();
  return m;
}

PlanStats Session::plan_stats(const NamedTensors& inputs) const {
  return host_oom_as_error("plan_stats", [&] {
    const Impl& impl = live(impl_, "plan_stats");
    std::vector<const Tensor*> ordered = impl.ordered_inputs(inputs);
    std::vector<Shape> shapes;
    for (const Tensor* t : ordered) shapes.push_back(t->shape());
    return impl.plan_for(shapes, ordered)->stats;
  });
}

struct SessionAccess {
  static Session::Impl& impl(const Session& s) { return *s.impl_; }
  static void run(const Session& s, const NamedTensors& inputs, const OutputObserver& observe) {
    const Session::Impl& impl = live(s.impl_, "run");
    std::vector<const Tensor*> ordered = impl.ordered_inputs(inputs);
    std::vector<Shape> shapes;
    for (const Tensor* t : ordered) shapes.push_back(t->shape());
    std::shared_ptr<Plan> plan = impl.plan_for(shapes, ordered);
#ifdef _OPENMP
    omp_set_num_threads(impl.threads);
#endif
    execute_plan(*plan, ordered, impl.threads, observe);
  }
};

void observe_outputs(Session& session) {
  auto& impl = SessionAccess::impl(session);
  check(impl.options.device.is_cpu(), ErrorCode::Unsupported,
        "observing a session's outputs works on the CPU only");
  std::lock_guard<std::mutex> lock(impl.plans_mutex);
  impl.plans.clear();
  impl.env.observe_outputs = true;
}

void run_observing(const Session& session, const NamedTensors& inputs,
                   const std::function<void(const std::string&, const Tensor&)>& observe) {
  const std::vector<std::string>& names = session.output_names();
  SessionAccess::run(session, inputs,
                     [&](size_t o, const Tensor& t) { observe(names[o], t); });
}

}  // namespace minfer
