// Shared by the [conformance] tests: the generated opset cases (made once per test run) and
// running the `minfer` command line.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <set>

#include "runtime/conformance.h"
#include "runtime/io_test_util.h"

namespace minfer::test {

// The cases of tests/python/make_opset_cases.py, written on first use into a temp folder.
inline std::filesystem::path generated_opset_cases() {
  static std::filesystem::path dir;
  if (dir.empty()) {
    // Per process: ctest runs test cases in parallel processes.
    std::filesystem::path d = temp_dir("opset_cases_" + std::to_string(getpid()));
    REQUIRE(run_python("make_opset_cases.py", std::string("'") + d.string() + "' >/dev/null") == 0);
    dir = d;
  }
  return dir;
}

struct CliResult {
  int code = -1;
  std::string out;  // stdout and stderr together
};

// Runs `minfer ARGS`.
inline CliResult cli(const std::string& args) {
  static int calls = 0;
  const std::filesystem::path out =
      temp_dir("conformance_cli_" + std::to_string(getpid()) + "_" + std::to_string(calls++)) /
      "out";
  const std::string cmd =
      std::string("'") + MINFER_CLI_PATH + "' " + args + " >'" + out.string() + "' 2>&1";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_bytes(out)};
}

}  // namespace minfer::test
