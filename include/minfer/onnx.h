// ONNX files: import into a Graph, export a Graph, and single TensorProto (.pb) files.
#pragma once

#include <string>

#include "minfer/graph.h"

namespace minfer {

// Loads an ONNX model file. External data files are resolved next to the model.
// Throws InvalidModel / Unsupported naming the file and node on malformed or unsupported input.
Graph load_onnx(const std::string& path);
// Parses a serialized ModelProto; `base_dir` locates external data ("" = current directory).
Graph parse_onnx(const std::string& bytes, const std::string& base_dir = "",
                 const std::string& source_name = "<memory>");
// Writes `g` as an ONNX model (custom-domain nodes keep their domain, with an opset import).
void save_onnx(const Graph& g, const std::string& path);
std::string serialize_onnx(const Graph& g);

// A single serialized TensorProto, as in the ONNX test data (input_0.pb).
Tensor load_tensor_pb(const std::string& path);
void save_tensor_pb(const Tensor& t, const std::string& path, const std::string& name = "");

}  // namespace minfer
