#include "graph/pass.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "minfer/error.h"

namespace minfer {

std::vector<PassReport> PassManager::run(Graph& g, const SessionOptions& options,
                                         bool verify_each) const {
  for (const auto& name : options.disabled_passes) {
    bool known = std::any_of(passes_.begin(), passes_.end(),
                             [&](const Pass& p) { return p.name == name; });
    check(known, ErrorCode::InvalidArgument, "--disable-pass: no pass is named '" + name + "'");
  }
  std::vector<PassReport> reports;
  for (const Pass& pass : passes_) {
    if (pass.level > options.optimization_level) continue;
    if (pass.when && !pass.when(options)) continue;
    if (std::find(options.disabled_passes.begin(), options.disabled_passes.end(), pass.name) !=
        options.disabled_passes.end())
      continue;
    PassReport r;
    r.name = pass.name;
    r.nodes_before = g.node_count();
    auto t0 = std::chrono::steady_clock::now();
    PassLog log;
    r.changed = pass.run(g, log);
    r.changes = std::move(log.changes);
    r.milliseconds =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    r.nodes_after = g.node_count();
    if (verify_each) verify(g);
    if (options.verbose)
      std::fprintf(stderr, "[minfer] pass %-24s %s  nodes %zu -> %zu  %.2f ms\n", r.name.c_str(),
                   r.changed ? "changed" : "-      ", r.nodes_before, r.nodes_after,
                   r.milliseconds);
    if (options.verbose)
      for (const auto& c : r.changes) std::fprintf(stderr, "[minfer]   %s\n", c.c_str());
    reports.push_back(r);
  }
  return reports;
}

}  // namespace minfer
