#include "tools/int8_cli.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <sstream>

#include "minfer/registry.h"
#include "runtime/calibrate_samples.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace minfer::cli {

void add_calib_batch_option(ArgParser& p) {
  p.option("--calib-batch", "N",
           "calibration samples per fp32 run (default 8; 1 for a model whose inputs have a fixed "
           "batch): memory grows with N, and another N "
           "may change the table slightly");
}

int calibration_batch(const Args& args) {
  return static_cast<int>(args.get_int("--calib-batch", CalibrationOptions{}.batch, 1, 4096));
}

void add_int8_options(ArgParser& p) {
  p.repeated("--calib", "DIR|FILES",
             "--precision int8: calibration images/.npy/.pb (a folder, files, or 'random')");
  p.option("--calib-count", "N",
           "--precision int8: use at most N calibration samples (default 100)");
  add_calib_batch_option(p);
  p.option("--calib-method", "M", "minmax, percentile (default), entropy or mse");
  p.option("--calib-table", "F", "calibration table: read if it exists (no --calib), else written");
}

namespace {

std::vector<std::string> split_commas(const std::vector<std::string>& specs) {
  std::vector<std::string> out;
  for (const std::string& s : specs) {
    std::stringstream ss(s);
    std::string part;
    while (std::getline(ss, part, ','))
      if (!part.empty()) out.push_back(part);
  }
  return out;
}

std::vector<Tensor> random_samples(const LoadedModel& m, int count) {
  std::fprintf(stderr,
               "warning: calibrating on RANDOM data: the int8 ranges will not match real inputs "
               "and accuracy will suffer; pass real samples with --calib DIR\n");
  const Graph& g = m.graph;
  check(g.inputs().size() == 1 && g.inputs()[0]->dtype == DType::f32, ErrorCode::Unsupported,
        "--calib random needs a model with one float input");
  const Shape shape = concrete_shape(*g.inputs()[0], 1);
  std::mt19937 rng(0);
  std::normal_distribution<float> dist;
  std::vector<Tensor> out;
  for (int i = 0; i < count; ++i) {
    Tensor t(DType::f32, shape);
    for (int64_t k = 0; k < t.numel(); ++k) t.data<float>()[k] = dist(rng);
    out.push_back(t);
  }
  return out;
}

}  // namespace

std::vector<Tensor> calibration_samples(const LoadedModel& m, const std::vector<std::string>& specs,
                                        int count) {
  const std::vector<std::string> paths = split_commas(specs);
  // Random data says little about ranges: a few samples are as good as many.
  if (paths.size() == 1 && paths[0] == "random") return random_samples(m, std::min(count, 16));
  return load_calibration_samples(paths, m.info.preprocess, count);
}

CalibrationTable calibration_table(const LoadedModel& m, const std::vector<std::string>& specs,
                                   int count, CalibrationMethod method, float percentile,
                                   const std::string& table_path, int threads, int batch) {
  if (specs.empty()) {
    if (table_path.empty() || !std::filesystem::exists(table_path))
      throw UsageError("int8 needs calibration: give --calib DIR|FILES (or a saved table)");
    std::fprintf(stderr, "using calibration table %s\n", table_path.c_str());
    return CalibrationTable::load(table_path);
  }
  CalibrationOptions co;
  co.threads = threads;
  co.batch = batch;
  const std::vector<std::string> paths = split_commas(specs);
  const bool random = paths.size() == 1 && paths[0] == "random";
  CalibrationOptions quiet = co;
  quiet.progress = false;  // add_sample_files reports progress over all the files
  Calibrator cal(m.graph, random ? co : quiet);
  if (random)
    cal.add_all(calibration_samples(m, specs, count));
  else {  // read a batch at a time, so that memory does not grow with the number of files
#if defined(__GLIBC__)
    // Each batch's samples are freed after its run; glibc raises its mmap threshold past
    // such blocks once one is freed and then keeps the later ones in a heap that fragments
    // and grows with the number of batches (ResNet-18, 64 samples in batches of 4: 6 MB more
    // than 4 samples). A fixed threshold below one 224x224 sample hands them back.
    mallopt(M_MMAP_THRESHOLD, 256 << 10);
#endif
    add_sample_files(cal, list_calibration_files(paths, count), m.info.preprocess, co);
  }
  CalibrationTable table = cal.table(method, percentile);
  if (!table_path.empty()) {
    table.save(table_path);
    std::fprintf(stderr, "calibration table written to %s\n", table_path.c_str());
  }
  return table;
}

void quantize_for_precision(LoadedModel& m, const Args& args) {
  if (args.get("--precision", "fp32") != "int8" || is_quantized(m.graph)) return;
  std::vector<std::string> specs = args.get_all("--calib");
  const std::string table_path = args.get("--calib-table");
  if (specs.empty() && (table_path.empty() || !std::filesystem::exists(table_path))) {
    // Accuracy needs real calibration data; `run` and `bench` still work without it.
    if (args.command() == "run" && args.has("--image")) {
      std::fprintf(stderr,
                   "warning: no --calib: calibrating int8 on the input images themselves\n");
      specs = args.get_all("--image");
    } else if (args.command() == "run" || args.command() == "bench") {
      specs = {"random"};
    } else {
      throw UsageError(
          "--precision int8 on an fp32 model needs calibration data: --calib DIR|FILES (or "
          "--calib-table F saved by an earlier run, or a QDQ model from 'minfer quantize')");
    }
  }
  const CalibrationMethod method =
      parse_calibration_method(args.get("--calib-method", "percentile"));
  const int count = static_cast<int>(args.get_int("--calib-count", 100, 1));
  const int threads = static_cast<int>(args.get_int("--threads", 0, 0, 1024));
  CalibrationTable table = calibration_table(m, specs, count, method, 99.99f, table_path, threads,
                                             calibration_batch(args));
  quantize_graph(m.graph, table);
}

}  // namespace minfer::cli
