#include "tools/kernel_report.h"

namespace minfer::cli {

std::string kernels_text(const PlanStats& stats) {
  std::string s;
  for (const auto& [name, steps] : stats.kernels)
    s += (s.empty() ? "" : ", ") + name + " ×" + std::to_string(steps);
  return s.empty() ? "none" : s;
}

Json kernels_json(const PlanStats& stats) {
  Json j = Json::object();
  for (const auto& [name, steps] : stats.kernels) j.set(name, steps);
  return j;
}

}  // namespace minfer::cli
