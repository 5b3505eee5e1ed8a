// minfer.Error: the Python face of minfer::Error, carrying its code as `.code`.
#include "python/src/module.h"

namespace minfer::py {

namespace {
PyObject* error_type = nullptr;  // created once at import, lives as long as the module

// The enum's own spelling, as in C++ (ErrorCode::InvalidArgument) and the README.
const char* code_name(ErrorCode c) {
  switch (c) {
    case ErrorCode::InvalidArgument:
      return "InvalidArgument";
    case ErrorCode::InvalidModel:
      return "InvalidModel";
    case ErrorCode::Unsupported:
      return "Unsupported";
    case ErrorCode::OutOfMemory:
      return "OutOfMemory";
    case ErrorCode::Device:
      return "Device";
    case ErrorCode::Internal:
      return "Internal";
  }
  return "Internal";
}
}  // namespace

void register_errors(nb::module_& m) {
  error_type = PyErr_NewExceptionWithDoc(
      "minfer.Error",
      "An error from minfer. `code` names its kind (InvalidArgument, InvalidModel, "
      "Unsupported, OutOfMemory, Device, Internal); `message` says what went wrong, naming "
      "the file, node, input or op.",
      PyExc_RuntimeError, nullptr);
  m.attr("Error") = nb::borrow(error_type);
  // Every minfer::Error that crosses into Python becomes a minfer.Error with its code.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const minfer::Error& e) {
      nb::object type = nb::borrow(error_type);
      nb::object exc = type(e.what());
      nb::setattr(exc, "code", nb::str(code_name(e.code())));
      nb::setattr(exc, "message", nb::str(e.what()));
      PyErr_SetObject(error_type, exc.ptr());
    }
  });
}

}  // namespace minfer::py
