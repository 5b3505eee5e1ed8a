#include <fstream>
#include <set>

#include "onnx_test_models.h"

using namespace minfer;
using namespace minfer::test;

namespace {

using TP = onnx::TensorProto;

// Runs a graph with the registry's reference kernels (enough to check what import built).
std::map<std::string, Tensor> run_reference(const Graph& g,
                                            const std::map<std::string, Tensor>& inputs) {
  std::map<const Value*, Tensor> env;
  for (const Value* v : g.values())
    if (v->is_constant()) env[v] = *v->constant;
  for (const Value* v : g.inputs()) env[v] = inputs.at(v->name);
  for (const Node* n : g.topo_order()) {
    std::vector<Tensor> ins;
    for (const Value* v : n->inputs) ins.push_back(v ? env.at(v) : Tensor());
    auto outs = OpRegistry::global().get_op(n->domain, n->op_type).reference(*n, ins);
    for (size_t i = 0; i < outs.size() && i < n->outputs.size(); ++i) env[n->outputs[i]] = outs[i];
  }
  std::map<std::string, Tensor> result;
  for (const Value* v : g.outputs()) result[v->name] = env.at(v);
  return result;
}

std::vector<std::string> op_types(const Graph& g) {
  std::vector<std::string> r;
  for (const Node* n : g.nodes()) r.push_back(n->op_type);
  return r;
}

}  // namespace

TEST_CASE("onnx import: a conformance Conv model", "[io]") {
  auto path = data_dir() / "onnx-node-tests" / "test_basic_conv_with_padding" / "model.onnx";
  Graph g = load_onnx(path.string());
  REQUIRE(g.inputs().size() == 2);
  CHECK(g.inputs()[0]->name == "x");
  CHECK(g.inputs()[0]->shape == Shape{1, 1, 5, 5});
  CHECK(g.inputs()[1]->shape == Shape{1, 1, 3, 3});
  REQUIRE(g.node_count() == 1);
  const Node* conv = g.nodes()[0];
  CHECK(conv->op_type == "Conv");
  CHECK(conv->domain.empty());
  CHECK(conv->attrs.get_ints("kernel_shape") == std::vector<int64_t>{3, 3});
  CHECK(conv->attrs.get_ints("pads") == std::vector<int64_t>{1, 1, 1, 1});
  REQUIRE(g.outputs().size() == 1);
  CHECK(g.outputs()[0]->name == "y");
  CHECK(g.outputs()[0]->producer == conv);
  CHECK(g.opset_imports.at("") > 0);
}

TEST_CASE("onnx import: every conformance model imports or is refused as unsupported", "[io]") {
  auto root = data_dir() / "onnx-node-tests";
  std::ifstream manifest(root / "MANIFEST.tsv");
  REQUIRE(manifest.good());
  std::string line;
  std::getline(manifest, line);  // header
  int imported = 0, refused = 0;
  while (std::getline(manifest, line)) {
    std::istringstream row(line);
    std::string name, ir, opsets, ops;
    std::getline(row, name, '\t');
    std::getline(row, ir, '\t');
    std::getline(row, opsets, '\t');
    std::getline(row, ops, '\t');
    INFO(name);
    try {
      Graph g = load_onnx((root / name / "model.onnx").string());
      // The nodes are the manifest's, except Constant nodes, which became constants.
      std::vector<std::string> want;
      std::istringstream list(ops);
      for (std::string op; std::getline(list, op, ',');)
        if (op != "Constant") want.push_back(op);
      // QOperator nodes (QLinearConv, QLinearMatMul) import as DequantizeLinear -> op ->
      // QuantizeLinear (runtime/onnx_qoperator.h, tested in tests/conformance).
      if (ops.find("QLinear") == std::string::npos) CHECK(op_types(g) == want);
      CHECK(!g.outputs().empty());
      ++imported;
    } catch (const Error& e) {
      INFO(e.what());
      CHECK(e.code() == ErrorCode::Unsupported);
      std::string msg = e.what();
      CHECK((msg.find("element type") != std::string::npos ||
             msg.find("only tensor inputs") != std::string::npos));
      ++refused;
    }
  }
  CHECK(imported > 150);
  CHECK(refused > 0);
}

