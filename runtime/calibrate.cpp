// Calibrator: runs the fp32 graph with every float activation exposed as an output and keeps a
// histogram per tensor (runtime/calibrate_histogram.h).
#include "minfer/calibrate.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>

#include "runtime/calibrate_histogram.h"
#include "runtime/session_observe.h"

namespace minfer {

const char* calibration_method_name(CalibrationMethod m) {
  switch (m) {
    case CalibrationMethod::minmax:
      return "minmax";
    case CalibrationMethod::percentile:
      return "percentile";
    case CalibrationMethod::entropy:
      return "entropy";
    case CalibrationMethod::mse:
      return "mse";
  }
  return "?";
}

CalibrationMethod parse_calibration_method(const std::string& name) {
  for (auto m : {CalibrationMethod::minmax, CalibrationMethod::percentile,
                 CalibrationMethod::entropy, CalibrationMethod::mse})
    if (name == calibration_method_name(m)) return m;
  throw Error(ErrorCode::InvalidArgument, "unknown calibration method '" + name +
                                              "' (expected minmax, percentile, entropy or mse)");
}

namespace {

// A progress bar on stderr: redrawn in place on a terminal, a plain line every ~10 % else.
class Progress {
 public:
  Progress(int64_t total, bool enabled)
      : total_(total),
        enabled_(enabled && total > 0),
        tty_(isatty(fileno(stderr))),
        start_(std::chrono::steady_clock::now()) {}

  void update(int64_t done) {
    if (!enabled_) return;
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    double rate = secs > 0 ? done / secs : 0;
    double eta = rate > 0 ? (total_ - done) / rate : 0;
    if (tty_) {
      constexpr int kWidth = 30;
      int filled = static_cast<int>(kWidth * done / total_);
      std::string bar(filled, '=');
      if (filled < kWidth) bar += '>' + std::string(kWidth - filled - 1, ' ');
      std::fprintf(stderr, "\rcalibrating [%s] %lld/%lld  %.1f samples/s  ETA %.0fs ", bar.c_str(),
                   static_cast<long long>(done), static_cast<long long>(total_), rate, eta);
      if (done == total_) std::fprintf(stderr, "\n");
      std::fflush(stderr);
    } else if (done == total_ || done * 10 / total_ != last_ * 10 / total_) {
      std::fprintf(stderr, "calibrating: %lld/%lld samples, %.1f samples/s, ETA %.0fs\n",
                   static_cast<long long>(done), static_cast<long long>(total_), rate, eta);
    }
    last_ = done;
  }

