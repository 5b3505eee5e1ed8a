// Int8 on the command line: the calibration options shared by `run`/`eval`/`bench`
// (--precision int8) and `quantize`, and the steps both take.
#pragma once

#include <string>
#include <vector>

#include "minfer/calibrate.h"
#include "tools/model_loader.h"

namespace minfer::cli {

// --calib --calib-count --calib-batch --calib-method --calib-table (for --precision int8).
void add_int8_options(ArgParser& p);
void add_calib_batch_option(ArgParser& p);  // --calib-batch alone (for `quantize`)

// True when the graph already holds QuantizeLinear/DequantizeLinear or int8 ops.

// Sample inputs for calibration: each spec is a folder, image/.npy/.pb files (comma-separated
// lists allowed), or "random" (Gaussian inputs of the model's shape, with a loud warning).
std::vector<Tensor> calibration_samples(const LoadedModel& m, const std::vector<std::string>& specs,
                                        int count);

// The calibration table: loaded from `table_path` when it exists and there are no `specs`;
// otherwise calibrated on the samples (progress on stderr) and, with a `table_path`, saved.
// `batch` samples go through each fp32 run (CalibrationOptions::batch).
CalibrationTable calibration_table(const LoadedModel& m, const std::vector<std::string>& specs,
                                   int count, CalibrationMethod method, float percentile,
                                   const std::string& table_path, int threads, int batch);

// --calib-batch: samples per calibration run (default CalibrationOptions::batch).
int calibration_batch(const Args& args);

// For --precision int8: quantizes m.graph (a QDQ graph the Session folds into int8 kernels)
// from --calib / --calib-table, unless the model is already quantized. UsageError when int8
// is asked for an fp32 model without --calib or --calib-table.
void quantize_for_precision(LoadedModel& m, const Args& args);

}  // namespace minfer::cli
