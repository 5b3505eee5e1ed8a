// A program that adds its own op to minfer and runs a graph that uses it:
//   custom_op_example [--save swish.onnx]
// With --save it also writes the graph as an ONNX model, which the minfer command line runs
// once the plugin supplies the op: minfer run --plugin libminfer_example_plugin.so swish.onnx
#include <cmath>
#include <cstdio>
#include <string>

#include "minfer/minfer.h"
#include "swish.h"

int main(int argc, char** argv) {
  try {
    // 1. Register the op, exactly as the plugin does (once per process).
    example::register_swish(minfer::OpRegistry::global());

    // 2. Build a graph using it next to a built-in op: Y = Swish(X, beta = 1.5) + X.
    minfer::Graph g;
    minfer::GraphBuilder b(g);
    minfer::Value* x = b.input("X", minfer::DType::f32, minfer::Shape{2, 4});
    minfer::Attributes attrs;
    attrs.set("beta", 1.5f);
    minfer::Value* s = b.op("Swish", "swish", {x}, attrs, example::kDomain);
    b.output(b.add("add", s, x));
    if (argc == 3 && std::string(argv[1]) == "--save") minfer::save_onnx(g, argv[2]);

    // 3. Run it.
    minfer::Session session(std::move(g));
    std::vector<float> values = {-3, -1, -0.5f, 0, 0.5f, 1, 2, 4};
    minfer::Tensor in = minfer::Tensor::from_vector(values, minfer::Shape{2, 4});
    minfer::Tensor out = session.run_one(in);

    int wrong = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      float v = values[i];
      float want = v / (1.0f + std::exp(-1.5f * v)) + v;
      float got = out.data<float>()[i];
      std::printf("x = %5.2f  y = %.6f\n", v, got);
      wrong += std::fabs(got - want) > 1e-6f * (1 + std::fabs(want));
    }
    if (wrong) std::fprintf(stderr, "%d values differ from the formula\n", wrong);
    return wrong ? 1 : 0;
  } catch (const minfer::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
