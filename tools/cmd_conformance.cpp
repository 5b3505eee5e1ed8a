// `minfer conformance`: runs ONNX backend test cases and counts pass / fail / unsupported.
#include <cstdio>
#include <map>
#include <set>

#include "runtime/conformance.h"
#include "tools/commands.h"
#include "tools/format.h"
#include "tools/json.h"
#include "tools/model_loader.h"

namespace minfer::cli {

namespace {

ArgParser make_parser() {
  ArgParser p("conformance", "DIR... [--filter S] [--json] [options]",
              "Runs ONNX backend test cases: each DIR is a case (a folder with model.onnx and\n"
              "test_data_set_*/input_K.pb, output_K.pb) or a folder of cases. Each case is\n"
              "loaded, optimized and run by a Session and its outputs are compared with\n"
              "ONNX's rule (same dtype and shape; floats within atol + rtol*|expected|,\n"
              "other types exactly). A case minfer declines with an 'unsupported' error\n"
              "(an op or element type it does not have) counts as unsupported, any other\n"
              "error or a wrong output as a failure. Exit code 1 when any case fails.");
  p.positional("DIR", "a test case folder or a folder of them (several may be given)");
  p.option("--filter", "S", "only the cases whose name contains S");
  p.option("--rtol", "F", "relative tolerance (default 1e-3, ONNX's)");
  p.option("--atol", "F", "absolute tolerance (default 1e-7, ONNX's)");
  p.option("--threads", "N", "CPU threads (default 0 = all cores)");
  p.option("--opt-level", "N", "graph optimization level 0..3 (default 2)");
  add_plugin_option(p);
  p.flag("--quiet", "print only the failures and the summary");
  p.flag("--json", "print one JSON object on stdout instead of text");
  p.epilog("example:\n  minfer conformance ../shared/data/onnx-node-tests --filter conv");
  return p;
}

// ArgParser takes a fixed number of positionals: the DIRs after the first are taken out here
// (an argument that is neither an option nor an option's value).
Argv split_dirs(const Argv& argv, std::vector<std::string>& more_dirs) {
  const std::set<std::string> with_value{"--filter",  "--rtol",      "--atol",
                                         "--threads", "--opt-level", "--plugin"};
  Argv rest;
  bool have_dir = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.size() > 1 && a[0] == '-') {
      rest.push_back(a);
      if (with_value.count(a) && i + 1 < argv.size()) rest.push_back(argv[++i]);
    } else if (have_dir) {
      more_dirs.push_back(a);
    } else {
      rest.push_back(a);
      have_dir = true;
    }
  }
  return rest;
}

}  // namespace

int cmd_conformance(const Argv& argv) {
  const ArgParser parser = make_parser();
  std::vector<std::string> dirs;
  const Args args = parser.parse(split_dirs(argv, dirs));
  if (args.help_requested()) {
    std::fputs(parser.help().c_str(), stdout);
    return 0;
  }
  load_plugins(args);
  ConformanceOptions options;
  options.rtol = args.get_double("--rtol", options.rtol);
  options.atol = args.get_double("--atol", options.atol);
  options.session.threads = static_cast<int>(args.get_int("--threads", 0, 0, 1024));
  options.session.optimization_level = static_cast<int>(args.get_int("--opt-level", 2, 0, 3));
  const std::string filter = args.get("--filter");
  const bool json = args.has("--json"), quiet = args.has("--quiet");

  dirs.insert(dirs.begin(), args.positional(0));
  std::vector<std::string> cases;
  for (const std::string& dir : dirs)
    for (std::string& c : find_conformance_cases(dir))
      if (filter.empty() || base_name(c).find(filter) != std::string::npos)
        cases.push_back(std::move(c));
  check(!cases.empty(), ErrorCode::InvalidArgument,
        "no test case matches --filter '" + filter + "'");

  std::map<CaseStatus, int> counts;
  Json list = Json::array();
  const double t0 = now_ms();
  for (const std::string& dir : cases) {
    const CaseResult r = run_conformance_case(dir, options);
    ++counts[r.status];
    if (json) {
      list.push(Json::object()
                    .set("name", r.name)
                    .set("status", case_status_name(r.status))
                    .set("reason", r.reason)
                    .set("max_abs_error", r.max_abs_error)
                    .set("max_violation", r.max_violation)
                    .set("seconds", r.seconds));
    } else if (!quiet || r.status == CaseStatus::Fail) {
      std::printf("%-11s %s", case_status_name(r.status), r.name.c_str());
      if (!r.reason.empty()) std::printf("\n            %s", r.reason.c_str());
      std::printf("\n");
    }
  }
  const int pass = counts[CaseStatus::Pass], fail = counts[CaseStatus::Fail],
            unsupported = counts[CaseStatus::Unsupported];
  if (json) {
    Json j = Json::object();
    j.set("cases", cases.size());
    j.set("pass", pass);
    j.set("fail", fail);
    j.set("unsupported", unsupported);
    j.set("rtol", options.rtol);
    j.set("atol", options.atol);
    j.set("results", list);
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("\n%zu cases: %d pass, %d fail, %d unsupported (%s)\n", cases.size(), pass, fail,
                unsupported, format_ms(now_ms() - t0).c_str());
  }
  return fail ? 1 : 0;
}

}  // namespace minfer::cli
