// Internal pieces of int8 quantization (docs/int8.md): the QDQ folding pass of the default
// pipeline, and helpers shared by quantize_graph and the folding pass.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graph/pass.h"
#include "minfer/calibrate.h"

namespace minfer::passes {

// Folds QuantizeLinear/DequantizeLinear patterns into com.minfer int8 ops, fuses QConv + QAdd,
// moves the int8 region to NHWC and drops redundant Q/DQ pairs. Must run before constant
// folding (which would turn the weights' DequantizeLinear into floats).
bool fold_qdq(Graph& g, PassLog& log);

// The steps of fold_qdq, separately (tests and `minfer inspect`).
// Concat -> Q as Concat(Q(input)...) -> Q: the same values (Q is element-wise), so that each
// input's producer folds with its own Q (a branch conv writes int8) and the Concat joins int8.
bool quantize_concat_inputs(Graph& g, PassLog& log);
bool fold_qdq_patterns(Graph& g, PassLog& log);    // DQ -> op -> Q into int8 ops
bool fuse_qconv_residual(Graph& g, PassLog& log);  // QConv -> QAdd into QConv(residual)
bool int8_to_nhwc(Graph& g, PassLog& log);         // int8 spatial ops to NHWC
bool remove_qdq_pairs(Graph& g, PassLog& log);     // Q(DQ(q)) with equal parameters -> q
bool uint8_to_int8(Graph& g, PassLog& log);        // uint8 Q -> DQ pairs as int8 (zero point - 128)

}  // namespace minfer::passes

namespace minfer::quant {

// A DequantizeLinear/QuantizeLinear's parameters, when they are constants.
struct QdqParams {
  std::vector<float> scale;
  std::vector<int32_t> zero_point;  // as many as scale (0 when absent)
  int64_t axis = -1;                // -1 per tensor, else the normalized axis
  DType dtype = DType::i8;          // the quantized type
  bool per_tensor() const { return scale.size() == 1; }
};

// The parameters of a QuantizeLinear or DequantizeLinear node with constant scale and zero
// point, or nothing.
std::optional<QdqParams> qdq_params(const Node& n);
// The DequantizeLinear node producing `v` (with constant parameters), or null.
Node* dq_producer(const Value* v);

// A constant named `base` (or base_1, ... when taken).
Value* add_unique_constant(Graph& g, const std::string& base, Tensor t);

}  // namespace minfer::quant
