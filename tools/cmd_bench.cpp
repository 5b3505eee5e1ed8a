// `minfer bench`: latency distribution and throughput of Session::run on random inputs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <sstream>

#include <sys/resource.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "runtime/device_backend.h"
#include "tools/bench_profile.h"
#include "tools/commands.h"
#include "tools/format.h"
#include "tools/json.h"
#include "tools/kernel_report.h"
#include "tools/model_loader.h"

namespace minfer::cli {

namespace {

ArgParser make_parser() {
  ArgParser p("bench",
              "MODEL [--batch N[,N...]] [--warmup N] [--iterations N | --duration S] [options]",
              "Measures the latency of one run (min/mean/p50/p90/p99/max) and the throughput on\n"
              "random inputs of the model's input shape, and the process's peak memory.");
  add_model_options(p);
  p.option("--batch", "N[,N...]",
           "batch size for a symbolic batch dimension (default 1); a list such as 1,2,4,8\n"
           "measures each in turn in one session");
  p.option("--warmup", "N", "untimed runs first (default 3)");
  p.option("--iterations", "N", "timed runs (default 20)");
  p.option("--duration", "S", "instead of --iterations: run for S seconds");
  p.flag("--device-input",
         "with --device cuda: the inputs live on the GPU (copied there once)\n"
         "and the outputs stay there (Session::run_into), as in a pipeline\n"
         "whose data is already there; the timed runs then leave out the\n"
         "copies between host and GPU");
  p.flag("--profile", "then time each step (node) of the plan: op, kernel, shapes, time,\n"
                      "share, FLOPs, bytes, GFLOP/s, GB/s and % of the roofline (measured\n"
                      "once by a micro-benchmark); runs step by step, without a CUDA graph;\n"
                      "with a batch list, of the last batch");
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

// --batch as a list of sizes; a model with a fixed batch takes only its own.
std::vector<int64_t> batch_list(const Graph& g, const Args& args) {
  if (!args.has("--batch")) return {choose_batch(g, args, 1)};
  std::vector<int64_t> out;
  std::stringstream list(args.get("--batch", ""));
  std::string item;
  while (std::getline(list, item, ',')) {
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > (1 << 20))
      throw UsageError("--batch: expected sizes 1.." + std::to_string(1 << 20) +
                       " separated by commas, got '" + args.get("--batch", "") + "'");
    if (has_fixed_batch(g) && v != g.inputs()[0]->shape[0])
      throw UsageError("--batch " + item + ": the model's input '" + g.inputs()[0]->name +
                       "' has a fixed batch of " + std::to_string(g.inputs()[0]->shape[0]));
    out.push_back(v);
  }
  if (out.empty()) throw UsageError("--batch: no batch size given");
  return out;
}

size_t peak_rss_bytes() {  // of the process so far (Linux reports KiB)
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return size_t(ru.ru_maxrss) * 1024;
}

struct BatchResult {
  int64_t batch = 1;
  PlanStats plan;
  std::vector<double> ms;
  double total_ms = 0, prepare_ms = 0;
  size_t peak_rss = 0;
};

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
#if defined(__GLIBC__)
  // glibc raises its mmap threshold whenever a large block is freed; blocks below it (the
  // inputs of earlier batches) then stay in the heap once freed, and the peak memory of a
  // batch list grows with it (ResNet-50, batches 1..8: 13 MB). A fixed threshold hands them
  // back, as a long-running service that watches its memory would choose.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif

  LoadedModel model = load_model(args);
  const std::vector<int64_t> batches = batch_list(model.graph, args);
  std::vector<const Value*> graph_inputs;
  const double t_session = now_ms();
  Session session(std::move(model.graph), options);
  const double session_ms = now_ms() - t_session;
  for (const Value* v : session.graph().inputs())
    if (!v->is_constant()) graph_inputs.push_back(v);

  // --device-input: the same inputs, copied once into GPU memory that the runs read.
  const bool device_input = args.has("--device-input");
  if (device_input && options.device.is_cpu())
    throw UsageError("--device-input needs --device cuda");
  std::shared_ptr<DeviceContext> input_context;
  DeviceBackend* input_backend = device_input ? &device_backend(options.device) : nullptr;
  if (device_input) input_context = input_backend->create_context(options.device.index);

