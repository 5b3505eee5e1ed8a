#include "runtime/conformance.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "minfer/onnx.h"
#include "runtime/half.h"

namespace minfer {

namespace fs = std::filesystem;

const char* case_status_name(CaseStatus s) {
  switch (s) {
    case CaseStatus::Pass:
      return "pass";
    case CaseStatus::Fail:
      return "fail";
    case CaseStatus::Unsupported:
      return "unsupported";
  }
  return "?";
}

namespace {

double float_at(const Tensor& t, int64_t i) {
  if (t.dtype() == DType::f32) return t.data<float>()[i];
  return half_to_float(t.data<Half>()[i].bits);  // FLOAT16 outputs
}

// The test_data_set_* folders of a case, sorted.
std::vector<fs::path> data_sets(const fs::path& dir) {
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  return sets;
}

fs::path numbered(const fs::path& set, const char* kind, size_t k) {
  return set / (std::string(kind) + "_" + std::to_string(k) + ".pb");
}

class CaseRunner {
 public:
  CaseRunner(CaseResult& r, const ConformanceOptions& o) : r_(r), o_(o) {}

  void run() {
    const fs::path dir(r_.dir);
    Graph g = load_onnx((dir / "model.onnx").string());
    // Names in the model's order: input_K.pb / output_K.pb follow the graph's lists.
    std::vector<std::string> inputs, outputs;
    for (const Value* v : g.inputs()) inputs.push_back(v->name);
    for (const Value* v : g.outputs()) outputs.push_back(v->name);
    Session session(std::move(g), o_.session);

    const auto sets = data_sets(dir);
    check(!sets.empty(), ErrorCode::InvalidArgument,
          r_.dir + ": no test_data_set_* folder (not an ONNX backend test case)");
    std::string problems;
    for (const fs::path& set : sets) {
      NamedTensors feed;
      for (size_t k = 0; k < inputs.size(); ++k)
        feed[inputs[k]] = load_tensor_pb(numbered(set, "input", k).string());
      check(!fs::exists(numbered(set, "input", inputs.size())), ErrorCode::InvalidModel,
            set.string() + ": has more input files than the model has inputs (" +
                std::to_string(inputs.size()) + ")");
      NamedTensors got = session.run(feed);
      for (size_t k = 0; k < outputs.size(); ++k) {
        Tensor want = load_tensor_pb(numbered(set, "output", k).string());
        std::string p = compare(got.at(outputs[k]), want);
        if (!p.empty())
          problems += set.filename().string() + " output " + std::to_string(k) + " '" + outputs[k] +
                      "': " + p + "; ";
      }
      ++r_.data_sets;
    }
    if (problems.empty()) {
      r_.status = CaseStatus::Pass;
    } else {
      r_.status = CaseStatus::Fail;
      r_.reason = problems.substr(0, problems.size() - 2);
    }
  }

 private:
  // "" when `got` matches `want` (ONNX's rule: same dtype and shape; floats within
  // atol + rtol * |want|, NaN matching NaN; everything else exactly), else what differs.
  std::string compare(const Tensor& got, const Tensor& want) {
    if (got.dtype() != want.dtype())
      return std::string("dtype ") + dtype_name(got.dtype()) + ", expected " +
             dtype_name(want.dtype());
    if (got.shape() != want.shape())
      return "shape " + got.shape().to_string() + ", expected " + want.shape().to_string();
    if (got.dtype() != DType::f32 && got.dtype() != DType::f16) {
      if (std::memcmp(got.raw(), want.raw(), got.nbytes()) == 0) return "";
      return "values differ: got " + got.to_string(8) + ", expected " + want.to_string(8);
    }
    double worst_abs = 0, worst_viol = 0;
    int64_t worst_at = -1, bad = 0;
    for (int64_t i = 0; i < got.numel(); ++i) {
      const double a = float_at(got, i), b = float_at(want, i);
      if (std::isnan(a) && std::isnan(b)) continue;
      if (a == b) continue;  // also equal infinities
      const double diff = std::abs(a - b);
      const double viol = std::isnan(diff) ? INFINITY : diff / (o_.atol + o_.rtol * std::abs(b));
      if (!(diff <= worst_abs)) worst_abs = std::isnan(diff) ? INFINITY : diff;
      if (viol > worst_viol) {
        worst_viol = viol;
        worst_at = i;
      }
      bad += viol > 1;
    }
    r_.max_abs_error = std::max(r_.max_abs_error, worst_abs);
    r_.max_violation = std::max(r_.max_violation, worst_viol);
    if (bad == 0) return "";
    std::ostringstream s;
    s << bad << " of " << got.numel() << " values out of tolerance (rtol " << o_.rtol << ", atol "
      << o_.atol << "); worst at flat index " << worst_at << ": got " << float_at(got, worst_at)
      << ", expected " << float_at(want, worst_at) << "; max abs error " << worst_abs;
    return s.str();
  }

  CaseResult& r_;
  const ConformanceOptions& o_;
};

}  // namespace

CaseResult run_conformance_case(const std::string& dir, const ConformanceOptions& options) {
  CaseResult r;
  r.dir = dir;
  r.name = fs::path(dir).filename().string();
  if (r.name.empty()) r.name = fs::path(dir).parent_path().filename().string();
  const auto t0 = std::chrono::steady_clock::now();
  try {
    CaseRunner(r, options).run();
  } catch (const Error& e) {
    r.status = e.code() == ErrorCode::Unsupported ? CaseStatus::Unsupported : CaseStatus::Fail;
    r.reason = std::string(error_code_name(e.code())) + ": " + e.what();
  } catch (const std::exception& e) {  // not minfer::Error: a bug in minfer
    r.status = CaseStatus::Fail;
    r.reason = std::string("unexpected exception (not minfer::Error): ") + e.what();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::vector<std::string> find_conformance_cases(const std::string& path) {
  const fs::path root(path);
  check(fs::is_directory(root), ErrorCode::InvalidArgument, "'" + path + "' is not a folder");
  if (fs::is_regular_file(root / "model.onnx")) return {root.string()};
  std::vector<std::string> cases;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory() && fs::is_regular_file(e.path() / "model.onnx"))
      cases.push_back(e.path().string());
  std::sort(cases.begin(), cases.end());
  check(!cases.empty(), ErrorCode::InvalidArgument,
        "'" + path + "' holds no ONNX test case (a folder with model.onnx)");
  return cases;
}

}  // namespace minfer
