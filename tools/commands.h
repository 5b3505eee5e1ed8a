// The subcommands of `minfer`. Each takes the arguments after its name and returns the exit
// code; minfer::Error and UsageError propagate to main(), which prints them.
#pragma once

#include <string>
#include <vector>

namespace minfer::cli {

using Argv = std::vector<std::string>;

int cmd_run(const Argv& argv);
int cmd_eval(const Argv& argv);
int cmd_bench(const Argv& argv);
int cmd_inspect(const Argv& argv);
int cmd_ops(const Argv& argv);
int cmd_demo(const Argv& argv);
int cmd_export(const Argv& argv);
int cmd_conformance(const Argv& argv);
int cmd_quantize(const Argv& argv);  // tools/cmd_quantize.cpp (int8)

}  // namespace minfer::cli
