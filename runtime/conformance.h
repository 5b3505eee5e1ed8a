// The ONNX backend conformance runner: runs one test case (a folder with model.onnx and
// test_data_set_*/input_K.pb, output_K.pb) through a Session and compares with ONNX's
// tolerances. Shared by `minfer conformance` and the tests.
#pragma once

#include <string>
#include <vector>

#include "minfer/session.h"

namespace minfer {

enum class CaseStatus { Pass, Fail, Unsupported };
const char* case_status_name(CaseStatus s);  // "pass", "fail", "unsupported"

struct ConformanceOptions {
  double rtol = 1e-3;  // ONNX's backend test tolerances: |got - want| <= atol + rtol * |want|
  double atol = 1e-7;
  SessionOptions session;
};

struct CaseResult {
  std::string name;  // the folder's name, e.g. "test_conv_with_strides_padding"
  std::string dir;
  CaseStatus status = CaseStatus::Fail;
  // Empty on a pass; else what went wrong: the minfer::Error message (unsupported, or a fail
  // when the error is not ErrorCode::Unsupported), or which output differs and how.
  std::string reason;
  double max_abs_error = 0;  // largest |got - want| over the floating-point outputs
  double max_violation = 0;  // largest |got - want| / (atol + rtol * |want|); <= 1 passes
  int data_sets = 0;         // test_data_set_* folders run
  double seconds = 0;
};

// Runs one case. Never throws for anything about the case (bad files, unsupported ops or
// dtypes, wrong results): that is the result's status and reason.
CaseResult run_conformance_case(const std::string& dir, const ConformanceOptions& options = {});

// The case folders under `path`: `path` itself when it holds model.onnx, else its
// subfolders that do, sorted by name. Throws InvalidArgument when there are none.
std::vector<std::string> find_conformance_cases(const std::string& path);

}  // namespace minfer
