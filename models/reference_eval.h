// A deliberately naive evaluator: runs a graph by calling each node's OpSchema::reference in
// topological order. No passes, no planner, no fast kernels: the oracle that `minfer demo`
// and the tests compare Sessions against.
#pragma once

#include "minfer/graph.h"
#include "minfer/session.h"

namespace minfer {

// Evaluates `g` (unoptimized is fine) on `inputs`, given by graph input name; returns every
// graph output by name. Throws InvalidArgument for a missing input, and whatever the
// reference kernels throw for bad shapes.
NamedTensors reference_eval(const Graph& g, const NamedTensors& inputs);

}  // namespace minfer
