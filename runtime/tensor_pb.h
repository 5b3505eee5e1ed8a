// ONNX TensorProto <-> minfer::Tensor, shared by ONNX import/export and .pb tensor files
// (private to the library).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>

#include "minfer/tensor.h"

namespace minfer::detail {

// The ONNX name of an element type ("DOUBLE", "FLOAT8E4M3FN", ...), for messages.
std::string onnx_type_name(int32_t onnx_type);
// Maps an ONNX element type to a DType. Throws Unsupported "<what>: element type DOUBLE is not
// supported ..." for the types minfer does not have.
DType dtype_from_onnx(int32_t onnx_type, const std::string& what);
int32_t dtype_to_onnx(DType dtype);

// Converts a TensorProto (raw_data, typed fields, or external data resolved inside `base_dir`,
// "" = current directory). `what` names the tensor in errors, e.g. "m.onnx: initializer 'w'".
// Sizes are validated against the dims before anything is allocated.
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir,
                         const std::string& what);
// Fills `proto` with `t` as raw_data (little-endian, like the host).
void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto* proto);

}  // namespace minfer::detail
