// Calibration's streaming runs: a Session whose plans hand each graph output to an observer
// the moment it is computed, instead of keeping them all alive and copying them out. The
// Calibrator makes every activation an output; this keeps its memory that of one run.
#pragma once

#include <functional>
#include <string>

#include "minfer/session.h"

namespace minfer {

// Switches `session` (CPU, no run yet) to observing plans.
void observe_outputs(Session& session);
// One run: observe(output name, value) for each graph output, in the order they are computed;
// the value is valid only during the call.
void run_observing(const Session& session, const NamedTensors& inputs,
                   const std::function<void(const std::string&, const Tensor&)>& observe);

}  // namespace minfer