 private:
  int64_t total_, last_ = 0;
  bool enabled_, tty_;
  std::chrono::steady_clock::time_point start_;
};

bool same_sample_shape(const Tensor& a, const Tensor& b) {
  if (a.rank() != b.rank() || a.dtype() != b.dtype()) return false;
  for (size_t d = 1; d < a.rank(); ++d)
    if (a.dim(d) != b.dim(d)) return false;
  return true;
}

// [1, ...] tensors of one shape stacked into [n, ...].
Tensor stack_samples(const std::vector<Tensor>& samples) {
  Shape shape = samples[0].shape();
  shape[0] = static_cast<int64_t>(samples.size());
  Tensor out(samples[0].dtype(), shape);
  char* dst = static_cast<char*>(out.raw());
  for (const Tensor& t : samples) {
    std::memcpy(dst, t.raw(), t.nbytes());
    dst += t.nbytes();
  }
  return out;
}

}  // namespace

struct Calibrator::Impl {
  CalibrationOptions options;
  std::unique_ptr<Session> session;
  std::vector<std::string> names;  // recorded tensors, in graph order
  std::map<std::string, calib::Histogram> histograms;
  int64_t samples = 0;
};

Calibrator::Calibrator(const Graph& fp32_graph, CalibrationOptions options)
    : impl_(std::make_unique<Impl>()) {
  check(options.bins >= 256, ErrorCode::InvalidArgument,
        "calibration needs at least 256 histogram bins, got " + std::to_string(options.bins));
  impl_->options = options;
  // A model whose inputs have a fixed batch (most model-zoo files: [1, 3, 224, 224]) cannot take
  // stacked samples: add_all then runs them one at a time.
  for (const Value* v : fp32_graph.inputs())
    if (v->shape.rank() == 0 || v->shape.dims()[0] >= 0) impl_->options.batch = 1;
  Graph g = clone_graph(fp32_graph);
  prepare_for_quantization(g);
  // Every float activation becomes an output, so one run sees them all.
  std::vector<Value*> record;
  for (Value* v : g.inputs())
    if (v->dtype == DType::f32) record.push_back(v);
  for (Node* n : g.topo_order())
    for (Value* v : n->outputs)
      if (v->dtype == DType::f32 && !v->is_constant()) record.push_back(v);
  for (Value* v : record) {
    if (!v->is_graph_output) g.add_output(v);
    impl_->names.push_back(v->name);
    impl_->histograms.emplace(v->name, calib::Histogram(options.bins));
  }
  SessionOptions so;
  so.threads = options.threads;
  so.optimization_level = 1;  // no fusions: every recorded tensor must still exist
  impl_->session = std::make_unique<Session>(std::move(g), so);
  // Each activation goes into its histogram as soon as it is computed, and its memory is
  // reused: a run holds one batch's live tensors, not all of them.
  observe_outputs(*impl_->session);
}

Calibrator::~Calibrator() = default;
Calibrator::Calibrator(Calibrator&&) noexcept = default;
Calibrator& Calibrator::operator=(Calibrator&&) noexcept = default;

void Calibrator::add(const NamedTensors& inputs) {
  // Tensors that a level-1 pass removed (a no-op reshape, ...) are never observed.
  run_observing(*impl_->session, inputs, [&](const std::string& name, const Tensor& t) {
    auto it = impl_->histograms.find(name);
    if (it != impl_->histograms.end()) it->second.add(t.data<float>(), t.numel());
  });
  const Tensor& first = inputs.begin()->second;
  impl_->samples += first.rank() > 0 ? first.dim(0) : 1;
}

void Calibrator::add(const Tensor& input) {
  const auto& names = impl_->session->input_names();
  check(names.size() == 1, ErrorCode::InvalidArgument,
        "Calibrator::add: the model has " + std::to_string(names.size()) +
            " inputs; pass them by name");
  add(NamedTensors{{names[0], input}});
}

void Calibrator::add_all(const std::vector<Tensor>& samples) {
  Progress progress(static_cast<int64_t>(samples.size()), impl_->options.progress);
  const size_t batch = static_cast<size_t>(std::max(1, impl_->options.batch));
  size_t i = 0;
  while (i < samples.size()) {
    std::vector<Tensor> group{samples[i]};
    while (group.size() < batch && i + group.size() < samples.size() &&
           samples[i + group.size()].rank() >= 1 && samples[i + group.size()].dim(0) == 1 &&
           samples[i].dim(0) == 1 && same_sample_shape(samples[i], samples[i + group.size()]))
      group.push_back(samples[i + group.size()]);
    add(group.size() == 1 ? group[0] : stack_samples(group));
    i += group.size();
    progress.update(static_cast<int64_t>(i));
  }
}

int64_t Calibrator::samples() const { return impl_->samples; }

int Calibrator::batch() const { return impl_->options.batch; }

std::vector<std::string> Calibrator::tensor_names() const { return impl_->names; }

CalibrationTable Calibrator::table(CalibrationMethod method, float percentile) const {
  check(impl_->samples > 0, ErrorCode::InvalidArgument, "Calibrator::table: no samples were added");
  check(percentile > 0 && percentile <= 100, ErrorCode::InvalidArgument,
        "percentile must be in (0, 100], got " + std::to_string(percentile));
  CalibrationTable t;
  t.method = calibration_method_name(method);
  t.percentile = percentile;
  t.samples = impl_->samples;
  for (const auto& [name, h] : impl_->histograms)
    if (h.total() > 0) t.ranges[name] = h.choose(method, percentile);
  return t;
}

}  // namespace minfer
