// Runs the `minfer` command line as a separate process, for the CLI tests.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "test_util.h"

namespace minfer::test {

struct CliResult {
  int code = -1;    // exit status, -1 if the process did not exit normally
  std::string out;  // stdout
  std::string err;  // stderr
};

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// `s` in single quotes for /bin/sh (paths here never contain a quote).
inline std::string shell_quote(const std::string& s) { return "'" + s + "'"; }

// Runs `minfer ARGS` (ARGS already quoted where needed) with stdout and stderr captured;
// with `merge_stderr` both go to `out`, interleaved as a terminal would show them.
inline CliResult cli(const std::string& args, bool merge_stderr = false) {
  static int calls = 0;
  const auto dir = temp_dir("cli_" + std::to_string(calls++));
  const std::string cmd =
      shell_quote(MINFER_CLI_PATH) + " " + args + " >" + shell_quote((dir / "out").string()) +
      (merge_stderr ? std::string(" 2>&1") : " 2>" + shell_quote((dir / "err").string()));
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(dir / "out"),
          read_text(dir / "err")};
}

}  // namespace minfer::test
