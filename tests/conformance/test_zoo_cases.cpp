// The model-zoo CNN patterns of tests/python/make_zoo_cases.py (LRN after Conv, Dropout before
// Gemm, Sum/Concat of branches, ConstantOfShape as shape or weight, one case per new op form)
// against ONNX Runtime's outputs, at opt-level 0 (the graph as loaded) and 2 (the default),
// with a tighter tolerance than the ONNX backend tests: |got - want| <= 1e-5 + 1e-4 * |want|.
#include "conformance_test_util.h"

using namespace minfer;
using namespace minfer::test;

TEST_CASE("conformance: model-zoo op patterns match ONNX Runtime", "[conformance][python][zoo]") {
  const std::vector<std::string> cases = find_conformance_cases(generated_zoo_cases().string());
  CHECK(cases.size() >= 75);
  std::set<std::string> ops_seen;
  for (const std::string& dir : cases) {
    for (int level : {0, 2}) {
      const ConformanceOptions options = tight_options(level, 2);
      const CaseResult r = run_conformance_case(dir, options);
      INFO(r.name << " at opt-level " << level << ": " << r.reason);
      CHECK(r.status == CaseStatus::Pass);
      CHECK(r.data_sets >= 1);
    }
    const Graph model = load_onnx(dir + "/model.onnx");  // named: nodes() views into it
    for (const Node* n : model.nodes()) ops_seen.insert(n->op_type);
  }
  // Every new op is exercised by at least one case.
  for (const char* op : {"ConstantOfShape", "Range", "Dropout", "LRN", "Sum", "Mean", "Sqrt", "Tanh",
                         "Erf", "HardSigmoid", "HardSwish", "Gelu", "Pow", "Squeeze", "Split",
                         "Expand", "Tile"}) {
    INFO(op);
    CHECK(ops_seen.count(op) == 1);
  }
}

TEST_CASE("conformance: model-zoo op patterns survive minfer's ONNX export",
          "[conformance][python][zoo]") {
  // Each case's model, loaded and written back by minfer (as `minfer export --opt-level 0`
  // does), must still give ONNX Runtime's outputs.
  const std::filesystem::path out = temp_dir("zoo_export");
  int checked = 0;
  for (const std::string& dir : find_conformance_cases(generated_zoo_cases().string())) {
    const std::filesystem::path copy = out / std::filesystem::path(dir).filename();
    std::filesystem::copy(dir, copy, std::filesystem::copy_options::recursive);
    save_onnx(load_onnx(dir + "/model.onnx"), (copy / "model.onnx").string());
    const ConformanceOptions options = tight_options(0);
    const CaseResult r = run_conformance_case(copy.string(), options);
    INFO(r.name << ": " << r.reason);
    CHECK(r.status == CaseStatus::Pass);
    ++checked;
  }
  CHECK(checked >= 75);
}
