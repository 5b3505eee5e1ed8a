// Int8 post-training quantization: calibrate activation ranges on sample inputs, then rewrite
// an fp32 graph into a QDQ graph (QuantizeLinear/DequantizeLinear around quantizable ops)
// that a Session folds into int8 kernels. The arithmetic is in docs/int8.md.
//
//   Graph g = build_model("cifar-resnet20", weights);
//   Calibrator cal(g);
//   cal.add_all(samples);                          // fp32 runs, histograms per tensor
//   CalibrationTable table = cal.table(CalibrationMethod::percentile);
//   table.save("resnet20.calib.json");             // calibrate once, reuse
//   quantize_graph(g, table);                      // g is now a QDQ graph (ONNX-exportable)
//   Session int8_session(std::move(g));            // folds Q/DQ into int8 ops
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "minfer/graph.h"
#include "minfer/image.h"
#include "minfer/session.h"

namespace minfer {

enum class CalibrationMethod { minmax, percentile, entropy, mse };

const char* calibration_method_name(CalibrationMethod m);  // "minmax", ...
// Parses "minmax" | "percentile" | "entropy" | "mse"; throws InvalidArgument otherwise.
CalibrationMethod parse_calibration_method(const std::string& name);

// The calibrated real range of one tensor.
struct TensorRange {
  float lo = 0, hi = 0;
};

// Activation ranges by tensor name, as chosen by one method. Saved as JSON.
struct CalibrationTable {
  std::string method = "percentile";  // how the ranges were chosen (for the record)
  float percentile = 99.99f;          // for method "percentile"
  int64_t samples = 0;                // how many sample inputs were seen
  std::map<std::string, TensorRange> ranges;

  void save(const std::string& path) const;
  // Throws InvalidArgument naming the file on a malformed table.
  static CalibrationTable load(const std::string& path);
};

struct CalibrationOptions {
  int threads = 0;       // for the fp32 runs; 0 = all cores
  int batch = 8;         // samples stacked per run by add_all (same shapes only; 1 where an
                         // input of the model has a fixed batch dimension)
  int bins = 2048;       // histogram bins of |x| per tensor
  bool progress = true;  // progress bar on stderr (plain lines when it is not a terminal)
};

// Runs the fp32 graph (BatchNorm folded, as quantize_graph sees it) over sample inputs and
// records, for every float activation, its min, max and a histogram of |x|.
class Calibrator {
 public:
  explicit Calibrator(const Graph& fp32_graph, CalibrationOptions options = {});
  ~Calibrator();
  Calibrator(Calibrator&&) noexcept;
  Calibrator& operator=(Calibrator&&) noexcept;

  // One run; inputs by name (a batch counts as its first dimension's size in samples).
  void add(const NamedTensors& inputs);
  // For single-input models.
  void add(const Tensor& input);
  // Every sample (each [1, ...] or a batch), stacked in batches, with the progress bar.
  void add_all(const std::vector<Tensor>& samples);

  int64_t samples() const;
  // Samples per run: options.batch, or 1 for a model whose inputs have a fixed batch.
  int batch() const;
  // The names of the recorded tensors.
  std::vector<std::string> tensor_names() const;
  // Ranges chosen by `method` (percentile: of |x|, e.g. 99.99). Throws InvalidArgument when
  // nothing was added.
  CalibrationTable table(CalibrationMethod method, float percentile = 99.99f) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Sample inputs for calibration: image files (.png .jpg .jpeg .bmp, preprocessed with `pre`),
// .npy or .pb tensors. A directory stands for its files in name order (labels.csv and other
// files ignored). At most `count` samples (0 = all); throws InvalidArgument when none are found.
std::vector<Tensor> load_calibration_samples(const std::vector<std::string>& paths,
                                             const ImagePreprocess& pre, int count = 0);

struct QuantizeOptions {
  std::vector<std::string> exclude_nodes;     // node names kept in fp32
  std::vector<std::string> exclude_op_types;  // op types kept in fp32 ("Add", "Gemm", ...)
  bool keep_first_last_fp32 = false;          // the first and last Conv/Gemm/MatMul stay fp32
};

// Rewrites an fp32 graph into a QDQ graph of standard ONNX ops: BatchNorm folded into Conv,
// int8 per-output-channel weights and int32 biases behind DequantizeLinear, and a
// QuantizeLinear -> DequantizeLinear pair on every activation that feeds a quantized op. Ops
// without an int8 kernel stay fp32. save_onnx() of the result runs in ONNX Runtime; a Session
// (optimization level >= 2) folds it into int8 kernels. Throws InvalidArgument when the
// table lacks a range the graph needs (a table made for another model).
void quantize_graph(Graph& g, const CalibrationTable& table, const QuantizeOptions& options = {});

// The fp32 graph quantize_graph starts from (and the Calibrator records): shapes inferred,
// constants folded, BatchNorm folded into Conv/Gemm, Conv + per-channel Add as a bias.
void prepare_for_quantization(Graph& g);

// Whether `g` holds QuantizeLinear/DequantizeLinear or minfer's int8 ops (a QDQ model from
// quantize_graph or another tool, or one already folded).
bool is_quantized(const Graph& g);

// A deep copy of a graph (constants share their buffers, which passes never write).
Graph clone_graph(const Graph& g);

}  // namespace minfer
