// Helpers for the [io] tests: byte files, expected errors, and the python3 oracle scripts.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace minfer::test {

inline void write_bytes(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

inline std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  REQUIRE(in.good());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `fn`, requires it to throw minfer::Error with `code` and a message containing every
// string in `parts`.
template <typename Fn>
void require_error(Fn&& fn, ErrorCode code, const std::vector<std::string>& parts) {
  try {
    fn();
  } catch (const Error& e) {
    std::string msg = e.what();
    INFO("message: " << msg);
    CHECK(error_code_name(e.code()) == std::string(error_code_name(code)));
    for (const auto& p : parts) CHECK(msg.find(p) != std::string::npos);
    return;
  }
  FAIL("expected minfer::Error(" << error_code_name(code) << "), nothing was thrown");
}

inline bool tensors_equal(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
}

// Runs tests/python/<script> with python3 and returns its exit status. The scripts are test
// oracles only; when python3, numpy or onnx is missing the test fails saying what to install
// (the scripts exit with status 3 when an import fails).
inline int run_python(const std::string& script, const std::string& args) {
  std::string cmd =
      "python3 '" + std::string(MINFER_SOURCE_DIR) + "/tests/python/" + script + "' " + args;
  int rc = std::system(cmd.c_str());
  int status = rc == -1 ? -1 : WEXITSTATUS(rc);
  INFO(
      "this test runs python3 with numpy and onnx as its oracle: install them, e.g. "
      "apt install python3 python3-numpy && pip install onnx");
  REQUIRE(status != 127);  // the shell found no python3
  REQUIRE(status != 3);    // python3 could not import numpy or onnx
  return status;
}

}  // namespace minfer::test
