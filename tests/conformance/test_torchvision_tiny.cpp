// The CI subset of the torchvision sweep: tiny-width exports of torchvision's EfficientNet,
// ConvNeXt, ViT, Swin, LR-ASPP (MobileNetV3 backbone) and a BERT-style encoder
// (tests/python/tiny_models, made by make_tiny_models.py) against ONNX Runtime's outputs
// (tiny_model_cases.py), at opt-level 0 and 2: |got - want| <= 1e-5 + 1e-4 * |want|.
#include <map>

#include "conformance_test_util.h"
#include "graph/pass.h"

using namespace minfer;
using namespace minfer::test;

TEST_CASE("conformance: tiny torchvision and BERT exports match ONNX Runtime",
          "[conformance][python][torchvision]") {
  const std::vector<std::string> cases =
      find_conformance_cases(generated_cases("tiny_model_cases.py").string());
  CHECK(cases.size() == 6);
  for (const std::string& dir : cases) {
    for (int level : {0, 2}) {
      const ConformanceOptions options = tight_options(level, 2);
      const CaseResult r = run_conformance_case(dir, options);
      INFO(r.name << " at opt-level " << level << ": " << r.reason);
      CHECK(r.status == CaseStatus::Pass);
    }
  }
}

TEST_CASE("torch's opset-13 transformer exports fuse into LayerNormalization and Gelu",
          "[conformance][python][torchvision][passes]") {
  for (const char* name : {"vit_op13", "bert_op13"}) {
    INFO(name);
    Graph g = load_onnx(std::string(MINFER_SOURCE_DIR) + "/tests/python/tiny_models/" + name +
                        ".onnx");
    g.infer_shapes();
    optimize(g, SessionOptions{});
    std::map<std::string, int> ops;
    int gelu_epilogues = 0;
    for (const Node* n : g.nodes()) {
      ops[n->op_type]++;
      gelu_epilogues +=
          n->op_type == "FusedMatMul" && n->attrs.get_string("activation", "") == "Gelu";
    }
    // Two encoder layers, two LayerNorms each, plus the final (ViT) or embedding (BERT) one;
    // each MLP's Gelu recognized, then applied in its first Linear layer's epilogue.
    CHECK(ops["LayerNormalization"] == 5);
    CHECK(gelu_epilogues == 2);
    CHECK(ops.count("Gelu") == 0);
    CHECK(ops.count("Erf") == 0);
    CHECK(ops.count("ReduceMean") == 0);
    CHECK(ops.count("Sqrt") == 0);
  }
}
