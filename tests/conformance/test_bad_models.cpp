// Bad model files through the whole path users take (Session::from_file: import, shape
// inference, passes, verify, plan, run): each must be refused with a minfer::Error whose message
// names the file and the node or value at fault. The import-level checks of the same kinds are
// in tests/runtime/test_io_onnx_import.cpp; the fuzz regressions are replayed here too.
#include <map>

#include "conformance_test_util.h"
#include "runtime/onnx_test_models.h"

using namespace minfer;
using namespace minfer::test;
namespace fs = std::filesystem;
using TP = onnx::TensorProto;

namespace {

// Writes `m` to a file and returns its path.
std::string save(const OnnxModel& m, const std::string& name) {
  const fs::path p = temp_dir("bad_models_" + name) / (name + ".onnx");
  write_bytes(p, m.bytes());
  return p.string();
}

// Loads `path` into a Session and runs it once on zeros (inputs of the declared shapes).
void load_and_run(const std::string& path) {
  Session s = Session::from_file(path);
  NamedTensors inputs;
  for (const Value* v : s.graph().inputs()) inputs[v->name] = Tensor(v->dtype, v->shape);
  s.run(inputs);
}

OnnxModel relu_model() {
  OnnxModel m;
  m.input("x", TP::FLOAT, {"2", "3"});
  m.node("Relu", "relu", {"x"}, {"y"});
  m.output("y");
  return m;
}

onnx::AttributeProto* attr_ints(onnx::NodeProto* n, const std::string& name,
                                const std::vector<int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
  return a;
}

onnx::TensorProto* int64_initializer(OnnxModel& m, const std::string& name,
                                     const std::vector<int64_t>& v) {
  auto* t = m.g().add_initializer();
  t->set_name(name);
  t->set_data_type(TP::INT64);
  t->add_dims(static_cast<int64_t>(v.size()));
  for (int64_t x : v) t->add_int64_data(x);
  return t;
}

}  // namespace

TEST_CASE("bad models: truncated files are refused at every length", "[conformance][errors]") {
  const fs::path src = data_dir() / "onnx-node-tests" / "test_basic_conv_with_padding";
  const std::string bytes = read_bytes(src / "model.onnx");
  const fs::path p = temp_dir("bad_models_truncated") / "model.onnx";
  int refused = 0;
  for (size_t len = 0; len < bytes.size(); ++len) {
    write_bytes(p, bytes.substr(0, len));
    INFO("first " << len << " of " << bytes.size() << " bytes");
    try {
      load_and_run(p.string());
    } catch (const Error& e) {
      CHECK_THAT(e.what(), Catch::Contains(p.string()));
      ++refused;
    }
  }
  // A cut between two fields leaves a shorter valid protobuf; the rest are unparseable.
  CHECK(refused == static_cast<int>(bytes.size()));
  write_bytes(p, bytes.substr(0, bytes.size() / 2));
  require_error([&] { Session::from_file(p.string()); }, ErrorCode::InvalidModel,
                {p.string(), "not a valid ONNX model", "truncated"});
}

TEST_CASE("bad models: opset imports", "[conformance][errors]") {
  OnnxModel m = relu_model();
  m.m.clear_opset_import();
  std::string path = save(m, "no_opset");
  require_error([&] { Session::from_file(path); }, ErrorCode::InvalidModel,
                {path, "no opset import for the default ONNX domain"});
  m.m.add_opset_import()->set_version(13);
  m.m.add_opset_import()->set_version(17);
  path = save(m, "two_opsets");
  require_error([&] { Session::from_file(path); }, ErrorCode::InvalidModel,
                {path, "default ONNX domain", "twice"});
  m.m.clear_opset_import();
  m.m.add_opset_import()->set_version(99);
  path = save(m, "opset99");
  require_error([&] { Session::from_file(path); }, ErrorCode::Unsupported,
                {path, "opset 99", "up to 25"});
}

