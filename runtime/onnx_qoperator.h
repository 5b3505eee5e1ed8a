// ONNX Runtime's QOperator form of quantized models, imported as its QDQ equivalent (private
// to the ONNX importer).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "minfer/graph.h"

namespace minfer::detail {

// A node as the importer read it.
struct ImportedNode {
  std::string domain;  // normalized: "" for ai.onnx
  std::string op;
  std::string name;
  std::vector<Value*> inputs;  // nullptr for absent optional inputs
  Attributes attrs;
  std::vector<std::string> outputs;
  std::string where;  // "<file>: node QLinearConv 'name'", for messages
};

// Rewrites QLinearConv, QLinearMatMul and the com.microsoft QGemm, QLinearAdd, QLinearMul and
// QLinearGlobalAveragePool into DequantizeLinear on each quantized input, the float op (which
// keeps the node's name), and QuantizeLinear on the output: the same arithmetic, in the form
// minfer's int8 passes fold into integer ops. `fresh_name(base)` returns an unused value name.
// Returns false (adding nothing) for other ops; throws Unsupported / InvalidModel naming the
// node for forms it cannot express.
bool expand_qoperator(Graph& g, const ImportedNode& n,
                      const std::function<std::string(const std::string&)>& fresh_name);

}  // namespace minfer::detail
