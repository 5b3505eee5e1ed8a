// libFuzzer target for the ONNX loader: bytes -> parse_onnx -> Session (shape inference,
// passes at level 2, verify) -> plans and runs on nonzero inputs of a few shapes (symbolic
// dims set to 1, 2 and 3), under a memory limit that refuses large plans before allocating
// them. Any outcome but success or minfer::Error (a crash, a sanitizer report, another
// exception, a hang) is a bug. Build: see fuzz/README.md.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "minfer/minfer.h"

namespace {

// A small file may validly describe gigabytes of activations; planning refuses them
// (Error OutOfMemory) before allocating anything, which is itself under test.
constexpr size_t kMemoryLimit = size_t{64} << 20;
constexpr int64_t kMaxInputElements = 1 << 18;

// Deterministic nonzero values from the input's own bytes, so that a crash replays: floats
// in [-4, 4), integers in [-3, 3] (valid indices for small axes, and negative ones).
void fill(minfer::Tensor& t, const std::string& seed_bytes, uint32_t salt) {
  uint32_t h = 2166136261u ^ salt;
  for (char c : seed_bytes.substr(0, 64)) h = (h ^ uint8_t(c)) * 16777619u;
  auto next = [&] {
    h ^= h << 13;
    h ^= h >> 17;
    h ^= h << 5;
    return h;
  };
  for (int64_t i = 0; i < t.numel(); ++i) {
    const uint32_t r = next();
    switch (t.dtype()) {
      case minfer::DType::f32: t.data<float>()[i] = float(int32_t(r % 8192) - 4096) / 1024.f; break;
      case minfer::DType::i64: t.data<int64_t>()[i] = int64_t(r % 7) - 3; break;
      case minfer::DType::i32: t.data<int32_t>()[i] = int32_t(r % 7) - 3; break;
      case minfer::DType::i8: static_cast<int8_t*>(t.raw())[i] = int8_t(r); break;
      case minfer::DType::u8:
      case minfer::DType::boolean: static_cast<uint8_t*>(t.raw())[i] = uint8_t(r % 2); break;
      default: break;  // f16: zeros
    }
  }
}

void load_and_run(const std::string& bytes) {
  minfer::SessionOptions options;
  options.threads = 1;
  options.memory_limit = kMemoryLimit;
  minfer::Session session(minfer::parse_onnx(bytes, "", "fuzz.onnx"), options);
  for (int64_t dim : {1, 2, 3}) {
    minfer::NamedTensors inputs;
    int64_t total = 0;
    bool symbolic = false;
    for (const minfer::Value* v : session.graph().inputs()) {
      if (!v->shape_known) return;
      minfer::Shape shape = v->shape;
      for (size_t d = 0; d < shape.rank(); ++d)
        if (shape[d] < 0) {
          shape[d] = dim;
          symbolic = true;
        }
      total += shape.numel();
      if (total > kMaxInputElements) return;
      minfer::Tensor t(v->dtype, shape);
      fill(t, bytes, uint32_t(dim) * 977u + uint32_t(inputs.size()));
      inputs[v->name] = t;
    }
    session.run(inputs);
    if (!symbolic) return;  // one shape only
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool verbose = std::getenv("MINFER_FUZZ_VERBOSE") != nullptr;  // when replaying
  try {
    load_and_run(std::string(reinterpret_cast<const char*>(data), size));
    if (verbose) std::fprintf(stderr, "ok\n");
  } catch (const minfer::Error& e) {
    // A clear refusal: what the loader must do with bad input.
    if (verbose) std::fprintf(stderr, "refused: %s\n", e.what());
  }
  return 0;
}
