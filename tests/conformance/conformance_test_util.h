// Shared by the [conformance] tests: the generated opset cases (made once per test run) and
// running the `minfer` command line.
#pragma once

#include <unistd.h>

#include <set>

#include "cli_test_util.h"
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

// Runs `minfer ARGS` with stdout and stderr together in `out`.
inline CliResult cli_merged(const std::string& args) { return cli(args, /*merge_stderr=*/true); }

}  // namespace minfer::test
