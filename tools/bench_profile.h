// `minfer bench --profile / --trace`: how the per-step profile (minfer/profile.h) is shown.
#pragma once

#include <string>

#include "minfer/profile.h"
#include "tools/json.h"

namespace minfer::cli {

// `latency_ms`: the median of bench's ordinary timed runs, which the steps should add up to.
void print_profile(const RunProfile& p, const MachinePeak& peak, double latency_ms);
Json profile_json(const RunProfile& p, const MachinePeak& peak, double latency_ms);
// A Chrome trace-event JSON file (opens in Perfetto and chrome://tracing).
void write_trace(const RunProfile& p, const std::string& path);

}  // namespace minfer::cli
