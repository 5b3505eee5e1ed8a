// `minfer inspect --passes`, `--dot-optimized`, `--disable-pass` and `minfer export`.
#include <fstream>
#include <sstream>

#include "cli_test_util.h"
#include "runtime/json.h"

using namespace minfer;
using minfer::test::cli;
using minfer::test::CliResult;

TEST_CASE("cli: inspect --passes reports each pass by name", "[cli][passes]") {
  const auto dir = test::temp_dir("cli_passes_dot");
  const std::string before = (dir / "before.dot").string(), after = (dir / "after.dot").string();
  CliResult r = cli("inspect cifar-resnet20 --passes --json --dot '" + before +
                    "' --dot-optimized '" + after + "'");
  INFO(r.err);
  REQUIRE(r.code == 0);
  json::Value j = json::parse(r.out);
  const json::Value* passes = j.find("passes");
  REQUIRE(passes);
  bool bn_folded = false;
  for (const auto& p : passes->array) {
    if (p.find("name")->string != "batchnorm-folding") continue;
    bn_folded = p.find("nodes_before")->integer > p.find("nodes_after")->integer &&
                p.find("changes")->array.size() == 19;  // every BN of ResNet-20
  }
  REQUIRE(bn_folded);
  std::stringstream b, a;
  b << std::ifstream(before).rdbuf();
  a << std::ifstream(after).rdbuf();
  REQUIRE(b.str().find("BatchNormalization") != std::string::npos);
  REQUIRE(a.str().find("BatchNormalization") == std::string::npos);
  REQUIRE(a.str().find("FusedConv") != std::string::npos);
}

TEST_CASE("cli: --disable-pass keeps that pass from running", "[cli][passes]") {
  CliResult r = cli("inspect cifar-resnet20 --json --disable-pass batchnorm-folding");
  REQUIRE(r.code == 0);
  json::Value j = json::parse(r.out);
  REQUIRE(j.find("op_histogram")->find("BatchNormalization") != nullptr);
  CliResult bad = cli("inspect cifar-resnet20 --disable-pass no-such-pass");
  REQUIRE(bad.code == 1);
  REQUIRE(bad.err.find("no-such-pass") != std::string::npos);
}

TEST_CASE("cli: export writes an ONNX file minfer and onnx.checker accept", "[cli][passes][python]") {
  const auto dir = test::temp_dir("cli_export");
  for (const char* level : {"0", "2"}) {
    const std::string path = (dir / (std::string("m") + level + ".onnx")).string();
    CliResult r = cli(std::string("export cifar-resnet20 --opt-level ") + level + " -o '" + path +
                      "'");
    INFO(r.err);
    REQUIRE(r.code == 0);
    Graph g = load_onnx(path);
    size_t fused = 0;
    for (const Node* n : g.nodes()) fused += n->op_type == "FusedConv";
    REQUIRE((fused > 0) == (std::string(level) == "2"));
    const std::string check = "python3 '" MINFER_SOURCE_DIR "/tests/python/check_onnx.py' '" +
                              path + "' >/dev/null 2>&1";
    if (std::string(level) == "0") REQUIRE(std::system(check.c_str()) == 0);
  }
  CliResult missing = cli("export cifar-resnet20");
  REQUIRE(missing.code == 2);
}

TEST_CASE("cli: run executes a com.minfer:MaxSumDiv3 ONNX model on an .npy input",
          "[cli][max_sum_div3]") {
  const auto dir = test::temp_dir("cli_msd3");
  Graph g;
  GraphBuilder b(g);
  b.output(b.op("MaxSumDiv3", "msd3", {b.input("X", DType::i32, Shape{2, 5})}, {}, kMinferDomain));
  save_onnx(g, (dir / "msd3.onnx").string());
  // Brute force over all subsets: row 0 takes 3+6+1+8 = 18; row 1 takes 2+7 = 9.
  save_npy(Tensor::from_vector<int32_t>({3, 6, 1, 8, -4, 4, -5, 2, 7, 0}, Shape{2, 5}),
           (dir / "x.npy").string());
  CliResult r = cli("run '" + (dir / "msd3.onnx").string() + "' --input X='" +
                    (dir / "x.npy").string() + "' --save-outputs '" + (dir / "out").string() + "'");
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  Tensor y = load_npy((dir / "out" / "msd3.npy").string());
  REQUIRE(y.to_vector<int64_t>() == std::vector<int64_t>{18, 9});
}