  std::vector<BatchResult> results;
  // --profile / --trace: after the ordinary timed runs (of the last batch), whose median the
  // steps should add up to.
  const bool profile = args.has("--profile") || args.has("--trace");
  RunProfile run_profile;
  MachinePeak peak;
  for (const int64_t batch : batches) {
    BatchResult r;
    r.batch = batch;
    // Planned from the shapes first, so that a batch too large for memory is refused before
    // its inputs are made (a model whose shapes depend on input values plans from them).
    const double t_prepare = now_ms();
    bool planned = false;
    try {
      std::map<std::string, Shape> shapes;
      for (const Value* v : graph_inputs) shapes[v->name] = concrete_shape(*v, batch);
      r.plan = session.plan_stats(shapes);
      planned = true;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::Unsupported) throw;
    }
    std::mt19937 rng(1234);
    NamedTensors inputs;
    for (const Value* v : graph_inputs) inputs[v->name] = random_input(*v, batch, rng);
    if (!planned) r.plan = session.plan_stats(inputs);
    // optimize + plan + pack weights: not part of the timed runs
    r.prepare_ms = now_ms() - t_prepare + (results.empty() ? session_ms : 0);

    std::vector<std::shared_ptr<void>> device_buffers;
    if (device_input) {
      for (auto& [name, t] : inputs) {
        DeviceContext* dc = input_context.get();
        std::shared_ptr<void> buffer(
            input_backend->device_alloc(*dc, t.nbytes()),
            [dc, input_backend](void* p) { input_backend->device_free(*dc, p); });
        input_backend->copy_to_device(*dc, buffer.get(), t.raw(), t.nbytes());
        input_backend->synchronize(*dc);
        t = Tensor::view(buffer.get(), t.dtype(), t.shape(), options.device);
        device_buffers.push_back(std::move(buffer));
      }
    }

    // With --device-input the outputs stay on the GPU too: buffers shaped by a first run.
    NamedTensors device_outputs;
    if (device_input) {
      for (const auto& [name, t] : session.run(inputs)) {
        DeviceContext* dc = input_context.get();
        std::shared_ptr<void> buffer(
            input_backend->device_alloc(*dc, t.nbytes()),
            [dc, input_backend](void* p) { input_backend->device_free(*dc, p); });
        device_outputs[name] = Tensor::view(buffer.get(), t.dtype(), t.shape(), options.device);
        device_buffers.push_back(std::move(buffer));
      }
    }
    auto run_once = [&] {
      if (device_input)
        session.run_into(inputs, device_outputs);
      else
        session.run(inputs);
    };

    for (int64_t i = 0; i < warmup; ++i) run_once();
    const double t0 = now_ms();
    for (;;) {
      const double t = now_ms();
      run_once();
      r.ms.push_back(now_ms() - t);
      if (duration_s > 0 ? now_ms() - t0 >= duration_s * 1000
                         : static_cast<int64_t>(r.ms.size()) >= iterations)
        break;
    }
    r.total_ms = now_ms() - t0;
    r.peak_rss = peak_rss_bytes();
    if (profile && batch == batches.back()) {
      const int runs = static_cast<int>(args.get_int("--profile-runs", 10, 1, 1 << 20));
      run_profile = profile_session(session, inputs, runs, 2);
      peak = measure_peak(options.device, effective_threads(options));
      if (args.has("--trace")) write_trace(run_profile, args.get("--trace"));
    }
    results.push_back(std::move(r));
  }

  struct Stat {
    const char* name;
    double value;
  };
  auto stats_of = [](const BatchResult& r) {
    std::vector<double> sorted = r.ms;
    std::sort(sorted.begin(), sorted.end());
    double mean = 0;
    for (double x : r.ms) mean += x;
    mean /= double(r.ms.size());
    return std::vector<Stat>{{"min", sorted.front()},           {"mean", mean},
                             {"p50", percentile(sorted, 0.5)},  {"p90", percentile(sorted, 0.9)},
                             {"p99", percentile(sorted, 0.99)}, {"max", sorted.back()}};
  };
  auto throughput_of = [](const BatchResult& r) {
    return double(r.batch) * double(r.ms.size()) / (r.total_ms / 1000);
  };
  // What the profile's step times are compared with: the last batch's median and mean.
  auto timed_of = [&](const BatchResult& r) {
    const std::vector<Stat> st = stats_of(r);
    return Latency{st[2].value, st[1].value};
  };

