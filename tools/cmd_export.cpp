// `minfer export`: write a model, after the optimization passes, as an ONNX file (custom
// com.minfer nodes included), to open in Netron or run elsewhere.
#include <cstdio>

#include "graph/pass.h"
#include "minfer/onnx.h"
#include "tools/commands.h"
#include "tools/model_loader.h"

namespace minfer::cli {

int cmd_export(const Argv& argv) {
  ArgParser p("export", "MODEL -o OUT.onnx [--opt-level N] [options]",
              "Writes MODEL as ONNX after the passes of --opt-level. With --opt-level 0 the file\n"
              "holds only standard ONNX ops (ONNX Runtime runs it); higher levels add minfer's\n"
              "fused com.minfer ops.");
  add_model_options(p);
  add_session_options(p);
  p.option("--output", "F", "the ONNX file to write (required; -o F also works)");
  Argv renamed = argv;
  for (auto& a : renamed)
    if (a == "-o") a = "--output";
  const Args args = p.parse(renamed);
  if (args.help_requested()) {
    std::fputs(p.help().c_str(), stdout);
    return 0;
  }
  if (!args.has("--output")) throw UsageError("-o OUT.onnx is required");
  const SessionOptions options = session_options(args);
  LoadedModel model = load_model(args);
  Graph& g = model.graph;
  g.infer_shapes();
  optimize(g, options);
  verify(g);
  save_onnx(g, args.get("--output"));
  std::fprintf(stderr, "wrote %s: %zu nodes (opt-level %d)\n", args.get("--output").c_str(),
               g.node_count(), options.optimization_level);
  return 0;
}

}  // namespace minfer::cli