TEST_CASE("onnx import: initializers, inputs, symbolic dims, outputs", "[io]") {
  OnnxModel m;
  m.input("x", TP::FLOAT, {"N", "3", "", "H"});
  m.input("w", TP::FLOAT, {"2"});  // IR < 4 style: also an initializer, so a constant
  m.initializer("w", {1.5f, -2.f}, {2});
  auto* i8 = m.g().add_initializer();  // typed fields instead of raw_data
  i8->set_name("q");
  i8->set_data_type(TP::INT8);
  i8->add_dims(3);
  for (int v : {-1, 2, -3}) i8->add_int32_data(v);
  auto* i64 = m.g().add_initializer();
  i64->set_name("shape");
  i64->set_data_type(TP::INT64);
  i64->add_dims(2);
  i64->add_int64_data(-1);
  i64->add_int64_data(6);
  auto* b = m.g().add_initializer();
  b->set_name("mask");
  b->set_data_type(TP::BOOL);
  b->add_int32_data(1);
  m.node("Mul", "mul", {"x", "w"}, {"y"});
  m.node("Reshape", "", {"y", "shape"}, {"z"});
  m.node("Custom", "c", {"z", "", "q"}, {"u", ""}, "com.example");
  m.output("z");
  m.output("u");
  Graph g = m.parse();

  REQUIRE(g.inputs().size() == 1);
  const Value* x = g.inputs()[0];
  CHECK(x->name == "x");
  CHECK(x->dtype == DType::f32);
  CHECK(x->shape.dims() == std::vector<int64_t>{-1, 3, -1, -1});
  REQUIRE(x->shape.symbols.size() == 4);
  CHECK(x->shape.symbols[0] == "N");
  CHECK(x->shape.symbols[2].empty());
  CHECK(x->shape.symbols[3] == "H");
  CHECK(x->shape.to_string() == "[N,3,?,H]");

  const Value* w = g.find_value("w");
  REQUIRE(w->is_constant());
  CHECK(!w->is_graph_input);
  CHECK(w->constant->to_vector<float>() == std::vector<float>{1.5f, -2.f});
  CHECK(g.find_value("q")->constant->to_vector<int8_t>() == std::vector<int8_t>{-1, 2, -3});
  CHECK(g.find_value("shape")->constant->to_vector<int64_t>() == std::vector<int64_t>{-1, 6});
  CHECK(g.find_value("mask")->constant->rank() == 0);
  CHECK(g.find_value("mask")->constant->dtype() == DType::boolean);

  REQUIRE(g.node_count() == 3);
  CHECK(op_types(g) == std::vector<std::string>{"Mul", "Reshape", "Custom"});
  const Node* custom = g.find_node("c");
  REQUIRE(custom);
  CHECK(custom->domain == "com.example");  // unknown ops are kept, not refused
  REQUIRE(custom->inputs.size() == 3);
  CHECK(custom->inputs[1] == nullptr);  // absent optional input
  CHECK(custom->inputs[2] == g.find_value("q"));
  REQUIRE(custom->outputs.size() == 2);
  REQUIRE(g.outputs().size() == 2);
  CHECK(g.outputs()[0]->name == "z");
  CHECK(g.outputs()[1]->name == "u");
  CHECK(g.outputs()[1]->is_graph_output);
  CHECK(g.name == "test_graph");
}

