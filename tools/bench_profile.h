// `minfer bench --profile / --trace`: how the per-step profile (minfer/profile.h) is shown.
#pragma once

#include <string>

#include "minfer/profile.h"
#include "tools/json.h"

namespace minfer::cli {

// The median and mean of bench's ordinary timed runs, which the steps' medians and means
// should add up to.
struct Latency {
  double median_ms = 0, mean_ms = 0;
};
void print_profile(const RunProfile& p, const MachinePeak& peak, const Latency& latency);
Json profile_json(const RunProfile& p, const MachinePeak& peak, const Latency& latency);
// A Chrome trace-event JSON file (opens in Perfetto and chrome://tracing).
void write_trace(const RunProfile& p, const std::string& path);

}  // namespace minfer::cli
