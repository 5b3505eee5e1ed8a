// profile_session: times each plan step over several runs (minfer/profile.h).
#include <algorithm>
#include <chrono>

#include "minfer/profile.h"
#include "runtime/device_backend.h"
#include "runtime/plan.h"
#include "runtime/profiler_cost.h"

namespace minfer {

namespace {

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0 : sum / double(v.size());
}

// A step on the GPU (a CUDA kernel or a copy) is timed by events on the session's stream,
// since its work is asynchronous; a CPU step by the CPU clock.
bool on_gpu(const Step& st) { return st.kind != Step::Kind::Kernel || !st.device.is_cpu(); }

class StepTimer : public StepObserver {
 public:
  ~StepTimer() override {
    for (void* e : events_)
      if (e) backend_->event_destroy(e);
  }

  void before_step(const Plan& plan, size_t i) override {
    if (!plan_) start(plan);
    check(plan_ == &plan, ErrorCode::Internal, "profiler: the plan changed between runs");
    if (on_gpu(plan.steps[i]))
      backend_->event_record(events_[2 * i], *plan.device_context);
    else
      cpu_start_ = now_ms();
  }

  void after_step(const Plan& plan, size_t i) override {
    if (on_gpu(plan.steps[i])) {
      backend_->event_record(events_[2 * i + 1], *plan.device_context);
      recorded_[i] = true;
    } else {
      samples_[i].push_back(now_ms() - cpu_start_);
    }
  }

  // After each run: adds up the GPU steps' event times (the run has synchronized).
  void end_run() {
    for (size_t i = 0; i < recorded_.size(); ++i)
      if (recorded_[i])
        samples_[i].push_back(backend_->event_elapsed_ms(events_[2 * i], events_[2 * i + 1]));
    std::fill(recorded_.begin(), recorded_.end(), false);
  }

  void reset() {
    for (auto& s : samples_) s.clear();
  }
  const Plan* plan() const { return plan_; }
  // The median time of step `i` over the runs since reset().
  double median_ms(size_t i) const { return median(samples_[i]); }
  double mean_ms(size_t i) const { return mean(samples_[i]); }

 private:
  void start(const Plan& plan) {
    plan_ = &plan;
    backend_ = plan.backend;  // null for a CPU plan, whose steps are all timed by the clock
    samples_.assign(plan.steps.size(), {});
    recorded_.assign(plan.steps.size(), false);
    events_.assign(2 * plan.steps.size(), nullptr);
    for (size_t i = 0; i < plan.steps.size(); ++i)
      if (on_gpu(plan.steps[i])) {
        events_[2 * i] = backend_->event_create();
        events_[2 * i + 1] = backend_->event_create();
      }
  }

  const Plan* plan_ = nullptr;
  DeviceBackend* backend_ = nullptr;
  std::vector<std::vector<double>> samples_;  // per step, one time per run
  std::vector<bool> recorded_;
  std::vector<void*> events_;
  double cpu_start_ = 0;
};

StepProfile describe(const Plan& plan, const Step& st) {
  StepProfile p;
  p.device = st.device.to_string();
  p.kernel = st.kernel_name;
  if (st.kind == Step::Kind::Kernel && st.node) {
    p.node = st.node->name;
    p.op = st.node->op_type;
    p.fused = profiler::fused_description(*st.node);
  } else {
    p.op = st.kind == Step::Kind::CopyToDevice ? "CopyToDevice" : "CopyToHost";
    p.node = st.inputs.empty() || st.inputs[0] < 0 ? "" : plan.slots[st.inputs[0]].name;
    if (p.kernel.empty()) p.kernel = "cudaMemcpyAsync";
  }
  for (int id : st.inputs)
    if (id >= 0) p.input_shapes.push_back(plan.slots[id].shape);
  for (int id : st.outputs) p.output_shapes.push_back(plan.slots[id].shape);
  p.flops = profiler::step_flops(plan, st);
  p.bytes = profiler::step_bytes(plan, st);
  return p;
}

}  // namespace

double RunProfile::steps_mean_ms() const {
  double total = 0;
  for (const StepProfile& s : steps) total += s.mean_ms;
  return total;
}

double RunProfile::steps_ms() const {
  double total = 0;
  for (const StepProfile& s : steps) total += s.ms;
  return total;
}

RunProfile profile_session(const Session& session, const NamedTensors& inputs, int runs,
                           int warmup) {
  check(runs >= 1 && warmup >= 0, ErrorCode::InvalidArgument,
        "profile: runs must be >= 1 and warmup >= 0");
  StepTimer timer;
  ObserveSteps observe(timer);  // the runs below, on this thread
  for (int i = 0; i < warmup; ++i) {
    session.run(inputs);
    timer.end_run();
  }
  timer.reset();
  std::vector<double> wall;
  for (int i = 0; i < runs; ++i) {
    const double t0 = now_ms();
    session.run(inputs);
    wall.push_back(now_ms() - t0);
    timer.end_run();
  }
  RunProfile r;
  r.runs = runs;
  r.run_ms = median(wall);
  r.run_mean_ms = mean(wall);
  if (!timer.plan()) return r;  // a plan without steps (outputs are inputs or constants)
  const Plan& plan = *timer.plan();
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    StepProfile p = describe(plan, plan.steps[i]);
    p.ms = timer.median_ms(i);
    p.mean_ms = timer.mean_ms(i);
    r.steps.push_back(std::move(p));
  }
  return r;
}

}  // namespace minfer
