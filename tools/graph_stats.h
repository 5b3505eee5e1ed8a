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
  int64_t macs = 0;    // multiply-accumulates at `GraphStats::batch` (Conv, Gemm, MatMul)
};

// Shapes are the graph's, with each symbolic dim taken as 1: a model whose batch is symbolic
// is measured at batch 1, one whose batch is pinned (say by --shape) at that batch.
struct GraphStats {
  std::vector<NodeStats> nodes;  // topological order
  // The batch the figures are for: the leading dim shared by all (non-constant) graph inputs,
  // symbolic taken as 1; 0 when the inputs have no common leading dim (or no dims).
  int64_t batch = 0;
  std::map<std::string, int> op_histogram;
  int64_t params = 0;  // each constant counted once
  int64_t param_bytes = 0;
  int64_t macs = 0;
};

GraphStats graph_stats(const Graph& g);

// "at batch 4", or "at the input shapes" when `batch` is 0 (no common batch dim).
std::string batch_label(int64_t batch);

// Graphviz DOT: ops as boxes (name, op, output shape), graph inputs/outputs as ellipses;
// constants are folded into the label of the node that uses them.
std::string to_dot(const Graph& g);

}  // namespace minfer::cli
