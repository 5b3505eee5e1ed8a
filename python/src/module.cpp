// The _minfer extension module; python/minfer/__init__.py re-exports it.
#include "python/src/module.h"

#include "runtime/device_backend.h"

NB_MODULE(_minfer, m) {
  m.doc() = "minfer: a small, fast deep-learning inference runtime (C++ core).";
  minfer::py::register_errors(m);
  minfer::py::register_session(m);
  minfer::py::register_models(m);
  m.def(
      "cuda_available", [] { return minfer::device_available("cuda"); },
      "True when minfer was built with CUDA and a usable GPU is present.");
}
