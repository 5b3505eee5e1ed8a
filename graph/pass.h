// Passes: named graph rewrites, run in order by the PassManager.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "minfer/graph.h"
#include "minfer/session.h"

namespace minfer {

// What a pass did, by node name, for `minfer inspect --passes` and verbose logs.
struct PassLog {
  std::vector<std::string> changes;
  void note(std::string change) { changes.push_back(std::move(change)); }
};

struct Pass {
  std::string name;
  int level = 1;  // the lowest optimization level that runs it
  // Rewrites the graph, noting each change; returns true if it changed anything.
  std::function<bool(Graph&, PassLog&)> run;
  // Runs only for the sessions this accepts (null: every session), e.g. precision fp16.
  std::function<bool(const SessionOptions&)> when;
};

struct PassReport {
  std::string name;
  bool changed = false;
  size_t nodes_before = 0, nodes_after = 0;
  double milliseconds = 0;
  std::vector<std::string> changes;
};

class PassManager {
 public:
  explicit PassManager(std::vector<Pass> passes) : passes_(std::move(passes)) {}
  // Runs the passes whose level <= opt_level and that are not disabled; verify() after each
  // when `verify_each` (debug builds and tests). Logs each pass on stderr when verbose.
  std::vector<PassReport> run(Graph& g, const SessionOptions& options, bool verify_each) const;
  const std::vector<Pass>& passes() const { return passes_; }

 private:
  std::vector<Pass> passes_;
};

// The default pipeline (graph/passes/pipeline.cpp).
const PassManager& default_pipeline();
// Optimizes `g` in place with the default pipeline for the session options.
std::vector<PassReport> optimize(Graph& g, const SessionOptions& options);

}  // namespace minfer
