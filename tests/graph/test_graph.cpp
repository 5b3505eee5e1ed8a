#include <catch2/catch.hpp>

#include "minfer/minfer.h"

using namespace minfer;

namespace {
Graph small_graph() {
  Graph g;
  GraphBuilder b(g);
  Value* x = b.input("x", DType::f32, Shape{-1, 4});
  x->shape.symbols = {"N", ""};
  Value* w = b.constant("w", Tensor(DType::f32, Shape{3, 4}));
  Value* bias = b.constant("b", Tensor(DType::f32, Shape{3}));
  Value* y = b.linear("fc", x, w, bias);
  Value* r = b.relu("relu", y);
  b.output(r);
  return g;
}
}  // namespace

TEST_CASE("builder, shape inference with a symbolic batch, dump", "[graph]") {
  Graph g = small_graph();
  g.infer_shapes();
  verify(g);
  Value* out = g.outputs()[0];
  REQUIRE(out->shape.rank() == 2);
  REQUIRE(out->shape[0] < 0);
  REQUIRE(out->shape[1] == 3);
  std::string text = g.dump();
  REQUIRE(text.find("Gemm[fc]") != std::string::npos);
  REQUIRE(text.find("Relu[relu]") != std::string::npos);
}

TEST_CASE("topological order follows dependencies, not insertion order", "[graph]") {
  Graph g;
  Value* x = g.add_input("x", DType::f32, Shape{2});
  Value* late = g.new_value("late");
  // The consumer is added before its producer.
  Node* consumer = g.add_node("Relu", "consumer", {late});
  Node* producer = g.add_node_named("Relu", "producer", {x}, {"late"});
  g.add_output(consumer->outputs[0]);
  auto order = g.topo_order();
  REQUIRE(order.size() == 2);
  REQUIRE(order[0] == producer);
  REQUIRE(order[1] == consumer);
  g.infer_shapes();
  verify(g);
}

TEST_CASE("verify rejects cycles, non-SSA outputs and undefined inputs", "[graph]") {
  SECTION("cycle") {
    Graph g;
    Value* a = g.new_value("a");
    Node* n1 = g.add_node_named("Relu", "n1", {a}, {"b"});
    g.add_node_named("Relu", "n2", {n1->outputs[0]}, {"a"});
    g.add_output(n1->outputs[0]);
    try {
      verify(g);
      FAIL("no error");
    } catch (const Error& e) {
      REQUIRE(e.code() == ErrorCode::InvalidModel);
      REQUIRE(std::string(e.what()).find("cycle") != std::string::npos);
    }
  }
  SECTION("value defined twice") {
    Graph g;
    Value* x = g.add_input("x", DType::f32, Shape{2});
    g.add_node_named("Relu", "n1", {x}, {"y"});
    REQUIRE_THROWS_AS(g.add_node_named("Relu", "n2", {x}, {"y"}), Error);
  }
  SECTION("input never produced") {
    Graph g;
    Value* ghost = g.new_value("ghost");
    Node* n = g.add_node("Relu", "n", {ghost});
    g.add_output(n->outputs[0]);
    try {
      verify(g);
      FAIL("no error");
    } catch (const Error& e) {
      REQUIRE(std::string(e.what()).find("ghost") != std::string::npos);
    }
  }
  SECTION("unknown op names the op and suggests --plugin") {
    Graph g;
    Value* x = g.add_input("x", DType::f32, Shape{2});
    Node* n = g.add_node("NoSuchOp", "mystery", {x}, 1, {}, "com.example");
    g.add_output(n->outputs[0]);
    try {
      verify(g);
      FAIL("no error");
    } catch (const Error& e) {
      REQUIRE(e.code() == ErrorCode::Unsupported);
      std::string m = e.what();
      REQUIRE(m.find("NoSuchOp") != std::string::npos);
      REQUIRE(m.find("com.example") != std::string::npos);
      REQUIRE(m.find("--plugin") != std::string::npos);
    }
  }
}

TEST_CASE("shape inference names the node that uses an unknown op", "[graph][errors]") {
  Graph g;
  Value* x = g.add_input("x", DType::f32, Shape{2});
  Node* n = g.add_node("NoSuchOp", "mystery", {x}, 1, {}, "com.example");
  g.add_output(n->outputs[0]);
  REQUIRE_THROWS_WITH(g.infer_shapes(), Catch::Contains("node 'mystery'") &&
                                            Catch::Contains("NoSuchOp") &&
                                            Catch::Contains("--plugin"));
}

TEST_CASE("editing: replace uses and remove a node", "[graph]") {
  Graph g = small_graph();
  Node* relu = g.find_node("relu");
  REQUIRE(relu);
  Value* fc_out = relu->inputs[0];
  g.replace_all_uses(relu->outputs[0], fc_out);
  g.remove_node(relu);
  g.remove_unused_values();
  g.infer_shapes();
  verify(g);
  REQUIRE(g.node_count() == 1);
  REQUIRE(g.outputs()[0] == fc_out);
}