TEST_CASE("bad models: graph structure", "[conformance][errors]") {
  {  // a cycle: relu_a reads relu_b's output and the other way round
    OnnxModel m;
    m.input("x", TP::FLOAT, {"2"});
    m.node("Add", "add", {"x", "b"}, {"a"});
    m.node("Relu", "relu_b", {"a"}, {"b"});
    m.output("b");
    const std::string path = save(m, "cycle");
    require_error([&] { Session::from_file(path); }, ErrorCode::InvalidModel, {path, "cycle"});
    try {
      Session::from_file(path);
    } catch (const Error& e) {
      const std::string msg = e.what();
      CHECK((msg.find("'add'") != std::string::npos || msg.find("'relu_b'") != std::string::npos));
    }
  }
  {  // a node reading a value nothing defines
    OnnxModel m = relu_model();
    m.node("Add", "add", {"y", "nowhere"}, {"z"});
    m.output("z");
    const std::string path = save(m, "dangling");
    require_error([&] { Session::from_file(path); }, ErrorCode::InvalidModel,
                  {path, "Add 'add'", "'nowhere'", "not defined"});
  }
  {  // a weight that should be an initializer and is not there
    OnnxModel m;
    m.input("x", TP::FLOAT, {"1", "2", "4", "4"});
    m.node("Conv", "conv1", {"x", "conv1.weight"}, {"y"});
    m.output("y");
    const std::string path = save(m, "missing_initializer");
    require_error([&] { Session::from_file(path); }, ErrorCode::InvalidModel,
                  {path, "Conv 'conv1'", "'conv1.weight'", "not defined"});
  }
  {  // an output nobody produces, and one listed twice
    OnnxModel m = relu_model();
    m.output("ghost");
    const std::string path = save(m, "ghost_output");
    require_error([&] { Session::from_file(path); }, ErrorCode::InvalidModel,
                  {path, "'ghost'", "not produced"});
  }
  {  // two nodes writing one value
    OnnxModel m = relu_model();
    m.node("Relu", "relu2", {"x"}, {"y"});
    const std::string path = save(m, "defined_twice");
    require_error([&] { Session::from_file(path); }, ErrorCode::InvalidModel,
                  {path, "'y'", "already defined"});
  }
  {  // no outputs at all
    OnnxModel m = relu_model();
    m.g().clear_output();
    const std::string path = save(m, "no_outputs");
    require_error([&] { Session::from_file(path); }, ErrorCode::InvalidModel, {"no outputs"});
  }
}

TEST_CASE("bad models: initializers of the wrong size or shape", "[conformance][errors]") {
  {  // fewer bytes than the dims need
    OnnxModel m = relu_model();
    m.initializer("w", {1, 2, 3}, {2, 2});
    const std::string path = save(m, "short_initializer");
    require_error([&] { Session::from_file(path); }, ErrorCode::InvalidModel,
                  {path, "initializer 'w'", "12 bytes", "needs 16"});
  }
  {  // typed data of the wrong count
    OnnxModel m = relu_model();
    auto* t = int64_initializer(m, "shape", {1, 2, 3});
    t->set_dims(0, 4);
    const std::string path = save(m, "typed_count");
    require_error([&] { Session::from_file(path); }, ErrorCode::InvalidModel,
                  {path, "initializer 'shape'"});
  }
  {  // a Conv weight whose channels do not match the input
    OnnxModel m;
    m.input("x", TP::FLOAT, {"1", "2", "4", "4"});
    m.initializer("w", std::vector<float>(4 * 3 * 3 * 3), {4, 3, 3, 3});
    m.node("Conv", "conv1", {"x", "w"}, {"y"});
    m.output("y");
    const std::string path = save(m, "conv_channels");
    require_error([&] { Session::from_file(path); }, ErrorCode::InvalidModel,
                  {"Conv 'conv1'", "channels"});
  }
  {  // a Gemm weight of the wrong inner size
    OnnxModel m;
    m.input("x", TP::FLOAT, {"1", "8"});
    m.initializer("w", std::vector<float>(10 * 7), {10, 7});
    auto* n = m.node("Gemm", "fc", {"x", "w"}, {"y"});
    OnnxModel::attr_int(n, "transB", 1);
    m.output("y");
    const std::string path = save(m, "gemm_inner");
    require_error([&] { Session::from_file(path); }, ErrorCode::InvalidModel, {"Gemm 'fc'"});
  }
}

