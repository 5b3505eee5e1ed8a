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
  const std::set<std::string> ops_seen = check_cases_match(cases);
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
  const std::vector<std::string> cases = find_conformance_cases(generated_zoo_cases().string());
  CHECK(check_cases_survive_export(cases, "zoo_export") >= 75);
}
