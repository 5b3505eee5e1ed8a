// Shapes: minfer's shape inference against onnx.shape_inference, dynamic batch, and symbolic
// dims pinned with set_input_shape (`--shape NAME=DIMS` on the command line).
#include <fstream>

#include "conformance_test_util.h"
#include "runtime/input_shape.h"
#include "runtime/onnx_test_models.h"
#include "runtime/tensor_pb.h"

using namespace minfer;
using namespace minfer::test;
namespace fs = std::filesystem;
using TP = onnx::TensorProto;

namespace {

// One TSV line per value of `path`'s graph after minfer's shape inference (see check_shapes.py).
void dump_shapes(const std::string& path, std::ofstream& tsv) {
  Graph g = load_onnx(path);
  g.infer_shapes();
  for (const Value* v : g.values()) {
    std::string dims;
    for (size_t i = 0; i < v->shape.rank(); ++i)
      dims += std::string(i ? "," : "") +
              (v->shape[i] < 0 ? std::string("?") : std::to_string(v->shape[i]));
    tsv << path << '\t' << v->name << '\t' << detail::dtype_to_onnx(v->dtype) << '\t'
        << (v->shape_known ? 1 : 0) << '\t' << dims << '\n';
  }
}

// A small model with symbolic dims: x [N,2,H,W] -> Conv 3x3 pad 1 -> Relu -> GlobalAveragePool.
OnnxModel symbolic_cnn(const std::vector<std::string>& dims) {
  OnnxModel m(13);
  m.input("x", TP::FLOAT, dims);
  std::vector<float> w(3 * 2 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * static_cast<float>(i % 7) - 0.02f;
  m.initializer("w", w, {3, 2, 3, 3});
  auto* conv = m.node("Conv", "conv", {"x", "w"}, {"c"});
  auto* pads = conv->add_attribute();
  pads->set_name("pads");
  pads->set_type(onnx::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) pads->add_ints(1);
  m.node("Relu", "relu", {"c"}, {"r"});
  m.node("GlobalAveragePool", "gap", {"r"}, {"y"});
  m.output("y");
  return m;
}

}  // namespace

TEST_CASE("shapes: minfer's shape inference agrees with onnx.shape_inference",
          "[conformance][python]") {
  const fs::path dir = temp_dir("conformance_shapes");
  std::vector<std::string> models;
  for (const fs::path& root : {data_dir() / "onnx-node-tests", generated_opset_cases()})
    for (const std::string& c : find_conformance_cases(root.string()))
      models.push_back(c + "/model.onnx");
  // ResNet-20 with its real weights and a symbolic batch, written by minfer's exporter.
  const std::string resnet = (dir / "resnet20.onnx").string();
  save_onnx(build_model("cifar-resnet20", (repo_data_dir() / "models/resnet20.safetensors").string()),
            resnet);
  models.push_back(resnet);
  const std::string sym = (dir / "symbolic.onnx").string();
  write_bytes(sym, symbolic_cnn({"N", "2", "H", "W"}).bytes());
  models.push_back(sym);

  std::ofstream tsv(dir / "shapes.tsv");
  int dumped = 0;
  for (const std::string& m : models) {
    try {
      dump_shapes(m, tsv);
      ++dumped;
    } catch (const Error& e) {  // declined models (unsupported dtypes, ops): nothing to compare
      INFO(m << ": " << e.what());
      CHECK(e.code() == ErrorCode::Unsupported);
    }
  }
  tsv.close();
  CHECK(dumped >= 330);
  CHECK(run_python("check_shapes.py", std::string("'") + (dir / "shapes.tsv").string() + "'") == 0);
}

TEST_CASE("shapes: a symbolic batch runs at any batch size", "[conformance]") {
  OnnxModel m = symbolic_cnn({"N", "2", "5", "5"});
  Session s(m.parse());
  CHECK(s.graph().inputs()[0]->shape.to_string() == "[N,2,5,5]");
  std::mt19937 rng(3);
  for (int64_t n : {1, 4, 2}) {
    Tensor x = random_tensor(Shape{n, 2, 5, 5}, rng);
    Tensor y = s.run_one(x);
    CHECK(y.shape() == Shape{n, 3, 1, 1});
    // Each batch item alone gives the same numbers.
    Tensor x0(DType::f32, Shape{1, 2, 5, 5});
    std::copy(x.data<float>(), x.data<float>() + 50, x0.data<float>());
    CHECK(s.run_one(x0).to_vector<float>() ==
          std::vector<float>(y.data<float>(), y.data<float>() + 3));
  }
  require_error(
      [&] {
        s.run_one(Tensor(DType::f32, Shape{1, 2, 6, 5}));
      },
      ErrorCode::InvalidArgument, {"'x'", "[1,2,6,5]", "[N,2,5,5]"});
}

TEST_CASE("shapes: set_input_shape pins symbolic dims", "[conformance]") {
  OnnxModel m = symbolic_cnn({"N", "2", "H", "W"});
  Graph g = m.parse();
  set_input_shape(g, "x", Shape{1, 2, 8, 6});
  CHECK(g.inputs()[0]->shape == Shape{1, 2, 8, 6});
  CHECK(g.inputs()[0]->shape.symbols.empty());
  Session s(std::move(g));
  CHECK(s.graph().outputs()[0]->shape == Shape{1, 3, 1, 1});
  CHECK(s.run_one(Tensor(DType::f32, Shape{1, 2, 8, 6})).shape() == Shape{1, 3, 1, 1});
  require_error(
      [&] {
        s.run_one(Tensor(DType::f32, Shape{2, 2, 8, 6}));
      },
      ErrorCode::InvalidArgument, {"'x'", "[1,2,8,6]"});

  Graph g2 = m.parse();
  set_input_shape(g2, "", Shape{3, 2, 4, 4});  // the only input
  CHECK(g2.inputs()[0]->shape == Shape{3, 2, 4, 4});
  require_error(
      [&] {
        set_input_shape(g2, "image", Shape{1, 2, 4, 4});
      },
      ErrorCode::InvalidArgument, {"no input named 'image'", "inputs: x"});
  Graph g3 = m.parse();
  require_error(
      [&] {
        set_input_shape(g3, "x", Shape{1, 3, 4, 4});
      },
      ErrorCode::InvalidArgument, {"'x'", "dim 1 is fixed at 2", "[1,3,4,4]"});
  require_error(
      [&] {
        set_input_shape(g3, "x", Shape{1, 2, 4});
      },
      ErrorCode::InvalidArgument, {"'x'", "rank 4", "rank 3"});
  require_error(
      [&] {
        set_input_shape(g3, "x", Shape{1, 2, -1, 4});
      },
      ErrorCode::InvalidArgument, {"'x'", "must be static"});

  OnnxModel two(13);
  two.input("a", TP::FLOAT, {"N"});
  two.input("b", TP::FLOAT, {"N"});
  two.node("Add", "add", {"a", "b"}, {"y"});
  two.output("y");
  Graph g4 = two.parse();
  require_error([&] { set_input_shape(g4, "", Shape{3}); }, ErrorCode::InvalidArgument,
                {"2 inputs", "NAME=DIMS"});
  set_input_shape(g4, "b", Shape{3});
  CHECK(g4.inputs()[1]->shape == Shape{3});
  // An input declared without any shape takes whatever rank is given.
  two.g().mutable_input(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  Graph g5 = two.parse();
  set_input_shape(g5, "a", Shape{2, 3});
  CHECK(g5.inputs()[0]->shape_known);
  CHECK(g5.inputs()[0]->shape == Shape{2, 3});
}

TEST_CASE("shapes: parse_input_shape reads NAME=DIMS", "[conformance]") {
  auto [name, shape] = parse_input_shape("input.1=1x3x224x224");
  CHECK(name == "input.1");
  CHECK(shape == Shape{1, 3, 224, 224});
  CHECK(parse_input_shape("2,5").second == Shape{2, 5});
  CHECK(parse_input_shape("2,5").first.empty());
  CHECK(parse_input_shape("s=").second == Shape{});
  CHECK(parse_input_shape("a=b=7").first == "a=b");
  for (const char* bad :
       {"x=1x", "x=1xx3", "x=-1x3", "x=ax3", "=1x3", "x=1x3 ", "x=99999999999999999999"}) {
    INFO(bad);
    require_error([&] { parse_input_shape(bad); }, ErrorCode::InvalidArgument, {bad});
  }
}

TEST_CASE("shapes: minfer run/bench/inspect --shape NAME=DIMS", "[conformance][cli]") {
  const fs::path dir = temp_dir("conformance_shape_cli");
  const std::string model = (dir / "symbolic.onnx").string();
  write_bytes(model, symbolic_cnn({"N", "2", "H", "W"}).bytes());
  const std::string m = std::string("'") + model + "'";

  CliResult r = cli_merged("bench " + m + " --iterations 1 --threads 1");
  CHECK(r.code == 1);
  CHECK_THAT(r.out, Catch::Contains("'x' [N,2,H,W]") && Catch::Contains("--shape NAME=DIMS"));
  r = cli_merged("bench " + m + " --iterations 1 --threads 1 --shape x=2x2x9x7");
  CHECK(r.code == 0);
  r = cli_merged("inspect " + m + " --summary --shape 1x2x6x6");  // the only input: NAME= left out
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("[1,2,6,6]") && Catch::Contains("[1,3,1,1]"));
  const std::string x = (dir / "x.pb").string();
  save_tensor_pb(Tensor(DType::f32, Shape{1, 2, 5, 4}), x);
  r = cli_merged("run " + m + " --input 'x=" + x + "' --shape x=1x2x5x4 --threads 1");
  INFO(r.out);
  CHECK(r.code == 0);
  r = cli_merged("run " + m + " --input 'x=" + x + "' --shape x=1x2x6x4 --threads 1");
  CHECK(r.code == 1);
  CHECK_THAT(r.out, Catch::Contains("[1,2,5,4]") && Catch::Contains("[1,2,6,4]"));

  r = cli_merged("bench " + m + " --shape x=1x3x8x8");  // the model fixes 2 channels
  CHECK(r.code == 1);
  CHECK_THAT(r.out, Catch::Contains("dim 1 is fixed at 2"));
  r = cli_merged("bench " + m + " --shape y=1x2x8x8");
  CHECK(r.code == 1);
  CHECK_THAT(r.out, Catch::Contains("no input named 'y'"));
  r = cli_merged("bench " + m + " --shape x=1x2x8x");
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("--shape"));
}
