// Static facts about a graph for `minfer inspect`: parameters and MACs per node, op counts,
// and a graphviz rendering.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "minfer/graph.h"

namespace minfer::cli {

struct NodeStats {
  const Node* node = nullptr;
  int64_t params = 0;  // elements of the node's constant inputs (weights), shape params excluded
  int64_t macs = 0;    // multiply-accumulates at batch 1 (Conv, Gemm, MatMul families)
};

struct GraphStats {
  std::vector<NodeStats> nodes;  // topological order
  std::map<std::string, int> op_histogram;
  int64_t params = 0;  // each constant counted once
  int64_t param_bytes = 0;
  int64_t macs = 0;
};

GraphStats graph_stats(const Graph& g);

// Graphviz DOT: ops as boxes (name, op, output shape), graph inputs/outputs as ellipses;
// constants are folded into the label of the node that uses them.
std::string to_dot(const Graph& g);

}  // namespace minfer::cli