TEST_CASE("onnx import: attributes of every kind", "[io]") {
  OnnxModel m;
  m.input("x", TP::FLOAT, {"2"});
  auto* n = m.node("Op", "n", {"x"}, {"y"}, "com.example");
  OnnxModel::attr_int(n, "i", -7);
  auto* a = n->add_attribute();
  a->set_name("f");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(0.25f);
  a = n->add_attribute();
  a->set_name("s");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("NOTSET");
  a = n->add_attribute();
  a->set_name("ints");
  a->set_type(onnx::AttributeProto::INTS);
  a->add_ints(1);
  a->add_ints(2);
  a = n->add_attribute();
  a->set_name("floats");
  a->set_type(onnx::AttributeProto::FLOATS);
  a->add_floats(0.5f);
  a = n->add_attribute();
  a->set_name("strings");
  a->set_type(onnx::AttributeProto::STRINGS);
  a->add_strings("a");
  a->add_strings("b");
  a = n->add_attribute();
  a->set_name("t");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(TP::INT32);
  a->mutable_t()->add_dims(2);
  a->mutable_t()->add_int32_data(4);
  a->mutable_t()->add_int32_data(5);
  a = n->add_attribute();  // old files leave the type out
  a->set_name("untyped");
  a->set_i(3);
  m.output("y");
  Graph g = m.parse();
  const Attributes& at = g.find_node("n")->attrs;
  CHECK(at.get_int("i", 0) == -7);
  CHECK(at.get_float("f", 0) == 0.25f);
  CHECK(at.get_string("s", "") == "NOTSET");
  CHECK(at.get_ints("ints") == std::vector<int64_t>{1, 2});
  CHECK(at.get_floats("floats") == std::vector<float>{0.5f});
  CHECK(std::get<std::vector<std::string>>(at.all().at("strings")) ==
        std::vector<std::string>{"a", "b"});
  REQUIRE(at.get_tensor("t"));
  CHECK(at.get_tensor("t")->to_vector<int32_t>() == std::vector<int32_t>{4, 5});
  CHECK(at.get_int("untyped", 0) == 3);

  a = m.g().mutable_node(0)->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  a->mutable_g()->set_name("sub");
  require_error([&] { m.parse(); }, ErrorCode::Unsupported,
                {"test.onnx", "'n'", "'body'", "subgraph"});
}

TEST_CASE("onnx import: Constant nodes become constants", "[io]") {
  OnnxModel m;
  m.input("x", TP::FLOAT, {"3"});
  // Listed after the node that uses it: nodes need not come in order.
  m.node("Add", "add", {"x", "c_tensor"}, {"y"});
  auto* c = m.node("Constant", "c1", {}, {"c_tensor"});
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(TP::FLOAT);
  a->mutable_t()->add_dims(3);
  for (float f : {1.f, 2.f, 3.f}) a->mutable_t()->add_float_data(f);
  OnnxModel::attr_int(m.node("Constant", "c2", {}, {"c_int"}), "value_int", 5);
  a = m.node("Constant", "c3", {}, {"c_float"})->add_attribute();
  a->set_name("value_float");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(0.5f);
  a = m.node("Constant", "c4", {}, {"c_ints"})->add_attribute();
  a->set_name("value_ints");
  a->set_type(onnx::AttributeProto::INTS);
  a->add_ints(7);
  a->add_ints(8);
  a = m.node("Constant", "c5", {}, {"c_floats"})->add_attribute();
  a->set_name("value_floats");
  a->set_type(onnx::AttributeProto::FLOATS);
  a->add_floats(-1.f);
  m.output("y");
  m.output("c_int", TP::INT64);
  Graph g = m.parse();
  CHECK(op_types(g) == std::vector<std::string>{"Add"});
  CHECK(g.find_value("c_tensor")->constant->to_vector<float>() == std::vector<float>{1, 2, 3});
  CHECK(g.find_node("add")->inputs[1] == g.find_value("c_tensor"));
  CHECK(g.find_value("c_int")->constant->rank() == 0);
  CHECK(g.find_value("c_int")->constant->to_vector<int64_t>() == std::vector<int64_t>{5});
  CHECK(g.find_value("c_float")->constant->to_vector<float>() == std::vector<float>{0.5f});
  CHECK(g.find_value("c_ints")->constant->shape() == Shape{2});
  CHECK(g.find_value("c_ints")->constant->to_vector<int64_t>() == std::vector<int64_t>{7, 8});
  CHECK(g.find_value("c_floats")->constant->to_vector<float>() == std::vector<float>{-1.f});
  CHECK(g.outputs()[1] == g.find_value("c_int"));

  a = m.node("Constant", "c6", {}, {"c_str"})->add_attribute();
  a->set_name("value_string");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("hi");
  require_error([&] { m.parse(); }, ErrorCode::Unsupported, {"'c6'", "value_string"});
}

