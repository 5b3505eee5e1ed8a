// `minfer ops`: every registered op and the kernels that implement it.
#include <cstdio>

#include "minfer/registry.h"
#include "tools/commands.h"
#include "tools/format.h"
#include "tools/json.h"
#include "tools/model_loader.h"

namespace minfer::cli {

namespace {

const char* device_name(Device::Type t) { return t == Device::Type::CPU ? "cpu" : "cuda"; }

std::string dtypes_text(const KernelDef& k) {
  if (k.dtypes.empty()) return "any";
  std::string s;
  for (DType t : k.dtypes) {
    if (!s.empty()) s += ',';
    s += dtype_name(t);
  }
  return s;
}

}  // namespace

int cmd_ops(const Argv& argv) {
  ArgParser parser("ops", "[--plugin F]... [--json]",
                   "Lists every registered op (built in, or added by a plugin) with the kernels\n"
                   "that implement it per device and input dtype. Every op also has a plain\n"
                   "reference kernel, used where no fast kernel accepts a node.");
  add_plugin_option(parser);
  parser.flag("--json", "print one JSON object on stdout instead of text");
  const Args args = parser.parse(argv);
  if (args.help_requested()) {
    std::fputs(parser.help().c_str(), stdout);
    return 0;
  }
  load_plugins(args);
  const OpRegistry& reg = OpRegistry::global();
  const auto ops = reg.ops();

  if (args.has("--json")) {
    Json list = Json::array();
    for (const OpSchema* op : ops) {
      Json kernels = Json::array();
      for (const KernelDef* k : reg.kernels(op->domain, op->name)) {
        Json dtypes = Json::array();
        for (DType t : k->dtypes) dtypes.push(dtype_name(t));
        kernels.push(Json::object()
                         .set("device", device_name(k->device))
                         .set("dtypes", dtypes)
                         .set("name", k->name));
      }
      list.push(Json::object()
                    .set("name", op->name)
                    .set("domain", op->domain)
                    .set("doc", op->doc)
                    .set("inputs", Json::array_of(std::vector<int>{op->min_inputs, op->max_inputs}))
                    .set("kernels", kernels)
                    .set("reference", bool(op->reference)));
    }
    Json j = Json::object();
    j.set("count", ops.size());
    j.set("ops", list);
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }

  Table t({"op", "domain", "cpu kernels", "cuda kernels", "fallback"}, "lllll");
  size_t with_fast = 0;
  for (const OpSchema* op : ops) {
    std::string cpu, cuda;
    for (const KernelDef* k : reg.kernels(op->domain, op->name)) {
      std::string& s = k->device == Device::Type::CPU ? cpu : cuda;
      s += (s.empty() ? "" : ", ") + (k->name.empty() ? std::string("kernel") : k->name) + " [" +
           dtypes_text(*k) + "]";
    }
    with_fast += !cpu.empty() || !cuda.empty();
    t.add({op->name, op->domain.empty() ? "ai.onnx" : op->domain, cpu.empty() ? "-" : cpu,
           cuda.empty() ? "-" : cuda, op->reference ? "reference" : "-"});
  }
  std::fputs(t.str().c_str(), stdout);
  std::printf("\n%zu ops; %zu with a device kernel, all with a reference kernel\n", ops.size(),
              with_fast);
  return 0;
}

}  // namespace minfer::cli
