// The op patterns of the torchvision sweep's models (tests/python/make_model_cases.py: Resize in
// every mode, LayerNormalization, LayerNorm and Gelu in their decomposed export forms) against
// ONNX Runtime's outputs at opt-level 0 and 2: |got - want| <= 1e-5 + 1e-4 * |want|.
#include "conformance_test_util.h"

using namespace minfer;
using namespace minfer::test;

TEST_CASE("conformance: torchvision-model op patterns match ONNX Runtime",
          "[conformance][python][models]") {
  const std::vector<std::string> cases =
      find_conformance_cases(generated_cases("make_model_cases.py").string());
  CHECK(cases.size() >= 60);
  std::set<std::string> ops_seen;
  for (const std::string& dir : cases) {
    for (int level : {0, 2}) {
      const ConformanceOptions options = tight_options(level, 2);
      const CaseResult r = run_conformance_case(dir, options);
      INFO(r.name << " at opt-level " << level << ": " << r.reason);
      CHECK(r.status == CaseStatus::Pass);
    }
    const Graph g = load_onnx(dir + "/model.onnx");  // kept alive while its nodes are read
    for (const Node* n : g.nodes()) ops_seen.insert(n->op_type);
  }
  for (const char* op : {"Resize", "LayerNormalization", "Mod", "Not", "ScatterND"}) {
    INFO(op);
    CHECK(ops_seen.count(op) == 1);
  }
}

TEST_CASE("conformance: torchvision-model op patterns survive minfer's ONNX export",
          "[conformance][python][models]") {
  const std::filesystem::path out = temp_dir("model_cases_export");
  int checked = 0;
  for (const std::string& dir :
       find_conformance_cases(generated_cases("make_model_cases.py").string())) {
    const std::filesystem::path copy = out / std::filesystem::path(dir).filename();
    std::filesystem::copy(dir, copy, std::filesystem::copy_options::recursive);
    save_onnx(load_onnx(dir + "/model.onnx"), (copy / "model.onnx").string());
    const ConformanceOptions options = tight_options(0);
    const CaseResult r = run_conformance_case(copy.string(), options);
    INFO(r.name << ": " << r.reason);
    CHECK(r.status == CaseStatus::Pass);
    ++checked;
  }
  CHECK(checked >= 60);
}
