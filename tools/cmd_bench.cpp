// `minfer bench`: latency distribution and throughput of Session::run on random inputs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>

#include "backends/cuda_api.h"
#include "tools/bench_profile.h"
#include "tools/commands.h"
#include "tools/format.h"
#include "tools/json.h"
#include "tools/kernel_report.h"
#include "tools/model_loader.h"

namespace minfer::cli {

namespace {

ArgParser make_parser() {
  ArgParser p("bench", "MODEL [--batch N] [--warmup N] [--iterations N | --duration S] [options]",
              "Measures the latency of one run (min/mean/p50/p90/p99/max) and the throughput on\n"
              "random inputs of the model's input shape.");
  add_model_options(p);
  p.option("--batch", "N", "batch size for a symbolic batch dimension (default 1)");
  p.option("--warmup", "N", "untimed runs first (default 3)");
  p.option("--iterations", "N", "timed runs (default 20)");
  p.option("--duration", "S", "instead of --iterations: run for S seconds");
  p.flag("--device-input", "with --device cuda: the inputs live on the GPU (copied there once),\n"
                           "as in a pipeline whose data is already there; the timed runs then\n"
                           "leave out the host-to-device copy");
  p.flag("--profile", "then time each step (node) of the plan: op, kernel, shapes, time,\n"
                      "share, FLOPs, bytes, GFLOP/s, GB/s and % of the roofline (measured\n"
                      "once by a micro-benchmark); runs step by step, without a CUDA graph");
  p.option("--profile-runs", "N",
           "runs --profile times (default 10); it reports each step's median");
  p.option("--trace", "F", "with or without --profile: write the per-step profile as a\n"
                           "Chrome/Perfetto trace (JSON) to F");
  add_session_options(p);
  p.flag("--json", "print one JSON object on stdout instead of text");
  p.epilog("example:\n  minfer bench resnet50 --batch 8 --threads 2 --duration 10\n"
           "  minfer bench resnet50 --profile --trace resnet50.trace.json");
  return p;
}

// Linear interpolation between closest ranks of sorted samples.
double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.size() == 1) return sorted[0];
  const double pos = q * double(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - double(lo)) * (sorted[hi] - sorted[lo]);
}

Tensor random_input(const Value& v, int64_t batch, std::mt19937& rng) {
  Tensor t(v.dtype, concrete_shape(v, batch));
  if (v.dtype == DType::f32) {
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  }
  return t;  // other dtypes: zeros (indices, masks), always valid
}

}  // namespace

