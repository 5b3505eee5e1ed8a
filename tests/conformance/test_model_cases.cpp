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
  const std::set<std::string> ops_seen = check_cases_match(cases);
  for (const char* op : {"Resize", "LayerNormalization", "Mod", "Not", "ScatterND"}) {
    INFO(op);
    CHECK(ops_seen.count(op) == 1);
  }
}

TEST_CASE("conformance: torchvision-model op patterns survive minfer's ONNX export",
          "[conformance][python][models]") {
  const std::vector<std::string> cases =
      find_conformance_cases(generated_cases("make_model_cases.py").string());
  CHECK(check_cases_survive_export(cases, "model_cases_export") >= 60);
}
