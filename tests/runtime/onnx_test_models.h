// Small ONNX models built with libonnx's protobuf classes, for the [io] import/export tests.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "io_test_util.h"

namespace minfer::test {

struct OnnxModel {
  onnx::ModelProto m;

  explicit OnnxModel(int64_t opset = 17) {
    m.set_ir_version(8);
    auto* op = m.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    m.mutable_graph()->set_name("test_graph");
  }
  onnx::GraphProto& g() { return *m.mutable_graph(); }

  // dims: "3" = fixed, "N" = symbolic, "" = unknown.
  onnx::ValueInfoProto* input(const std::string& name, int32_t elem_type,
                              const std::vector<std::string>& dims) {
    auto* v = g().add_input();
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem_type);
    auto* shape = tt->mutable_shape();
    for (const auto& d : dims) {
      auto* dim = shape->add_dim();
      if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0])))
        dim->set_dim_value(std::stoll(d));
      else if (!d.empty())
        dim->set_dim_param(d);
    }
    return v;
  }
  void output(const std::string& name, int32_t elem_type = onnx::TensorProto::FLOAT) {
    auto* v = g().add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
  }
  onnx::TensorProto* initializer(const std::string& name, const std::vector<float>& values,
                                 const std::vector<int64_t>& dims) {
    auto* t = g().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4));
    return t;
  }
  onnx::NodeProto* node(const std::string& op, const std::string& name,
                        const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& domain = "") {
    auto* n = g().add_node();
    n->set_op_type(op);
    n->set_name(name);
    if (!domain.empty()) n->set_domain(domain);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return n;
  }
  static onnx::AttributeProto* attr_int(onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
    return a;
  }
  std::string bytes() const {
    std::string s;
    REQUIRE(m.SerializeToString(&s));
    return s;
  }
  Graph parse(const std::string& base_dir = "") const {
    return parse_onnx(bytes(), base_dir, "test.onnx");
  }
};

}  // namespace minfer::test
