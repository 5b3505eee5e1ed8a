// Calibration samples read a batch at a time: peak memory then does not grow with their
// number (load_calibration_samples holds them all).
#pragma once

#include <string>
#include <vector>

#include "minfer/calibrate.h"

namespace minfer {

// The files load_calibration_samples would load, in the same order (at most `count`, 0 = all).
std::vector<std::string> list_calibration_files(const std::vector<std::string>& paths, int count);

// Calibrator::add_all over these files (the same batches, so the same table), loading each
// batch only when it runs.
void add_sample_files(Calibrator& calibrator, const std::vector<std::string>& files,
                      const ImagePreprocess& pre, const CalibrationOptions& options);

}  // namespace minfer
