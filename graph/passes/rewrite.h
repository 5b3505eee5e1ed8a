// Small helpers shared by the rewrite passes.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "minfer/graph.h"

namespace minfer::rewrite {

// The node that is the only user of `v`, or null if `v` has other users or is a graph
// output (then fusing it away would change what someone observes).
Node* sole_user(const Value* v);
bool is_op(const Node* n, const char* op_type, const char* domain = "");
const Tensor* constant_of(const Value* v);  // null unless `v` is a constant
// Replaces the chain `old_nodes` (in order; the last one's output 0 is the chain's result)
// by `replacement`, which must already consume the chain's inputs: uses of the result move to
// the replacement's output 0, which takes over the result's name; the old nodes are removed.
// Removed nodes are added to `removed`, so that a pass walking an earlier topological order
// can skip them.
void replace_chain(Graph& g, const std::vector<Node*>& old_nodes, Node* replacement,
                   std::set<const Node*>& removed);
// Removes the pass-through node `n` (its output 0 equal to its input 0; its other outputs
// unused), its readers reading that input instead. False, and nothing changed, where the
// output is a graph output whose name the input cannot take (a graph input or output, or a
// constant).
bool bypass(Graph& g, Node* n);
// Makes `replacement` (a converted copy of the graph output `out`) the graph output in its
// place, under out's name; `out` keeps its producer and readers, renamed with `suffix`.
void substitute_graph_output(Graph& g, Value* out, Value* replacement, const std::string& suffix);

}  // namespace minfer::rewrite
