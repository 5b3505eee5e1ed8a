// A model with ops minfer does not have is refused with one error that lists every such op and
// the nodes using it, and `minfer inspect` lists them without running the model. Also the
// Dropout forms of the model-zoo files: the dropout-elimination pass, and the mask before
// opset 12.
#include "conformance_test_util.h"
#include "graph/pass.h"
#include "runtime/onnx_test_models.h"

using namespace minfer;
using namespace minfer::test;
namespace fs = std::filesystem;
using TP = onnx::TensorProto;

namespace {

// Relu, then three nodes of two unknown ops (one in a custom domain), then Relu.
std::string unknown_ops_model() {
  OnnxModel m;
  m.input("x", TP::FLOAT, {"2", "3"});
  m.node("Relu", "relu", {"x"}, {"a"});
  m.node("Frobnicate", "frob1", {"a"}, {"b"});
  m.node("Frobnicate", "frob2", {"b"}, {"c"});
  m.node("Twiddle", "twiddle", {"c"}, {"d"}, "com.example");
  m.node("Relu", "relu2", {"d"}, {"y"});
  m.output("y");
  auto* op = m.m.add_opset_import();
  op->set_domain("com.example");
  op->set_version(1);
  const fs::path p = temp_dir("unsupported_ops") / "unknown_ops.onnx";
  write_bytes(p, m.bytes());
  return p.string();
}

}  // namespace

TEST_CASE("unsupported ops: one error lists every unknown op and its nodes",
          "[conformance][errors]") {
  const std::string path = unknown_ops_model();
  try {
    Session::from_file(path);
    FAIL("no error");
  } catch (const Error& e) {
    const std::string m = e.what();
    INFO(m);
    CHECK(e.code() == ErrorCode::Unsupported);
    CHECK_THAT(m, Catch::Contains("2 ops") && Catch::Contains("3 nodes") &&
                      Catch::Contains("unknown op 'Frobnicate' (domain 'ai.onnx')") &&
                      Catch::Contains("node 'frob1', node 'frob2'") &&
                      Catch::Contains("unknown op 'Twiddle' (domain 'com.example')") &&
                      Catch::Contains("node 'twiddle'") && Catch::Contains("--plugin"));
  }
  // The same from the graph functions the session uses.
  Graph g = load_onnx(path);
  CHECK(unsupported_nodes(g).size() == 3);
  REQUIRE_THROWS_AS(check_ops_known(g), Error);
  REQUIRE_THROWS_WITH(verify(g), Catch::Contains("Twiddle") && Catch::Contains("Frobnicate"));
}

TEST_CASE("unsupported ops: a long list names a few nodes per op", "[conformance][errors]") {
  Graph g;
  Value* v = g.add_input("x", DType::f32, Shape{2});
  for (int i = 0; i < 8; ++i) v = g.add_node("Frobnicate", "f" + std::to_string(i), {v})->outputs[0];
  g.add_output(v);
  REQUIRE_THROWS_WITH(g.infer_shapes(), Catch::Contains("node 'f4' and 3 more") &&
                                            !Catch::Contains("'f5'") &&
                                            Catch::Contains("1 op that"));
}

TEST_CASE("unsupported ops: minfer inspect lists them without running", "[conformance][cli]") {
  const std::string path = unknown_ops_model();
  const CliResult text = cli("inspect " + shell_quote(path));
  INFO(text.out << text.err);
  CHECK(text.code == 0);
  CHECK_THAT(text.out, Catch::Contains("cannot run") && Catch::Contains("Frobnicate") &&
                           Catch::Contains("frob1, frob2") &&
                           Catch::Contains("com.example:Twiddle") && Catch::Contains("twiddle"));
  const CliResult json = cli("inspect --json " + shell_quote(path));
  CHECK(json.code == 0);
  CHECK_THAT(json.out, Catch::Contains("\"runnable\": false") &&
                           Catch::Contains("\"unsupported_ops\"") &&
                           Catch::Contains("\"com.example:Twiddle\""));
  // `run` refuses with the whole list on stderr.
  const fs::path x = fs::path(path).parent_path() / "x.npy";
  save_npy(Tensor(DType::f32, Shape{2, 3}), x.string());
  const CliResult run = cli("run " + shell_quote(path) + " --input x=" + shell_quote(x.string()));
  CHECK(run.code != 0);
  CHECK_THAT(run.err, Catch::Contains("frob2") && Catch::Contains("Twiddle"));
}

