// Helpers for the op tests: build a one-node graph, run an op's inference or reference
// kernel directly through the registry, and check errors.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "test_util.h"

namespace minfer::test {

inline Attributes attrs(std::initializer_list<std::pair<std::string, Attribute>> list) {
  Attributes a;
  for (const auto& [k, v] : list) a.set(k, v);
  return a;
}

inline Tensor f32(Shape s, std::vector<float> v) { return Tensor::from_vector<float>(v, s); }
inline Tensor i64(Shape s, std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(v, s); }
inline Tensor i32(Shape s, std::vector<int32_t> v) { return Tensor::from_vector<int32_t>(v, s); }
inline Tensor iota(Shape s, float start = 0.f) {
  Tensor t(DType::f32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + float(i);
  return t;
}

inline TensorInfo info(DType t, Shape s) {
  TensorInfo i;
  i.present = true;
  i.dtype = t;
  i.shape = std::move(s);
  return i;
}
inline TensorInfo info(Shape s) { return info(DType::f32, std::move(s)); }
// The tensor must outlive the inference call (TensorInfo keeps a pointer).
inline TensorInfo const_info(const Tensor& t) {
  TensorInfo i = info(t.dtype(), t.shape());
  i.constant = &t;
  return i;
}
inline TensorInfo absent() { return TensorInfo{}; }

inline Shape sym(std::vector<int64_t> dims, std::vector<std::string> names) {
  Shape s(std::move(dims));
  s.symbols = std::move(names);
  return s;
}

// One node of `op` named "n1" whose inputs are graph inputs (nullptr where absent).
struct OneNode {
  Graph g;
  Node* node = nullptr;
  OneNode(const std::string& op, const std::vector<TensorInfo>& inputs, Attributes a,
          size_t num_outputs) {
    std::vector<Value*> vs;
    for (size_t i = 0; i < inputs.size(); ++i) {
      std::string name = "x";
      name += std::to_string(i);
      vs.push_back(inputs[i].present ? g.add_input(name, inputs[i].dtype, inputs[i].shape)
                                     : nullptr);
    }
    node = g.add_node(op, "n1", vs, num_outputs, std::move(a));
  }
};

inline const OpSchema& schema(const std::string& op) { return OpRegistry::global().get_op("", op); }

// Runs the op's shape inference; returns the inferred outputs.
inline std::vector<TensorInfo> infer(const std::string& op, const std::vector<TensorInfo>& inputs,
                                     Attributes a = {}, size_t num_outputs = 1) {
  OneNode n(op, inputs, std::move(a), num_outputs);
  InferContext ctx(*n.node, inputs);
  schema(op).infer(ctx);
  return ctx.outputs();
}

// Runs the op's reference kernel (absent inputs as undefined tensors).
inline std::vector<Tensor> run_ref(const std::string& op, const std::vector<Tensor>& inputs,
                                   Attributes a = {}, size_t num_outputs = 1) {
  std::vector<TensorInfo> infos;
  for (const Tensor& t : inputs)
    infos.push_back(t.defined() ? info(t.dtype(), t.shape()) : absent());
  OneNode n(op, infos, std::move(a), num_outputs);
  return schema(op).reference(*n.node, inputs);
}
inline Tensor ref1(const std::string& op, const std::vector<Tensor>& inputs, Attributes a = {}) {
  auto out = run_ref(op, inputs, std::move(a));
  REQUIRE(out.size() == 1);
  return out[0];
}

template <typename T>
void require_values(const Tensor& t, Shape shape, std::vector<T> expected) {
  INFO("got " << t.to_string(64));
  REQUIRE(t.shape() == shape);
  REQUIRE(t.to_vector<T>() == expected);
}
inline void require_close_to(const Tensor& t, Shape shape, std::vector<float> expected,
                             double tol = 1e-5) {
  INFO("got " << t.to_string(64));
  REQUIRE(t.shape() == shape);
  require_close(t, f32(shape, expected), tol, tol);
}

// Runs f, which must throw minfer::Error with `code` and a message naming the node "n1" and
// containing `fragment`.
template <typename F>
void require_error(F&& f, ErrorCode code, const std::string& fragment) {
  try {
    f();
  } catch (const Error& e) {
    INFO("message: " << e.what());
    CHECK(e.code() == code);
    CHECK(std::string(e.what()).find("'n1'") != std::string::npos);
    CHECK(std::string(e.what()).find(fragment) != std::string::npos);
    return;
  }
  FAIL("expected an error containing '" << fragment << "'");
}

inline std::string shape_str(const TensorInfo& i) { return i.shape.to_string(); }

}  // namespace minfer::test
