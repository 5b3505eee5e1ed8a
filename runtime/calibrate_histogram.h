// The per-tensor statistics a Calibrator keeps, and the range each method picks from them.
#pragma once

#include <cstdint>
#include <vector>

#include "minfer/calibrate.h"

namespace minfer::calib {

// min, max and a histogram of |x| over [0, range) in `bins` equal bins. The range starts at
// the first nonzero |x| seen and doubles (merging bin pairs) whenever a larger value arrives,
// so the result does not depend on how the samples are batched beyond that first batch.
class Histogram {
 public:
  explicit Histogram(int bins = 2048) : counts_(bins, 0) {}
  void add(const float* x, int64_t n);

  float min() const { return min_; }
  float max() const { return max_; }
  double range() const { return range_; }
  int64_t total() const { return total_; }
  // Counts including the zeros seen before the range was known (in bin 0).
  std::vector<double> counts() const;

  // The range [lo, hi] that `method` picks.
  TensorRange choose(CalibrationMethod method, float percentile) const;

 private:
  void grow_to(double absmax);
  std::vector<int64_t> counts_;
  int64_t pending_zeros_ = 0, total_ = 0;
  double range_ = 0;
  float min_ = 0, max_ = 0;
  bool seen_ = false;
};

// Thresholds on a histogram of |x| (bin width `width`); each returns t > 0.
double percentile_threshold(const std::vector<double>& h, double width, double percentile);
// TensorRT's KL-divergence search, quantizing [0, t] into `levels` bins.
double entropy_threshold(const std::vector<double>& h, double width, int levels);
// The t minimizing rounding (uniform, step = span / 255) plus clipping squared error, where
// span = t (non-negative tensors) or 2t (signed ones).
double mse_threshold(const std::vector<double>& h, double width, bool signed_range);

}  // namespace minfer::calib