TEST_CASE("dropout-elimination removes inference Dropout whose mask nobody reads",
          "[conformance][passes]") {
  auto make = [](bool read_mask, bool runtime_training) {
    OnnxModel m(13);
    m.input("x", TP::FLOAT, {"2", "3"});
    std::vector<std::string> ins{"x"};
    if (runtime_training) {
      m.input("t", TP::BOOL, {});
      ins = {"x", "", "t"};
    }
    m.node("Dropout", "drop", ins, {"d", read_mask ? "mask" : ""});
    m.node("Relu", "relu", {"d"}, {"y"});
    m.output("y");
    if (read_mask) m.output("mask", TP::BOOL);
    return m.parse();
  };
  SessionOptions o1;
  o1.optimization_level = 1;
  {
    Graph g = make(false, false);
    g.infer_shapes();
    const auto reports = optimize(g, o1);
    CHECK(op_histogram(g).count("Dropout") == 0);
    bool noted = false;
    for (const PassReport& r : reports)
      noted |= r.name == "dropout-elimination" && r.changed;
    CHECK(noted);
  }
  for (bool runtime_training : {false, true}) {
    // A read mask, or a training_mode known only at run time, keeps the node.
    Graph g = make(!runtime_training, runtime_training);
    g.infer_shapes();
    optimize(g, o1);
    CHECK(op_histogram(g).count("Dropout") == 1);
  }
  // Kept nodes still run: the mask is all true, a true training_mode is refused.
  Session s(make(true, false), o1);
  const NamedTensors out = s.run({{"x", Tensor::from_vector<float>({-1, 2, -3, 4, 5, -6}, Shape{2, 3})}});
  CHECK(out.at("y").to_vector<float>() == std::vector<float>{0, 2, 0, 4, 5, 0});
  for (int64_t i = 0; i < 6; ++i) CHECK(out.at("mask").data<bool>()[i]);
  Session t(make(false, true), o1);
  Tensor yes(DType::boolean, Shape{});
  yes.data<bool>()[0] = true;
  Tensor no(DType::boolean, Shape{});
  const Tensor x = Tensor::from_vector<float>({-1, 2, -3, 4, 5, -6}, Shape{2, 3});
  CHECK(t.run({{"x", x}, {"t", no}}).at("y").to_vector<float>() ==
        std::vector<float>{0, 2, 0, 4, 5, 0});
  REQUIRE_THROWS_WITH(t.run({{"x", x}, {"t", yes}}), Catch::Contains("training_mode=1") &&
                                                          Catch::Contains("Dropout 'drop'"));
}

TEST_CASE("Dropout before opset 12: a read mask is refused, an unread one dropped",
          "[conformance][errors]") {
  auto model = [](bool read_mask, int64_t opset = 9) {
    OnnxModel m(opset);
    m.input("x", TP::FLOAT, {"2", "2"});
    m.node("Dropout", "drop", {"x"}, {"y", "mask"});
    m.output("y");
    if (read_mask) m.output("mask");
    return m;
  };
  for (int level : {0, 2}) {
    SessionOptions o;
    o.optimization_level = level;
    Session s(model(false).parse(), o);
    const Tensor x = Tensor::from_vector<float>({1, -2, 3, 0}, Shape{2, 2});
    CHECK(s.run_one(x).to_vector<float>() == std::vector<float>{1, -2, 3, 0});
  }
  REQUIRE_THROWS_WITH(model(true).parse(),
                      Catch::Contains("Dropout 'drop'") && Catch::Contains("'mask'") &&
                          Catch::Contains("opset 12"));
  try {
    model(true, 11).parse();
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::Unsupported);
  }
}
