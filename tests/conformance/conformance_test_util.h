// Shared by the [conformance] tests: the generated opset cases (made once per test run),
// running the `minfer` command line, and the CIFAR-10 JPEGs that models quantized by ONNX
// Runtime are checked on.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "cli_test_util.h"
#include "repo_data.h"
#include "runtime/conformance.h"
#include "runtime/io_test_util.h"

namespace minfer::test {

// The cases a tests/python script writes into a folder, made on first use, once per script
// and process (ctest runs test cases in parallel processes).
inline std::filesystem::path generated_cases(const std::string& script) {
  static std::map<std::string, std::filesystem::path> dirs;
  std::filesystem::path& dir = dirs[script];
  if (dir.empty()) {
    const std::filesystem::path d =
        temp_dir(std::filesystem::path(script).stem().string() + "_" + std::to_string(getpid()));
    REQUIRE(run_python(script, "'" + d.string() + "' >/dev/null") == 0);
    dir = d;
  }
  return dir;
}
inline std::filesystem::path generated_opset_cases() {
  return generated_cases("make_opset_cases.py");
}
inline std::filesystem::path generated_zoo_cases() { return generated_cases("make_zoo_cases.py"); }

// The tolerance of the generated cases against ONNX Runtime: |got - want| <= 1e-5 + 1e-4 *
// |want|, at optimization level `level`.
inline ConformanceOptions tight_options(int level, int threads = 0) {
  ConformanceOptions options;
  options.rtol = 1e-4;
  options.atol = 1e-5;
  options.session.threads = threads;
  options.session.optimization_level = level;
  return options;
}

// Runs each case at opt-levels 0 and 2 on 2 threads against ONNX Runtime's outputs (each with
// at least one data set) and returns the op types of the cases' models.
inline std::set<std::string> check_cases_match(const std::vector<std::string>& cases) {
  std::set<std::string> ops_seen;
  for (const std::string& dir : cases) {
    for (int level : {0, 2}) {
      const CaseResult r = run_conformance_case(dir, tight_options(level, 2));
      INFO(r.name << " at opt-level " << level << ": " << r.reason);
      CHECK(r.status == CaseStatus::Pass);
      CHECK(r.data_sets >= 1);
    }
    const Graph model = load_onnx(dir + "/model.onnx");  // named: nodes() views into it
    for (const Node* n : model.nodes()) ops_seen.insert(n->op_type);
  }
  return ops_seen;
}

// Each case's model, loaded and written back by minfer (as `minfer export --opt-level 0` does)
// into a copy of the case under temp_dir(folder), must still give ONNX Runtime's outputs.
// Returns how many cases were checked.
inline int check_cases_survive_export(const std::vector<std::string>& cases,
                                      const std::string& folder) {
  const std::filesystem::path out = temp_dir(folder);
  int checked = 0;
  for (const std::string& dir : cases) {
    const std::filesystem::path copy = out / std::filesystem::path(dir).filename();
    std::filesystem::copy(dir, copy, std::filesystem::copy_options::recursive);
    save_onnx(load_onnx(dir + "/model.onnx"), (copy / "model.onnx").string());
    const CaseResult r = run_conformance_case(copy.string(), tight_options(0));
    INFO(r.name << ": " << r.reason);
    CHECK(r.status == CaseStatus::Pass);
    ++checked;
  }
  return checked;
}

// Runs `minfer ARGS` with stdout and stderr together in `out`.
inline CliResult cli_merged(const std::string& args) { return cli(args, /*merge_stderr=*/true); }

// The 500 JPEGs of images/cifar10-jpeg, sorted by name, preprocessed as ResNet-20 expects,
// and their labels from labels.csv.
struct CifarJpegs {
  Tensor x;
  std::vector<int64_t> labels;
};

inline CifarJpegs cifar_jpegs() {
  const std::filesystem::path dir = data_dir() / "images" / "cifar10-jpeg";
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".jpg") files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() == 500);
  std::map<std::string, int64_t> label_of;
  std::ifstream csv(dir / "labels.csv");
  for (std::string line; std::getline(csv, line);) {
    std::stringstream ss(line);
    std::string file, label;
    std::getline(ss, file, ',');
    std::getline(ss, label, ',');
    if (!label.empty() && std::isdigit(static_cast<unsigned char>(label[0])))
      label_of[file] = std::stoll(label);
  }
  const ImagePreprocess pre = builtin_model_info("cifar-resnet20").preprocess;
  CifarJpegs r;
  std::vector<Tensor> images;
  for (const std::string& f : files) {
    REQUIRE(label_of.count(f));
    r.labels.push_back(label_of[f]);
    images.push_back(load_image((dir / f).string(), pre));
  }
  r.x = stack_batch(images);
  return r;
}

// Writes what the ONNX Runtime quantization scripts start from into `dir`: resnet20.onnx
// (minfer's export of ResNet-20 with its real weights) and x.npy (cifar_jpegs(), returned).
inline CifarJpegs write_resnet20_and_cifar_jpegs(const std::filesystem::path& dir) {
  save_onnx(build_model("cifar-resnet20", (repo_data_dir() / "models/resnet20.safetensors").string()),
            (dir / "resnet20.onnx").string());
  CifarJpegs data = cifar_jpegs();
  save_npy(data.x, (dir / "x.npy").string());
  return data;
}

// The top-1 class of each row of the float [N, ...] input `x`, run through `s` in batches of
// `batch` rows (the batches ONNX Runtime ran, which matters where quantization is per batch).
inline std::vector<int64_t> top1_in_batches(Session& s, const Tensor& x, int64_t batch) {
  const int64_t n = x.dim(0), row = x.numel() / n;
  std::vector<int64_t> top1;
  for (int64_t b = 0; b < n; b += batch) {
    const int64_t rows = std::min(batch, n - b);
    Shape shape = x.shape();
    shape[0] = rows;
    Tensor part(x.dtype(), shape);
    std::copy(x.data<float>() + b * row, x.data<float>() + (b + rows) * row, part.data<float>());
    const Tensor logits = s.run_one(part);
    const int64_t classes = logits.numel() / rows;
    for (int64_t i = 0; i < rows; ++i) {
      const float* l = logits.data<float>() + i * classes;
      top1.push_back(std::max_element(l, l + classes) - l);
    }
  }
  return top1;
}

}  // namespace minfer::test
