// The reference kernels against the ONNX backend conformance cases in
// shared/data/onnx-node-tests: every case made only of the ops in ops/ must load, infer to the
// expected output shapes, and reproduce the expected outputs; the cases minfer declines
// (dtypes it does not have, training mode, non-tensor inputs) must fail with minfer::Error.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "op_test_util.h"

using namespace minfer;
using namespace minfer::test;
namespace fs = std::filesystem;

namespace {

// clang-format off
const std::set<std::string> kOps{
    "Conv", "Gemm", "MatMul", "Relu", "Clip", "Sigmoid", "Add", "Sub", "Mul", "Div", "MaxPool",
    "AveragePool", "GlobalAveragePool", "BatchNormalization", "Softmax", "Flatten", "Reshape",
    "Transpose", "Concat", "Slice", "Pad", "Identity", "Shape", "Gather", "Unsqueeze",
    "ConvInteger", "MatMulInteger", "Less", "Where", "Max", "Exp", "ReduceMax", "ReduceSum",
    "CastLike", "Constant"};
// clang-format on

// Cases that may be declined, by a fragment of their name, and why.
// clang-format off
const std::vector<std::string> kDeclinable{
    "int16", "uint16", "uint32", "uint64",    // dtypes minfer does not have
    "training_mode",                          // BatchNormalization training outputs
    "identity_opt", "identity_sequence"};     // optional / sequence values
// clang-format on

bool declinable(const std::string& name) {
  for (const auto& f : kDeclinable)
    if (name.find(f) != std::string::npos) return true;
  return false;
}

// The op types of a case, from MANIFEST.tsv (column 4, comma-separated).
std::map<std::string, std::vector<std::string>> manifest(const fs::path& dir) {
  std::map<std::string, std::vector<std::string>> r;
  std::ifstream in(dir / "MANIFEST.tsv");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> cols;
    std::stringstream ss(line);
    for (std::string c; std::getline(ss, c, '\t');) cols.push_back(c);
    if (cols.size() < 4) continue;
    std::stringstream ops(cols[3]);
    for (std::string op; std::getline(ops, op, ',');) r[cols[0]].push_back(op);
  }
  return r;
}

bool equal_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// Runs one case; returns "" on success, else what went wrong. minfer::Error propagates.
std::string run_case(const fs::path& dir) {
  Graph g = load_onnx((dir / "model.onnx").string());
  fs::path data = dir / "test_data_set_0";
  std::map<const Value*, Tensor> values;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    Tensor t = load_tensor_pb((data / ("input_" + std::to_string(i) + ".pb")).string());
    values[g.inputs()[i]] = t;
  }
  g.infer_shapes();
  for (Value* v : g.values())
    if (v->constant) values[v] = *v->constant;
  for (Node* n : g.topo_order()) {
    std::vector<Tensor> in;
    for (Value* v : n->inputs) in.push_back(v ? values.at(v) : Tensor());
    const OpSchema& s = OpRegistry::global().get_op(n->domain, n->op_type);
    std::vector<Tensor> out = s.reference(*n, in);
    for (size_t i = 0; i < out.size(); ++i) values[n->outputs[i]] = out[i];
  }
  std::string problems;
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const Value* v = g.outputs()[i];
    Tensor want = load_tensor_pb((data / ("output_" + std::to_string(i) + ".pb")).string());
    const Tensor& got = values.at(v);
    std::string o = "output " + std::to_string(i) + ": ";
    // Inferred from the graph inputs' shapes (a Reshape's shape input is a graph input here,
    // so its output dims may be unknown): known dims must match.
    bool shape_ok = v->shape.rank() == want.rank();
    for (size_t d = 0; shape_ok && d < want.rank(); ++d)
      shape_ok = v->shape[d] < 0 || v->shape[d] == want.dim(d);
    if (!shape_ok)
      problems +=
          o + "inferred " + v->shape.to_string() + ", expected " + want.shape().to_string() + "; ";
    if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
      problems += o + "got " + got.to_string(4) + ", expected " + want.to_string(4) + "; ";
    } else if (got.dtype() == DType::f32) {
      // ONNX's own backend test tolerance (some expected outputs are stored rounded).
      double viol = max_violation(got, want, 1e-3, 1e-6);
      if (viol > 1.0) problems += o + "values differ (violation " + std::to_string(viol) + "); ";
    } else if (!equal_bytes(got, want)) {
      problems += o + "values differ: " + got.to_string(8) + " vs " + want.to_string(8) + "; ";
    }
  }
  return problems;
}

}  // namespace

TEST_CASE("Reference kernels pass the ONNX conformance cases of their ops", "[ops][onnx]") {
  fs::path root = data_dir() / "onnx-node-tests";
  auto cases = manifest(root);
  REQUIRE(cases.size() > 100);
  int passed = 0, declined = 0;
  for (const auto& [name, ops] : cases) {
    bool ours = true;
    for (const auto& op : ops) ours = ours && kOps.count(op);
    if (!ours) continue;
    INFO("case " << name);
    std::string problems;
    try {
      problems = run_case(root / name);
    } catch (const Error& e) {
      INFO("declined: " << e.what());
      CHECK(declinable(name));
      ++declined;
      continue;
    }
    CHECK(problems == "");
    CHECK_FALSE(declinable(name));  // a supported case on the decline list: update the list
    ++passed;
  }
  INFO(passed << " passed, " << declined << " declined");
  CHECK(passed >= 167);
}