TEST_CASE("bad models: unknown ops and unsupported dtypes", "[conformance][errors]") {
  {
    OnnxModel m = relu_model();
    m.node("Frobnicate", "frob", {"y"}, {"z"});
    m.output("z");
    const std::string path = save(m, "unknown_op");
    require_error([&] { Session::from_file(path); }, ErrorCode::Unsupported,
                  {"unknown op 'Frobnicate'", "ai.onnx", "--plugin"});
  }
  {
    OnnxModel m = relu_model();
    m.node("Frobnicate", "frob", {"y"}, {"z"}, "com.example");
    m.output("z");
    auto* op = m.m.add_opset_import();
    op->set_domain("com.example");
    op->set_version(1);
    const std::string path = save(m, "unknown_domain");
    require_error([&] { Session::from_file(path); }, ErrorCode::Unsupported,
                  {"unknown op 'Frobnicate'", "com.example"});
  }
  {
    OnnxModel m;
    m.input("x", TP::DOUBLE, {"2"});
    m.node("Relu", "relu", {"x"}, {"y"});
    m.output("y", TP::DOUBLE);
    const std::string path = save(m, "double_input");
    require_error([&] { Session::from_file(path); }, ErrorCode::Unsupported,
                  {path, "graph input 'x'", "DOUBLE", "not supported"});
  }
  {
    OnnxModel m = relu_model();
    auto* t = m.g().add_initializer();
    t->set_name("bf");
    t->set_data_type(TP::BFLOAT16);
    t->add_dims(1);
    t->add_int32_data(0);
    const std::string path = save(m, "bfloat16_initializer");
    require_error([&] { Session::from_file(path); }, ErrorCode::Unsupported,
                  {path, "initializer 'bf'", "BFLOAT16"});
  }
  {  // a Constant node holding a string tensor
    OnnxModel m = relu_model();
    auto* n = m.node("Constant", "words", {}, {"s"});
    auto* a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(TP::STRING);
    a->mutable_t()->add_string_data("hello");
    const std::string path = save(m, "string_constant");
    require_error([&] { Session::from_file(path); }, ErrorCode::Unsupported,
                  {path, "'words'", "STRING"});
  }
  {  // Relu of an int64 tensor: a type the op's schema refuses
    OnnxModel m;
    m.input("x", TP::INT64, {"2"});
    m.node("Sigmoid", "sig", {"x"}, {"y"});
    m.output("y", TP::INT64);
    const std::string path = save(m, "sigmoid_int64");
    require_error([&] { load_and_run(path); }, ErrorCode::InvalidModel, {"Sigmoid 'sig'", "i64"});
  }
}

