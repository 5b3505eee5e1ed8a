#include "onnx_test_models.h"

using namespace minfer;
using namespace minfer::test;

namespace {

bool attribute_equal(const Attribute& a, const Attribute& b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Tensor>)
          return tensors_equal(x, std::get<Tensor>(b));
        else
          return x == std::get<T>(b);
      },
      a);
}

// The same nodes (in topological order), attributes, constants, inputs and outputs.
void require_same_graph(const Graph& a, const Graph& b) {
  auto na = a.topo_order(), nb = b.topo_order();
  REQUIRE(na.size() == nb.size());
  for (size_t i = 0; i < na.size(); ++i) {
    INFO(na[i]->describe());
    CHECK(na[i]->name == nb[i]->name);
    CHECK(na[i]->op_type == nb[i]->op_type);
    CHECK(na[i]->domain == nb[i]->domain);
    REQUIRE(na[i]->inputs.size() == nb[i]->inputs.size());
    for (size_t k = 0; k < na[i]->inputs.size(); ++k) {
      const Value* x = na[i]->inputs[k];
      const Value* y = nb[i]->inputs[k];
      REQUIRE((x == nullptr) == (y == nullptr));
      if (x) CHECK(x->name == y->name);
    }
    REQUIRE(na[i]->outputs.size() == nb[i]->outputs.size());
    for (size_t k = 0; k < na[i]->outputs.size(); ++k)
      CHECK(na[i]->outputs[k]->name == nb[i]->outputs[k]->name);
    const auto& aa = na[i]->attrs.all();
    const auto& ab = nb[i]->attrs.all();
    REQUIRE(aa.size() == ab.size());
    for (const auto& [name, value] : aa) {
      INFO("attribute " << name);
      REQUIRE(ab.count(name));
      CHECK(attribute_equal(value, ab.at(name)));
    }
  }
  for (const Value* v : a.values()) {
    if (!v->is_constant() || v->uses.empty()) continue;
    INFO("constant " << v->name);
    const Value* w = b.find_value(v->name);
    REQUIRE(w);
    REQUIRE(w->is_constant());
    CHECK(tensors_equal(*v->constant, *w->constant));
  }
  REQUIRE(a.inputs().size() == b.inputs().size());
  for (size_t i = 0; i < a.inputs().size(); ++i) {
    CHECK(a.inputs()[i]->name == b.inputs()[i]->name);
    CHECK(a.inputs()[i]->dtype == b.inputs()[i]->dtype);
    CHECK(a.inputs()[i]->shape.to_string() == b.inputs()[i]->shape.to_string());
  }
  REQUIRE(a.outputs().size() == b.outputs().size());
  for (size_t i = 0; i < a.outputs().size(); ++i)
    CHECK(a.outputs()[i]->name == b.outputs()[i]->name);
}

// x[N,3,8,8] -> Conv -> Relu -> Reshape (constant shape) -> y, and
// xi[N,6] i32 -> com.minfer:MaxSumDiv3 (carrying an attribute of every kind) -> custom.
Graph small_graph() {
  Graph g;
  GraphBuilder b(g);
  Shape in{-1, 3, 8, 8};
  in.symbols = {"N", "", "", ""};
  Value* x = b.input("x", DType::f32, in);
  std::mt19937 rng(7);
  Value* w = b.constant("conv.weight", random_tensor(Shape{4, 3, 3, 3}, rng));
  Value* bias = b.constant("conv.bias", random_tensor(Shape{4}, rng));
  Value* c = b.conv("conv", x, w, bias, {1, 1}, {1, 1, 1, 1});
  Value* r = b.relu("relu", c);
  Value* shape = b.constant("shape", Tensor::from_vector<int64_t>({0, -1}, Shape{2}));
  b.output(b.op("Reshape", "flat", {r, shape}));
  // A shape that is known, with a symbolic batch: exported as value_info.
  c->shape = Shape{-1, 4, 8, 8};
  c->shape.symbols = {"N", "", "", ""};
  c->shape_known = true;

  Shape in2{-1, 6};
  in2.symbols = {"N", ""};
  Value* xi = b.input("xi", DType::i32, in2);
  Attributes attrs;
  attrs.set("i", int64_t{3});
  attrs.set("f", 0.5f);
  attrs.set("s", std::string("mode"));
  attrs.set("ints", std::vector<int64_t>{1, 2, 3});
  attrs.set("floats", std::vector<float>{0.25f, -1.f});
  attrs.set("strings", std::vector<std::string>{"a", "b"});
  attrs.set("t", Tensor::from_vector<int8_t>({-1, 1}, Shape{2}));
  b.output(b.op("MaxSumDiv3", "custom", {xi}, attrs, "com.minfer"));
  return g;
}

}  // namespace