int cmd_bench(const Argv& argv) {
  const ArgParser parser = make_parser();
  const Args args = parser.parse(argv);
  if (args.help_requested()) {
    std::fputs(parser.help().c_str(), stdout);
    return 0;
  }
  if (args.has("--iterations") && args.has("--duration"))
    throw UsageError("give --iterations or --duration, not both");
  const int64_t warmup = args.get_int("--warmup", 3, 0, 1 << 20);
  const int64_t iterations = args.get_int("--iterations", 20, 1, 1 << 24);
  const double duration_s = args.get_double("--duration", 0, 0);
  if (args.has("--duration") && duration_s <= 0) throw UsageError("--duration must be positive");
  const SessionOptions options = session_options(args);

  LoadedModel model = load_model(args);
  const int64_t batch = choose_batch(model.graph, args, 1);
  std::mt19937 rng(1234);
  NamedTensors inputs;
  for (const Value* v : model.graph.inputs())
    if (!v->is_constant()) inputs[v->name] = random_input(*v, batch, rng);
  const double t_prepare = now_ms();
  Session session(std::move(model.graph), options);
  // optimize + plan + pack weights: not part of the timed runs
  const PlanStats plan_stats = session.plan_stats(inputs);
  const double prepare_ms = now_ms() - t_prepare;

  // --device-input: the same inputs, copied once into GPU memory that the runs read.
  const bool device_input = args.has("--device-input");
  if (device_input && options.device.is_cpu())
    throw UsageError("--device-input needs --device cuda");
  std::shared_ptr<DeviceContext> input_context;
  std::vector<std::shared_ptr<void>> device_buffers;
  if (device_input) {
    input_context = cuda::create_context(options.device.index);
    for (auto& [name, t] : inputs) {
      DeviceContext* dc = input_context.get();
      std::shared_ptr<void> buffer(cuda::device_alloc(*dc, t.nbytes()),
                                   [dc](void* p) { cuda::device_free(*dc, p); });
      cuda::copy_to_device(*dc, buffer.get(), t.raw(), t.nbytes());
      cuda::synchronize(*dc);
      t = Tensor::view(buffer.get(), t.dtype(), t.shape(), options.device);
      device_buffers.push_back(std::move(buffer));
    }
  }

  for (int64_t i = 0; i < warmup; ++i) session.run(inputs);
  std::vector<double> ms;
  const double t0 = now_ms();
  for (;;) {
    const double t = now_ms();
    session.run(inputs);
    ms.push_back(now_ms() - t);
    if (duration_s > 0 ? now_ms() - t0 >= duration_s * 1000
                       : static_cast<int64_t>(ms.size()) >= iterations)
      break;
  }
  const double total_ms = now_ms() - t0;
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  double mean = 0;
  for (double x : ms) mean += x;
  mean /= double(ms.size());
  const double throughput = double(batch) * double(ms.size()) / (total_ms / 1000);
  // --profile / --trace: after the ordinary timed runs, whose median the steps should add up to.
  const bool profile = args.has("--profile") || args.has("--trace");
  RunProfile run_profile;
  MachinePeak peak;
  if (profile) {
    const int runs = static_cast<int>(args.get_int("--profile-runs", 10, 1, 1 << 20));
    run_profile = profile_session(session, inputs, runs, 2);
    peak = measure_peak(options.device, effective_threads(options));
    if (args.has("--trace")) write_trace(run_profile, args.get("--trace"));
  }
  struct Stat {
    const char* name;
    double value;
  };
  const Stat stats[] = {{"min", sorted.front()},           {"mean", mean},
                        {"p50", percentile(sorted, 0.5)},  {"p90", percentile(sorted, 0.9)},
                        {"p99", percentile(sorted, 0.99)}, {"max", sorted.back()}};

  if (args.has("--json")) {
    Json lat = Json::object();
    for (const Stat& s : stats) lat.set(s.name, s.value);
    Json j = Json::object();
    j.set("model", model.spec);
    j.set("device", options.device.to_string());
    j.set("precision", precision_name(options.precision));
    j.set("threads", effective_threads(options));
    j.set("opt_level", options.optimization_level);
    j.set("batch", batch);
    j.set("cuda_graph", plan_stats.cuda_graph);
    j.set("arena_bytes", plan_stats.arena_bytes);
    j.set("kernels", kernels_json(plan_stats));
    if (!options.device.is_cpu()) j.set("device_bytes", plan_stats.device_bytes);
    j.set("device_input", device_input);
    j.set("warmup", warmup);
    j.set("iterations", ms.size());
    j.set("prepare_ms", prepare_ms);
    j.set("seconds", total_ms / 1000);
    j.set("latency_ms", lat);
    j.set("throughput_ips", throughput);
    if (profile) j.set("profile", profile_json(run_profile, peak, {percentile(sorted, 0.5), mean}));
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("%s · %s · batch %lld%s\n", model.title().c_str(), describe_options(options).c_str(),
              static_cast<long long>(batch), device_input ? " · inputs on the GPU" : "");
  std::printf("prepare %s · %lld warmup + %zu timed runs in %s\n", format_ms(prepare_ms).c_str(),
              static_cast<long long>(warmup), ms.size(), format_ms(total_ms).c_str());
  if (!options.device.is_cpu())
    std::printf("GPU memory of the plan %s (weights + one run's arena)%s\n",
                format_bytes(plan_stats.device_bytes).c_str(),
                plan_stats.cuda_graph ? " · replayed as a CUDA graph" : "");
  std::printf("kernels %s\n", kernels_text(plan_stats).c_str());
  std::printf("\n");
  std::vector<std::string> header{""}, row{"latency (ms)"};
  for (const Stat& s : stats) {
    header.push_back(s.name);
    row.push_back(fixed(s.value, s.value < 10 ? 3 : 2));
  }
  Table t(header, "lrrrrrr");
  t.add(row);
  std::fputs(t.str("  ").c_str(), stdout);
  std::printf("\n  throughput  %s img/s (%s per image)\n", fixed(throughput, 1).c_str(),
              format_ms(total_ms / (double(batch) * double(ms.size()))).c_str());
  if (profile) print_profile(run_profile, peak, {percentile(sorted, 0.5), mean});
  if (args.has("--trace")) std::printf("  trace written to %s\n", args.get("--trace").c_str());
  return 0;
}

}  // namespace minfer::cli
