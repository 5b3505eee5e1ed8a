// minfer::Error: the one exception type the library throws.
#pragma once

#include <stdexcept>
#include <string>

namespace minfer {

enum class ErrorCode {
  InvalidArgument,  // the caller passed something wrong (shape, dtype, name, option)
  InvalidModel,     // a model file or graph is malformed
  Unsupported,      // valid, but minfer has no implementation for it
  OutOfMemory,      // an allocation failed or would exceed a limit
  Device,           // a device (CUDA) call failed or no device is available
  Internal,         // a bug in minfer: an invariant did not hold
};

const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

// Throws Error(code, message) when `condition` is false. For validation of caller/file input.
inline void check(bool condition, ErrorCode code, const std::string& message) {
  if (!condition) throw Error(code, message);
}

}  // namespace minfer
