// `minfer`: the command line. Dispatches to one subcommand; turns errors into messages on
// stderr and exit codes (1: the command failed, 2: the command line was wrong).
#include <cstdio>
#include <exception>
#include <string>

#include "minfer/error.h"
#include "tools/args.h"
#include "tools/commands.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const minfer::cli::Argv&);
};

const Command kCommands[] = {
    {"run", "run a model on images or tensors and print the top classes", minfer::cli::cmd_run},
    {"eval", "measure top-1/top-5 accuracy on a folder of labelled images", minfer::cli::cmd_eval},
    {"bench", "measure latency and throughput", minfer::cli::cmd_bench},
    {"inspect", "show nodes, parameters, MACs and the memory plan of a model",
     minfer::cli::cmd_inspect},
    {"ops", "list the registered ops and their kernels", minfer::cli::cmd_ops},
    {"demo", "build ResNet-18 and CIFAR ResNet-20, run them everywhere, compare",
     minfer::cli::cmd_demo},
    {"export", "write a model, after the passes, as an ONNX file", minfer::cli::cmd_export},
    {"conformance", "run ONNX backend test cases; count pass/fail/unsupported",
     minfer::cli::cmd_conformance},
    {"quantize", "calibrate a model and write an int8 QDQ ONNX model", minfer::cli::cmd_quantize},
};

void print_usage(FILE* f) {
  std::fprintf(f,
               "usage: minfer <command> [options]\n\n"
               "minfer: a small, fast deep-learning inference runtime.\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(f, "  %-9s %s\n", c.name, c.summary);
  std::fprintf(f,
               "\n'minfer <command> --help' describes a command's options.\n"
               "Built-in models: resnet18 resnet34 resnet50 resnet101 resnet152\n"
               "                 cifar-resnet20 cifar-resnet32 cifar-resnet44 cifar-resnet56 "
               "cifar-resnet110\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    print_usage(stderr);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    print_usage(stdout);
    return 0;
  }
  const Command* command = nullptr;
  for (const Command& c : kCommands)
    if (name == c.name) command = &c;
  if (!command) {
    std::fprintf(stderr, "minfer: unknown command '%s'\n\n", name.c_str());
    print_usage(stderr);
    return 2;
  }
  minfer::cli::Argv rest(argv + 2, argv + argc);
  try {
    return command->run(rest);
  } catch (const minfer::cli::UsageError& e) {
    std::fprintf(stderr, "minfer %s: %s\n(see 'minfer %s --help')\n", command->name, e.what(),
                 command->name);
    return 2;
  } catch (const minfer::Error& e) {
    std::fprintf(stderr, "minfer %s: error: %s\n", command->name, e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minfer %s: unexpected error: %s\n", command->name, e.what());
    return 1;
  }
}