TEST_CASE("onnx export: round trip keeps nodes, attributes and constants", "[io]") {
  Graph g = small_graph();
  Graph back = parse_onnx(serialize_onnx(g));
  require_same_graph(g, back);
  CHECK(back.opset_imports.at("") == 17);
  CHECK(back.opset_imports.at("com.minfer") == 1);
  CHECK(back.inputs()[0]->shape.to_string() == "[N,3,8,8]");

  onnx::ModelProto m;
  REQUIRE(m.ParseFromString(serialize_onnx(g)));
  CHECK(m.ir_version() == 8);
  CHECK(m.graph().initializer_size() == 3);
  for (const auto& init : m.graph().initializer()) CHECK(init.has_raw_data());
  // value_info: the shape the graph knows for "conv" (symbolic batch as dim_param), and what
  // the op schemas infer for the others; graph outputs always carry a type and shape.
  const onnx::ValueInfoProto* conv = nullptr;
  for (const auto& vi : m.graph().value_info())
    if (vi.name() == "conv") conv = &vi;
  REQUIRE(conv);
  CHECK(conv->type().tensor_type().shape().dim(0).dim_param() == "N");
  CHECK(conv->type().tensor_type().shape().dim(1).dim_value() == 4);
  const auto& out = m.graph().output(0);
  CHECK(out.name() == "flat");
  CHECK(out.type().tensor_type().elem_type() == onnx::TensorProto::FLOAT);
  CHECK(out.type().tensor_type().has_shape());
  const onnx::NodeProto* custom = nullptr;
  for (const auto& n : m.graph().node())
    if (n.domain() == "com.minfer") custom = &n;
  REQUIRE(custom);
  CHECK(custom->attribute_size() == 7);
  const auto& s = m.graph().output(1);
  CHECK(s.type().tensor_type().elem_type() == onnx::TensorProto::INT64);
  CHECK(s.type().tensor_type().shape().dim(0).dim_param() == "N");
}

TEST_CASE("onnx export: conformance models survive load -> save -> load", "[io]") {
  auto dir = temp_dir("onnx_export_roundtrip");
  for (const char* name :
       {"test_basic_conv_with_padding", "test_batchnorm_example", "test_gemm_all_attributes",
        "test_qlinearconv", "test_reshape_reduced_dims", "test_softmax_axis_1",
        "test_clip_default_int8_inbounds"}) {
    INFO(name);
    Graph g = load_onnx((data_dir() / "onnx-node-tests" / name / "model.onnx").string());
    auto path = (dir / (std::string(name) + ".onnx")).string();
    save_onnx(g, path);
    Graph back = load_onnx(path);
    require_same_graph(g, back);
    CHECK(back.opset_imports == g.opset_imports);
  }
}

TEST_CASE("onnx export: onnx.checker accepts what we write", "[io][python]") {
  auto dir = temp_dir("onnx_export_checker");
  std::string paths = "'" + (dir / "small.onnx").string() + "'";
  save_onnx(small_graph(), (dir / "small.onnx").string());
  // Imported models: graph outputs get their type and shape from the op schemas.
  for (std::string name : {"test_gemm_all_attributes", "test_batchnorm_example"}) {
    Graph g = load_onnx((data_dir() / "onnx-node-tests" / name / "model.onnx").string());
    save_onnx(g, (dir / (name + ".onnx")).string());
    paths += " '" + (dir / (name + ".onnx")).string() + "'";
  }
  CHECK(run_python("check_onnx.py", paths) == 0);
}

TEST_CASE("onnx export: errors", "[io]") {
  Graph g = small_graph();
  require_error([&] { save_onnx(g, "/nonexistent-dir/x.onnx"); }, ErrorCode::InvalidArgument,
                {"/nonexistent-dir/x.onnx"});
}
