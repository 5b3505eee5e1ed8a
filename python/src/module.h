// Shared declarations of the minfer Python extension (_minfer).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <string>

#include "minfer/minfer.h"

namespace nb = nanobind;

namespace minfer::py {

// The arrays the extension takes: any dtype, strides and device, read only (checked by us, so
// that a wrong one gets minfer's message rather than a silent copy).
using InArray = nb::ndarray<nb::ro>;
// The arrays Session.run_into writes: the same, but writable.
using OutArray = nb::ndarray<>;

// A zero-copy view of `a` (C-contiguous, CPU or CUDA memory). `name` is for messages.
Tensor tensor_view(const InArray& a, const std::string& name);
Tensor tensor_view(const OutArray& a, const std::string& name);
// A NumPy array that owns `t` (a CPU tensor): no copy.
nb::object to_numpy(Tensor t);
// A Graph from a built-in model name or an ONNX file path.
Graph load_model(const std::string& model, const std::string& weights);
// "cpu", "cuda", "cuda:N".
Device parse_device(const std::string& device);

void register_errors(nb::module_& m);
void register_session(nb::module_& m);
void register_models(nb::module_& m);

}  // namespace minfer::py
