// Users' own ops: loading plugins (examples/custom_op and two broken ones), the loader's errors,
// and a model with an op that nobody registered.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "minfer/plugin.h"
#include "test_util.h"

namespace minfer::test {
namespace {

// The message of the Error that `f` throws (fails the test if it throws none).
template <typename F>
std::string error_of(F&& f, ErrorCode code) {
  try {
    f();
  } catch (const Error& e) {
    CHECK(e.code() == code);
    return e.what();
  }
  FAIL("no error thrown");
  return "";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST_CASE("load_plugin reports a missing file and a file that is not a library", "[plugin]") {
  OpRegistry registry;
  std::string m = error_of([&] { load_plugin("/nonexistent/libnothing.so", registry); },
                           ErrorCode::InvalidArgument);
  CHECK(contains(m, "/nonexistent/libnothing.so"));
  CHECK(contains(m, "no such file"));

  auto bogus = temp_dir("plugin_bogus") / "libbogus.so";
  std::ofstream out(bogus);
  for (int i = 0; i < 20; ++i) out << "this is not a shared library\n";
  out.close();
  m = error_of([&] { load_plugin(bogus.string(), registry); }, ErrorCode::InvalidArgument);
  CHECK(contains(m, bogus.string()));
  CHECK(contains(m, "cannot load"));
  CHECK(contains(m, "invalid ELF header"));  // the loader's own reason (dlerror)
  CHECK(registry.ops().empty());
}

#ifdef MINFER_PLUGIN_PATH

Node swish_node(float beta) {
  Node n;
  n.name = "s";
  n.op_type = "Swish";
  n.domain = "com.example";
  n.attrs.set("beta", beta);
  return n;
}

TEST_CASE("load_plugin registers the example plugin's op and kernel", "[plugin]") {
  OpRegistry registry;
  load_plugin(MINFER_PLUGIN_PATH, registry);
  const OpSchema* op = registry.find_op("com.example", "Swish");
  REQUIRE(op != nullptr);
  REQUIRE(registry.kernels("com.example", "Swish").size() == 1);

  Tensor x = Tensor::from_vector<float>({-2, 0, 1, 3}, Shape{4});
  Node node = swish_node(2.0f);
  Tensor y = op->reference(node, {x}).at(0);
  for (int i = 0; i < 4; ++i) {
    float v = x.data<float>()[i];
    CHECK(y.data<float>()[i] == Approx(v / (1 + std::exp(-2 * v))));
  }
}

TEST_CASE("load_plugin refuses a plugin whose op is already registered", "[plugin]") {
  OpRegistry registry;
  load_plugin(MINFER_PLUGIN_PATH, registry);
  std::string m =
      error_of([&] { load_plugin(MINFER_PLUGIN_PATH, registry); }, ErrorCode::InvalidArgument);
  CHECK(contains(m, MINFER_PLUGIN_PATH));
  CHECK(contains(m, "com.example:Swish"));
  CHECK(contains(m, "already registered"));
}

TEST_CASE("load_plugin refuses a plugin without an entry point", "[plugin]") {
  OpRegistry registry;
  std::string m = error_of([&] { load_plugin(MINFER_TEST_PLUGIN_NOENTRY_PATH, registry); },
                           ErrorCode::InvalidArgument);
  CHECK(contains(m, MINFER_TEST_PLUGIN_NOENTRY_PATH));
  CHECK(contains(m, "minfer_plugin_register"));
  CHECK(contains(m, "MINFER_PLUGIN"));
}

TEST_CASE("load_plugin refuses a plugin built for another ABI version", "[plugin]") {
  OpRegistry registry;
  std::string m = error_of([&] { load_plugin(MINFER_TEST_PLUGIN_BADABI_PATH, registry); },
                           ErrorCode::InvalidArgument);
  CHECK(contains(m, MINFER_TEST_PLUGIN_BADABI_PATH));
  CHECK(contains(m, "ABI version 999"));
  CHECK(contains(m, "version " + std::to_string(MINFER_PLUGIN_ABI_VERSION)));
  CHECK(registry.ops().empty());
}

// Loading into the global registry lasts for the rest of the process and would change what
// other tests see (e.g. the op count of `minfer ops`), so this test runs in a child process:
// the test binary itself, running only the hidden test below.
TEST_CASE("A plugin op runs in a Session built in code and from an ONNX file",
          "[plugin][session]") {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string command = "'" + self + "' -r compact 'plugin: Session child'";
  REQUIRE(std::system(command.c_str()) == 0);
}

TEST_CASE("plugin: Session child", "[.]") {
  load_plugin(MINFER_PLUGIN_PATH);
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("X", DType::f32, Shape{2, 3});
  Attributes a;
  a.set("beta", 0.5f);
  b.output(b.op("Swish", "swish", {x}, a, "com.example"));
  const auto path = temp_dir("plugin_session") / "swish.onnx";
  save_onnx(g, path.string());

  Tensor in = Tensor::from_vector<float>({-3, -1, 0, 0.5f, 2, 5}, Shape{2, 3});
  Session built(std::move(g));
  Session loaded = Session::from_file(path.string());
  for (const Session* s : {&built, &loaded}) {
    Tensor y = s->run_one(in);
    REQUIRE(y.shape() == Shape{2, 3});
    for (int i = 0; i < 6; ++i) {
      float v = in.data<float>()[i];
      CHECK(y.data<float>()[i] == Approx(v / (1 + std::exp(-0.5f * v))));
    }
  }
}

#endif  // MINFER_PLUGIN_PATH

TEST_CASE("A model with an op nobody registered names the op and domain and suggests --plugin",
          "[plugin][session]") {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("X", DType::f32, Shape{4});
  b.output(b.op("Frobnicate", "frob", {x}, {}, "com.nobody"));
  const auto path = temp_dir("plugin_unknown") / "unknown.onnx";
  save_onnx(g, path.string());
  std::string m = error_of([&] { Session::from_file(path.string()); }, ErrorCode::Unsupported);
  CHECK(contains(m, "Frobnicate"));
  CHECK(contains(m, "com.nobody"));
  CHECK(contains(m, "--plugin"));
}

}  // namespace
}  // namespace minfer::test