TEST_CASE("bad models: absurd shapes hit allocation limits, not the allocator",
          "[conformance][errors]") {
  {  // inputs declared with 2^80 elements (int64 overflow) and with 2^40 floats (4 TiB)
    OnnxModel m;
    m.input("x", TP::FLOAT, {"1099511627776", "1099511627776"});
    m.node("Relu", "relu", {"x"}, {"y"});
    m.output("y");
    std::string path = save(m, "huge_input");
    require_error([&] { Session::from_file(path); }, ErrorCode::OutOfMemory,
                  {path, "graph input 'x'", "absurdly large"});
    m.g()
        .mutable_input(0)
        ->mutable_type()
        ->mutable_tensor_type()
        ->mutable_shape()
        ->mutable_dim(0)
        ->set_dim_value(1);
    path = save(m, "huge_input2");
    require_error([&] { Session::from_file(path); }, ErrorCode::OutOfMemory,
                  {path, "graph input 'x'", "[1,1099511627776]", "64 GiB"});
    // A symbolic dim is checked when a tensor arrives (Tensor's own limit).
    m.g()
        .mutable_input(0)
        ->mutable_type()
        ->mutable_tensor_type()
        ->mutable_shape()
        ->mutable_dim(1)
        ->set_dim_param("N");
    Session s = Session::from_file(save(m, "symbolic_input"));
    require_error(
        [&] {
          Tensor(DType::f32, Shape{1, int64_t{1} << 40});
        },
        ErrorCode::OutOfMemory, {"[1,1099511627776]", "above the limit"});
  }
  {  // Pad to 2^40 elements: the output would need 4 TiB
    OnnxModel m;
    m.input("x", TP::FLOAT, {"2"});
    int64_initializer(m, "pads", {0, int64_t{1} << 40});
    m.node("Pad", "pad", {"x", "pads"}, {"y"});
    m.output("y");
    const std::string path = save(m, "huge_pad");
    require_error([&] { load_and_run(path); }, ErrorCode::OutOfMemory, {"Pad 'pad'"});
  }
  {  // Reshape's target with 2^62 elements (numel overflow in a product of dims)
    OnnxModel m;
    m.input("x", TP::FLOAT, {"2"});
    int64_initializer(m, "shape", {int64_t{1} << 31, int64_t{1} << 31, 2});
    m.node("Reshape", "reshape", {"x", "shape"}, {"y"});
    m.output("y");
    const std::string path = save(m, "huge_reshape");
    require_error([&] { load_and_run(path); }, ErrorCode::InvalidModel, {"Reshape 'reshape'"});
  }
  {  // Conv whose kernel covers 2^20 x 2^20 positions on a tiny input
    OnnxModel m;
    m.input("x", TP::FLOAT, {"1", "1", "2", "2"});
    m.initializer("w", {1}, {1, 1, 1, 1});
    auto* n = m.node("Conv", "conv", {"x", "w"}, {"y"});
    attr_ints(n, "pads", {1 << 20, 1 << 20, 1 << 20, 1 << 20});
    m.output("y");
    const std::string path = save(m, "huge_conv_pads");
    require_error([&] { load_and_run(path); }, ErrorCode::OutOfMemory, {"Conv 'conv'"});
  }
}

TEST_CASE("bad models: inputs the fuzzer found stay fixed", "[conformance][errors][fuzz]") {
  // fuzz/regressions: one file per bug fuzz_onnx_load found (see fuzz/README.md), and what
  // minfer now says about it ("" = it loads and runs).
  const std::map<std::string, std::vector<std::string>> expected{
      {"reshape_dims_overflow.onnx", {"Reshape", "too many elements"}},
      {"pad_dims_overflow.onnx", {"Pad", "absurdly large"}},
      {"maxpool_huge_kernel_timeout.onnx", {}},  // a 60x10485759 window on a 5x5 input
      // The same at stride 1 with SAME_UPPER: the flat pool path sized its masks by the window.
      {"maxpool_huge_kernel_flat_masks.onnx", {}},
      {"conv_empty_output_div_zero.onnx", {}},   // a Conv on a 5x0 input: an empty output
  };
  const fs::path dir = fs::path(MINFER_SOURCE_DIR) / "fuzz" / "regressions";
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    INFO(name);
    REQUIRE(expected.count(name) == 1);  // a new regression file: say what it must do
    ++files;
    const auto& parts = expected.at(name);
    if (parts.empty())
      load_and_run(e.path().string());
    else
      require_error([&] { load_and_run(e.path().string()); }, ErrorCode::InvalidModel, parts);
  }
  CHECK(files == static_cast<int>(expected.size()));
}
