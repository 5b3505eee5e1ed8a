// libFuzzer target for the ONNX loader: bytes -> parse_onnx -> Session (shape inference,
// passes, verify) -> a plan and one run on zero inputs when the inputs are small and static.
// Any outcome but success or minfer::Error (a crash, a sanitizer report, another exception,
// a hang) is a bug. Build: see fuzz/README.md.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "minfer/minfer.h"

namespace {

// Models whose inputs or planned arena are larger than this are planned but not run: a small
// file may validly describe gigabytes of activations (minfer's limit is 64 GiB per tensor),
// and allocating them would only test the machine.
constexpr int64_t kMaxRunElements = 1 << 16;
constexpr size_t kMaxRunArenaBytes = size_t{4} << 20;

void load_and_run(const std::string& bytes) {
  minfer::SessionOptions options;
  options.threads = 1;
  minfer::Session session(minfer::parse_onnx(bytes, "", "fuzz.onnx"), options);
  std::map<std::string, minfer::Shape> shapes;
  int64_t total = 0;
  for (const minfer::Value* v : session.graph().inputs()) {
    if (!v->shape_known || !v->shape.is_static()) return;
    total += v->shape.numel();
    if (total > kMaxRunElements) return;
    shapes[v->name] = v->shape;
  }
  if (session.plan_stats(shapes).arena_bytes > kMaxRunArenaBytes) return;
  minfer::NamedTensors inputs;
  for (const auto& [name, shape] : shapes)
    inputs[name] = minfer::Tensor(session.graph().find_value(name)->dtype, shape);
  session.run(inputs);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    load_and_run(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const minfer::Error&) {
    // A clear refusal: what the loader must do with bad input.
  }
  return 0;
}