  if (args.has("--json")) {
    auto one = [&](const BatchResult& r) {
      Json lat = Json::object();
      for (const Stat& st : stats_of(r)) lat.set(st.name, st.value);
      Json j = Json::object();
      j.set("batch", r.batch);
      j.set("cuda_graph", r.plan.cuda_graph);
      j.set("arena_bytes", r.plan.arena_bytes);
      j.set("kernels", kernels_json(r.plan));
      if (!options.device.is_cpu()) j.set("device_bytes", r.plan.device_bytes);
      j.set("iterations", r.ms.size());
      j.set("prepare_ms", r.prepare_ms);
      j.set("seconds", r.total_ms / 1000);
      j.set("latency_ms", lat);
      j.set("throughput_ips", throughput_of(r));
      j.set("peak_rss_bytes", r.peak_rss);  // of the process, up to the end of this batch
      return j;
    };
    // One batch: its fields at the top level; several: under "batches", in order.
    Json j = results.size() == 1 ? one(results[0]) : Json::object();
    j.set("model", model.spec);
    j.set("device", options.device.to_string());
    j.set("precision", precision_name(options.precision));
    j.set("threads", effective_threads(options));
    j.set("opt_level", options.optimization_level);
    j.set("device_input", device_input);
    j.set("warmup", warmup);
    if (results.size() > 1) {
      Json list = Json::array();
      for (const BatchResult& r : results) list.push(one(r));
      j.set("batches", list);
      j.set("peak_rss_bytes", results.back().peak_rss);
    }
    if (profile) j.set("profile", profile_json(run_profile, peak, timed_of(results.back())));
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  if (results.size() > 1) {
    std::printf("%s · %s · batches", model.title().c_str(), describe_options(options).c_str());
    for (const BatchResult& r : results) std::printf(" %lld", static_cast<long long>(r.batch));
    std::printf("%s\n\n", device_input ? " · inputs and outputs on the GPU" : "");
    Table t({"batch", "mean (ms)", "p50 (ms)", "img/s", "arena", "peak RSS"}, "rrrrrr");
    for (const BatchResult& r : results) {
      const std::vector<Stat> st = stats_of(r);
      t.add({std::to_string(r.batch), fixed(st[1].value, st[1].value < 10 ? 3 : 2),
             fixed(st[2].value, st[2].value < 10 ? 3 : 2), fixed(throughput_of(r), 1),
             format_bytes(double(r.plan.arena_bytes)), format_bytes(double(r.peak_rss))});
    }
    std::fputs(t.str("  ").c_str(), stdout);
    std::printf("\n  peak RSS of the process: %s (one session, plans of every batch)\n",
                format_bytes(double(results.back().peak_rss)).c_str());
    if (profile) print_profile(run_profile, peak, timed_of(results.back()));
    if (args.has("--trace")) std::printf("  trace written to %s\n", args.get("--trace").c_str());
    return 0;
  }
  const BatchResult& r = results[0];
  const std::vector<Stat> stats = stats_of(r);
  const double throughput = throughput_of(r);
  std::printf("%s · %s · batch %lld%s\n", model.title().c_str(), describe_options(options).c_str(),
              static_cast<long long>(r.batch),
              device_input ? " · inputs and outputs on the GPU" : "");
  std::printf("prepare %s · %lld warmup + %zu timed runs in %s\n", format_ms(r.prepare_ms).c_str(),
              static_cast<long long>(warmup), r.ms.size(), format_ms(r.total_ms).c_str());
  if (!options.device.is_cpu())
    std::printf("GPU memory of the plan %s (weights + one run's arena)%s\n",
                format_bytes(r.plan.device_bytes).c_str(),
                r.plan.cuda_graph ? " · replayed as a CUDA graph" : "");
  std::printf("kernels %s\n", kernels_text(r.plan).c_str());
  std::printf("\n");
  std::vector<std::string> header{""}, row{"latency (ms)"};
  for (const Stat& st : stats) {
    header.push_back(st.name);
    row.push_back(fixed(st.value, st.value < 10 ? 3 : 2));
  }
  Table t(header, "lrrrrrr");
  t.add(row);
  std::fputs(t.str("  ").c_str(), stdout);
  std::printf("\n  throughput  %s img/s (%s per image)\n", fixed(throughput, 1).c_str(),
              format_ms(r.total_ms / (double(r.batch) * double(r.ms.size()))).c_str());
  std::printf("  peak RSS    %s\n", format_bytes(double(r.peak_rss)).c_str());
  if (profile) print_profile(run_profile, peak, timed_of(r));
  if (args.has("--trace")) std::printf("  trace written to %s\n", args.get("--trace").c_str());
  return 0;
}

}  // namespace minfer::cli
