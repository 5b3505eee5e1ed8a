// `minfer bench --profile`: the per-step table, its JSON, and a Chrome/Perfetto trace.
#include "tools/bench_profile.h"

#include <cstdio>
#include <fstream>

#include "tools/format.h"

namespace minfer::cli {

namespace {

struct Derived {
  double share = 0, gflops = 0, gbps = 0, roofline_pct = 0;
};

Derived derive(const StepProfile& s, double total_ms, const MachinePeak& peak) {
  Derived d;
  const double sec = s.ms / 1000;
  d.share = total_ms > 0 ? s.ms / total_ms : 0;
  if (sec > 0) {
    d.gflops = s.flops / sec / 1e9;
    d.gbps = s.bytes / sec / 1e9;
    const double attainable = roofline_gflops(peak, s.flops, s.bytes);
    // A step without arithmetic is bound by bandwidth alone: its percentage is of the peak GB/s.
    d.roofline_pct =
        s.flops > 0 ? 100 * d.gflops / attainable : (peak.gbps > 0 ? 100 * d.gbps / peak.gbps : 0);
  }
  return d;
}

std::string shapes(const std::vector<Shape>& v) {
  std::string s;
  for (const Shape& x : v) {
    if (!s.empty()) s += ' ';
    s += x.to_string();
  }
  return s;
}

Json shapes_json(const std::vector<Shape>& v) {
  Json a = Json::array();
  for (const Shape& s : v) a.push(Json::array_of(s.dims()));
  return a;
}

}  // namespace

Json profile_json(const RunProfile& p, const MachinePeak& peak, const Latency& latency) {
  const double latency_ms = latency.median_ms;
  const double total = p.steps_ms();
  Json steps = Json::array();
  for (const StepProfile& s : p.steps) {
    const Derived d = derive(s, total, peak);
    Json j = Json::object();
    j.set("node", s.node);
    j.set("op", s.op);
    if (!s.fused.empty()) j.set("fused", s.fused);
    j.set("kernel", s.kernel);
    j.set("device", s.device);
    j.set("input_shapes", shapes_json(s.input_shapes));
    j.set("output_shapes", shapes_json(s.output_shapes));
    j.set("ms", s.ms);
    j.set("mean_ms", s.mean_ms);
    j.set("share", d.share);
    j.set("flops", s.flops);
    j.set("bytes", s.bytes);
    j.set("gflops_per_s", d.gflops);
    j.set("gb_per_s", d.gbps);
    j.set("roofline_pct", d.roofline_pct);
    steps.push(std::move(j));
  }
  Json pk = Json::object();
  pk.set("gflops_per_s", peak.gflops);
  pk.set("gb_per_s", peak.gbps);
  pk.set("method", peak.method);
  Json j = Json::object();
  j.set("runs", p.runs);
  j.set("steps_ms", total);
  j.set("profiled_run_ms", p.run_ms);
  j.set("latency_p50_ms", latency_ms);
  j.set("steps_over_latency", latency_ms > 0 ? total / latency_ms : 0.0);
  // the same with means, which keep the stalls a busy machine causes
  j.set("steps_mean_ms", p.steps_mean_ms());
  j.set("profiled_run_mean_ms", p.run_mean_ms);
  j.set("latency_mean_ms", latency.mean_ms);
  j.set("steps_mean_over_latency_mean",
        latency.mean_ms > 0 ? p.steps_mean_ms() / latency.mean_ms : 0.0);
  j.set("peak", pk);
  j.set("steps", steps);
  return j;
}

void print_profile(const RunProfile& p, const MachinePeak& peak, const Latency& latency) {
  const double latency_ms = latency.median_ms;
  const double total = p.steps_ms();
  Table t({"#", "node", "op", "kernel", "output", "ms", "share", "MFLOP", "MB", "GFLOP/s", "GB/s",
           "roofline"},
          "rllllrrrrrrr");
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const StepProfile& s = p.steps[i];
    const Derived d = derive(s, total, peak);
    t.add({std::to_string(i), s.node, s.fused.empty() ? s.op : s.op + " (" + s.fused + ")",
           s.kernel, shapes(s.output_shapes), fixed(s.ms, 3), format_percent(d.share),
           fixed(s.flops / 1e6, 1), fixed(s.bytes / 1e6, 2), fixed(d.gflops, 1), fixed(d.gbps, 1),
           fixed(d.roofline_pct, 1) + "%"});
  }
  std::printf("\nper step, median of %d profiled runs (step by step, timed around each step):\n%s",
              p.runs, t.str("  ").c_str());
  const double ratio = latency_ms > 0 ? total / latency_ms : 0.0;
  std::printf(
      "\n  step medians add up to %s; a profiled run took %s (median); the median of the timed "
      "runs above %s (steps %.1f%% of it)\n",
      format_ms(total).c_str(), format_ms(p.run_ms).c_str(), format_ms(latency_ms).c_str(),
      100 * ratio);
  std::printf("  step means add up to %s; a profiled run %s (mean); the timed runs %s (%.1f%%)\n",
              format_ms(p.steps_mean_ms()).c_str(), format_ms(p.run_mean_ms).c_str(),
              format_ms(latency.mean_ms).c_str(),
              latency.mean_ms > 0 ? 100 * p.steps_mean_ms() / latency.mean_ms : 0.0);
  bool gpu = false;
  for (const StepProfile& s : p.steps) gpu |= s.device != "cpu";
  if (gpu)
    std::printf(
        "  (GPU: profiled runs go step by step; the timed runs may replay a CUDA graph,\n"
        "   which saves the launch overhead included here)\n");
  else if (ratio < 0.9 || ratio > 1.1)
    std::printf(
        "  (more than 10%% apart: other processes probably took the cores during some runs;\n"
        "   repeat on an idle machine or with fewer --threads)\n");
  std::printf(
      "  roofline: %.1f GFLOP/s, %.1f GB/s (%s); a step with no arithmetic is rated "
      "against bandwidth alone\n",
      peak.gflops, peak.gbps, peak.method.c_str());
}

void write_trace(const RunProfile& p, const std::string& path) {
  // Chrome trace-event format (Perfetto opens it): one median run, the steps end to end.
  Json events = Json::array();
  double ts_us = 0;
  for (const StepProfile& s : p.steps) {
    Json args = Json::object();
    args.set("kernel", s.kernel);
    if (!s.fused.empty()) args.set("fused", s.fused);
    args.set("output", shapes(s.output_shapes));
    args.set("flops", s.flops);
    args.set("bytes", s.bytes);
    Json e = Json::object();
    e.set("name", s.node.empty() ? s.op : s.node);
    e.set("cat", s.op);
    e.set("ph", "X");
    e.set("ts", ts_us);
    e.set("dur", s.ms * 1000);
    e.set("pid", 1);
    e.set("tid", s.device == "cpu" ? 1 : 2);
    e.set("args", std::move(args));
    events.push(std::move(e));
    ts_us += s.ms * 1000;
  }
  Json j = Json::object();
  j.set("traceEvents", std::move(events));
  j.set("displayTimeUnit", "ms");
  std::ofstream out(path);
  check(out.good(), ErrorCode::InvalidArgument, "--trace: cannot write '" + path + "'");
  out << j.dump(-1) << "\n";
  check(out.good(), ErrorCode::InvalidArgument, "--trace: writing '" + path + "' failed");
}

}  // namespace minfer::cli