TEST_CASE("onnx import: external data is read next to the model, never outside", "[io]") {
  auto dir = temp_dir("onnx_external");
  std::filesystem::create_directories(dir / "model");
  std::vector<float> w{1, 2, 3, 4, 5, 6};
  std::string blob = "HEADER.." + std::string(reinterpret_cast<const char*>(w.data()), 24);
  write_bytes(dir / "model" / "weights.bin", blob);
  write_bytes(dir / "outside.bin", blob);

  auto model_with = [&](const std::string& location, const std::string& offset,
                        const std::string& length) {
    OnnxModel m;
    m.input("x", TP::FLOAT, {"2", "3"});
    auto* t = m.g().add_initializer();
    t->set_name("w");
    t->set_data_type(TP::FLOAT);
    t->add_dims(2);
    t->add_dims(3);
    t->set_data_location(TP::EXTERNAL);
    auto kv = [&](const std::string& k, const std::string& v) {
      if (v.empty()) return;
      auto* e = t->add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    kv("location", location);
    kv("offset", offset);
    kv("length", length);
    m.node("Add", "add", {"x", "w"}, {"y"});
    m.output("y");
    auto path = dir / "model" / "m.onnx";
    write_bytes(path, m.bytes());
    return path.string();
  };
  Graph g = load_onnx(model_with("weights.bin", "8", "24"));
  CHECK(g.find_value("w")->constant->to_vector<float>() == w);
  Graph g2 = load_onnx(model_with("./weights.bin", "8", ""));  // length: to the end
  CHECK(g2.find_value("w")->constant->to_vector<float>() == w);

  require_error([&] { load_onnx(model_with("../outside.bin", "8", "24")); },
                ErrorCode::InvalidModel, {"'w'", "../outside.bin", "escapes the model folder"});
  require_error([&] { load_onnx(model_with((dir / "outside.bin").string(), "8", "24")); },
                ErrorCode::InvalidModel, {"'w'", "must be relative"});
  require_error([&] { load_onnx(model_with("nothere.bin", "0", "")); }, ErrorCode::InvalidModel,
                {"'w'", "nothere.bin"});
  require_error([&] { load_onnx(model_with("weights.bin", "16", "24")); }, ErrorCode::InvalidModel,
                {"'w'", "runs past the end"});
  require_error([&] { load_onnx(model_with("weights.bin", "100", "")); }, ErrorCode::InvalidModel,
                {"'w'", "offset 100"});
  require_error([&] { load_onnx(model_with("weights.bin", "0", "32")); }, ErrorCode::InvalidModel,
                {"'w'", "32 bytes", "needs 24"});
  require_error([&] { load_onnx(model_with("weights.bin", "-4", "")); }, ErrorCode::InvalidModel,
                {"'w'", "offset '-4'"});
}

TEST_CASE("onnx import: malformed models are refused with clear errors", "[io]") {
  auto dir = temp_dir("onnx_errors");
  require_error([&] { load_onnx((dir / "missing.onnx").string()); }, ErrorCode::InvalidArgument,
                {"missing.onnx", "cannot open"});
  require_error([&] { load_onnx(dir.string()); }, ErrorCode::InvalidArgument, {"directory"});

  auto bad = (dir / "bad.onnx").string();
  write_bytes(bad, "\x0a\xff\xff\xff\xff\x0f garbage that is not protobuf");
  require_error([&] { load_onnx(bad); }, ErrorCode::InvalidModel, {bad, "not a valid ONNX model"});
  write_bytes(bad, "hello, I am a text file\n");
  require_error([&] { load_onnx(bad); }, ErrorCode::InvalidModel, {bad, "not a valid ONNX model"});
  std::string real =
      read_bytes(data_dir() / "onnx-node-tests" / "test_basic_conv_with_padding" / "model.onnx");
  write_bytes(bad, real.substr(0, real.size() / 2));
  require_error([&] { load_onnx(bad); }, ErrorCode::InvalidModel, {bad, "not a valid ONNX model"});

  auto base = [] {
    OnnxModel m;
    m.input("x", TP::FLOAT, {"2"});
    m.node("Relu", "r", {"x"}, {"y"});
    m.output("y");
    return m;
  };
  {
    OnnxModel m = base();
    m.m.clear_opset_import();
    auto* op = m.m.add_opset_import();
    op->set_domain("com.example");
    op->set_version(1);
    require_error([&] { m.parse(); }, ErrorCode::InvalidModel, {"test.onnx", "opset import"});
  }
  {
    OnnxModel m = base();
    m.node("Add", "add", {"y", "nowhere"}, {"z"});
    require_error([&] { m.parse(); }, ErrorCode::InvalidModel,
                  {"test.onnx", "Add 'add'", "'nowhere'", "not defined"});
  }
  {
    OnnxModel m = base();
    m.initializer("w", {1, 2, 3}, {2, 2});
    require_error([&] { m.parse(); }, ErrorCode::InvalidModel,
                  {"initializer 'w'", "12 bytes", "[2,2] f32 needs 16"});
  }
  {
    OnnxModel m = base();
    auto* t = m.initializer("huge", {1}, {int64_t{1} << 32, int64_t{1} << 32});
    (void)t;
    require_error([&] { m.parse(); }, ErrorCode::InvalidModel, {"'huge'", "absurdly large"});
    m.g().mutable_initializer(0)->clear_dims();
    m.g().mutable_initializer(0)->add_dims(int64_t{1} << 34);  // 64 GiB: validated, not allocated
    require_error([&] { m.parse(); }, ErrorCode::InvalidModel, {"'huge'", "4 bytes"});
  }
  {
    OnnxModel m = base();
    m.output("y");
    require_error([&] { m.parse(); }, ErrorCode::InvalidModel, {"output 'y'", "twice"});
  }
  {
    OnnxModel m = base();
    m.output("ghost");
    require_error([&] { m.parse(); }, ErrorCode::InvalidModel, {"'ghost'", "not produced"});
  }
  {
    OnnxModel m = base();
    m.node("Relu", "r2", {"x"}, {"y"});
    require_error([&] { m.parse(); }, ErrorCode::InvalidModel, {"'y'", "already defined"});
  }
  {
    OnnxModel m = base();
    auto* t = m.g().add_initializer();
    t->set_name("d");
    t->set_data_type(TP::DOUBLE);
    require_error([&] { m.parse(); }, ErrorCode::Unsupported, {"initializer 'd'", "DOUBLE"});
  }
  {
    OnnxModel m = base();
    m.input("s", TP::STRING, {"1"});
    require_error([&] { m.parse(); }, ErrorCode::Unsupported, {"graph input 's'", "STRING"});
  }
  {
    OnnxModel m = base();
    auto* t = m.g().add_initializer();
    t->set_name("f8");
    t->set_data_type(17);
    t->add_int32_data(0);
    require_error([&] { m.parse(); }, ErrorCode::Unsupported, {"'f8'", "FLOAT8E4M3FN"});
  }
}

TEST_CASE("onnx import: Softmax before opset 13 gets its flatten-to-2D meaning", "[io]") {
  constexpr int64_t kDefault = 99;  // leave the axis attribute out
  auto model = [](int64_t opset, const std::vector<std::string>& dims, int64_t axis) {
    OnnxModel m(opset);
    m.input("x", TP::FLOAT, dims);
    if (dims.empty()) m.g().mutable_input(0)->mutable_type()->mutable_tensor_type()->clear_shape();
    auto* n = m.node("Softmax", "sm", {"x"}, {"y"});
    if (axis != kDefault) OnnxModel::attr_int(n, "axis", axis);
    m.output("y");
    return m.parse();
  };
  // Rank 2 with the default axis 1: the same as the single-axis op.
  Graph g2 = model(11, {"N", "10"}, kDefault);
  CHECK(op_types(g2) == std::vector<std::string>{"Softmax"});
  CHECK(g2.nodes()[0]->attrs.get_int("axis", 0) == -1);
  Graph g3 = model(11, {"2", "3", "4"}, -1);
  CHECK(op_types(g3) == std::vector<std::string>{"Softmax"});
  Graph g4 = model(11, {"2", "3", "4"}, 2);
  CHECK(op_types(g4) == std::vector<std::string>{"Softmax"});
  CHECK(g4.nodes()[0]->attrs.get_int("axis", 0) == -1);
  Graph g5 = model(11, {}, 1);  // rank unknown (no shape): decomposed to be safe
  CHECK(op_types(g5) == std::vector<std::string>{"Flatten", "Softmax", "Shape", "Reshape"});
  // Opset 13: untouched.
  Graph g13 = model(13, {"2", "3", "4"}, 1);
  CHECK(op_types(g13) == std::vector<std::string>{"Softmax"});
  CHECK(g13.nodes()[0]->attrs.get_int("axis", -1) == 1);

  // Rank 3, default axis 1: softmax over the last two axes together.
  Graph g = model(11, {"2", "3", "4"}, kDefault);
  CHECK(op_types(g) == std::vector<std::string>{"Flatten", "Softmax", "Shape", "Reshape"});
  REQUIRE(g.outputs().size() == 1);
  CHECK(g.outputs()[0]->name == "y");
  std::mt19937 rng(5);
  Tensor x = random_tensor(Shape{2, 3, 4}, rng, -3, 3);
  Tensor y = run_reference(g, {{"x", x}}).at("y");
  REQUIRE(y.shape() == Shape{2, 3, 4});
  const float* xp = x.data<float>();
  for (int b = 0; b < 2; ++b) {
    double sum = 0;
    for (int i = 0; i < 12; ++i) sum += std::exp(double(xp[b * 12 + i]));
    for (int i = 0; i < 12; ++i)
      CHECK(y.data<float>()[b * 12 + i] == Approx(std::exp(double(xp[b * 12 + i])) / sum));
  }
}

TEST_CASE("onnx import: other pre-opset-13 forms", "[io]") {
  {  // Reshape-1: the shape is an attribute; it becomes a constant input.
    OnnxModel m(4);
    m.input("x", TP::FLOAT, {"2", "3"});
    auto* n = m.node("Reshape", "r", {"x"}, {"y"});
    auto* a = n->add_attribute();
    a->set_name("shape");
    a->set_type(onnx::AttributeProto::INTS);
    a->add_ints(3);
    a->add_ints(2);
    OnnxModel::attr_int(n, "consumed_inputs", 0);
    m.output("y");
    Graph g = m.parse();
    const Node* r = g.find_node("r");
    REQUIRE(r->inputs.size() == 2);
    REQUIRE(r->inputs[1]->is_constant());
    CHECK(r->inputs[1]->constant->to_vector<int64_t>() == std::vector<int64_t>{3, 2});
    CHECK(r->attrs.all().empty());
  }
  {  // BatchNormalization-6: is_test and spatial=1 are dropped; spatial=0 is refused.
    OnnxModel m(6);
    m.input("x", TP::FLOAT, {"1", "2", "3", "3"});
    for (const char* p : {"s", "b", "mu", "var"}) m.initializer(p, {1, 1}, {2});
    auto* n = m.node("BatchNormalization", "bn", {"x", "s", "b", "mu", "var"}, {"y"});
    OnnxModel::attr_int(n, "is_test", 1);
    OnnxModel::attr_int(n, "spatial", 1);
    m.output("y");
    Graph g = m.parse();
    CHECK(!g.find_node("bn")->attrs.has("is_test"));
    CHECK(!g.find_node("bn")->attrs.has("spatial"));
    m.g().mutable_node(0)->mutable_attribute(1)->set_i(0);
    require_error([&] { m.parse(); }, ErrorCode::Unsupported, {"'bn'", "spatial=0"});
  }
  {  // Clip-6: min/max stay attributes (the Clip schema reads both forms).
    OnnxModel m(6);
    m.input("x", TP::FLOAT, {"4"});
    auto* n = m.node("Clip", "clip", {"x"}, {"y"});
    auto* a = n->add_attribute();
    a->set_name("min");
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(-1.f);
    m.output("y");
    Graph g = m.parse();
    CHECK(g.find_node("clip")->attrs.get_float("min", 0) == -1.f);
  }
  {  // Add-6 with broadcast: suffix broadcasting is numpy's; an explicit axis is refused.
    OnnxModel m(6);
    m.input("x", TP::FLOAT, {"2", "3"});
    m.initializer("b", {1, 2, 3}, {3});
    auto* n = m.node("Add", "add", {"x", "b"}, {"y"});
    OnnxModel::attr_int(n, "broadcast", 1);
    m.output("y");
    CHECK(m.parse().find_node("add")->attrs.all().empty());
    OnnxModel::attr_int(n, "axis", 0);
    require_error([&] { m.parse(); }, ErrorCode::Unsupported, {"'add'", "broadcast"});
  }
}
