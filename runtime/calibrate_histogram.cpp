#include "runtime/calibrate_histogram.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace minfer::calib {

void Histogram::grow_to(double absmax) {
  const int bins = static_cast<int>(counts_.size());
  if (range_ == 0) {
    range_ = absmax;
    return;
  }
  int64_t factor = 1;
  while (range_ * static_cast<double>(factor) < absmax) factor *= 2;
  if (factor == 1) return;
  std::vector<int64_t> merged(bins, 0);
  for (int i = 0; i < bins; ++i) merged[i / factor] += counts_[i];
  counts_ = std::move(merged);
  range_ *= static_cast<double>(factor);
}

void Histogram::add(const float* x, int64_t n) {
  if (n <= 0) return;
  float lo = std::numeric_limits<float>::infinity(), hi = -lo, absmax = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) continue;  // an overflow somewhere: do not let it set the range
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    absmax = std::max(absmax, std::fabs(x[i]));
  }
  if (lo > hi) {  // nothing finite
    lo = hi = 0;
  }
  if (!seen_) {
    min_ = lo;
    max_ = hi;
    seen_ = true;
  } else {
    min_ = std::min(min_, lo);
    max_ = std::max(max_, hi);
  }
  total_ += n;
  if (absmax == 0 && range_ == 0) {
    pending_zeros_ += n;
    return;
  }
  if (absmax > range_) grow_to(absmax);
  const int bins = static_cast<int>(counts_.size());
  const double scale = bins / range_;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) continue;
    int b = static_cast<int>(std::fabs(x[i]) * scale);
    ++counts_[std::min(b, bins - 1)];
  }
}

std::vector<double> Histogram::counts() const {
  std::vector<double> h(counts_.begin(), counts_.end());
  h[0] += static_cast<double>(pending_zeros_);
  return h;
}

TensorRange Histogram::choose(CalibrationMethod method, float percentile) const {
  TensorRange r{std::min(min_, 0.f), std::max(max_, 0.f)};
  if (method == CalibrationMethod::minmax || range_ == 0) return r;
  const std::vector<double> h = counts();
  const double width = range_ / static_cast<double>(h.size());
  const bool signed_range = min_ < 0;
  double t = 0;
  switch (method) {
    case CalibrationMethod::percentile:
      t = percentile_threshold(h, width, percentile);
      break;
    case CalibrationMethod::entropy:
      t = entropy_threshold(h, width, signed_range ? 128 : 255);
      break;
    case CalibrationMethod::mse:
      t = mse_threshold(h, width, signed_range);
      break;
    case CalibrationMethod::minmax:
      break;
  }
  r.lo = std::max(r.lo, static_cast<float>(-t));
  r.hi = std::min(r.hi, static_cast<float>(t));
  return r;
}

double percentile_threshold(const std::vector<double>& h, double width, double percentile) {
  double total = 0;
  for (double c : h) total += c;
  const double target = total * std::clamp(percentile, 0.0, 100.0) / 100.0;
  double cum = 0;
  for (size_t i = 0; i < h.size(); ++i) {
    cum += h[i];
    if (cum >= target) return static_cast<double>(i + 1) * width;
  }
  return static_cast<double>(h.size()) * width;
}

namespace {
// KL(P || Q) of two unnormalized distributions over the same bins; Q is smoothed where P has
// mass and Q has none.
double kl_divergence(const std::vector<double>& p, const std::vector<double>& q) {
  double sp = 0, sq = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    sp += p[i];
    sq += q[i];
  }
  if (sp <= 0 || sq <= 0) return std::numeric_limits<double>::infinity();
  constexpr double kEps = 1e-10;
  double kl = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] <= 0) continue;
    double pi = p[i] / sp;
    double qi = std::max(q[i] / sq, kEps);
    kl += pi * std::log(pi / qi);
  }
  return kl;
}
}  // namespace

double entropy_threshold(const std::vector<double>& hist, double width, int levels) {
  const int bins = static_cast<int>(hist.size());
  // The spike of exact zeros (everything a Relu clipped) would dominate the divergence; like
  // TensorRT's calibrator, give bin 0 the count of bin 1.
  std::vector<double> h = hist;
  if (bins > 1) h[0] = h[1];
  if (bins <= levels) return bins * width;
  std::vector<double> suffix(bins + 1, 0);
  for (int i = bins - 1; i >= 0; --i) suffix[i] = suffix[i + 1] + h[i];
  double best_kl = std::numeric_limits<double>::infinity();
  int best_i = bins;
  std::vector<double> p, q;
  // Thresholds every `step` bins (and the last): a finer search changes nothing measurable.
  const int step = std::max(1, bins / 512);
  for (int i = levels; i <= bins; i = (i < bins && i + step > bins) ? bins : i + step) {
    // P: the first i bins, with the clipped outliers folded into the last one.
    p.assign(h.begin(), h.begin() + i);
    p[i - 1] += suffix[i];
    // Q: the first i bins merged into `levels` bins, then spread back evenly over the bins
    // that held anything.
    q.assign(i, 0);
    for (int j = 0; j < levels; ++j) {
      const int start = static_cast<int>(int64_t{j} * i / levels);
      const int stop = static_cast<int>(int64_t{j + 1} * i / levels);
      double sum = 0;
      int nonzero = 0;
      for (int b = start; b < stop; ++b) {
        sum += h[b];
        nonzero += h[b] != 0;
      }
      if (nonzero == 0) continue;
      for (int b = start; b < stop; ++b)
        if (h[b] != 0) q[b] = sum / nonzero;
    }
    double kl = kl_divergence(p, q);
    if (kl < best_kl) {
      best_kl = kl;
      best_i = i;
    }
  }
  return best_i * width;
}

double mse_threshold(const std::vector<double>& h, double width, bool signed_range) {
  const int bins = static_cast<int>(h.size());
  // Suffix sums of count, count * c and count * c^2 over bin centres c.
  std::vector<double> s0(bins + 1, 0), s1(bins + 1, 0), s2(bins + 1, 0);
  for (int i = bins - 1; i >= 0; --i) {
    double c = (i + 0.5) * width;
    s0[i] = s0[i + 1] + h[i];
    s1[i] = s1[i + 1] + h[i] * c;
    s2[i] = s2[i + 1] + h[i] * c * c;
  }
  double best = std::numeric_limits<double>::infinity(), best_t = bins * width;
  for (int i = 1; i <= bins; ++i) {
    const double t = i * width;
    const double step = (signed_range ? 2 * t : t) / 255.0;
    const double inside = s0[0] - s0[i];
    const double clipped = s2[i] - 2 * t * s1[i] + t * t * s0[i];
    const double err = inside * step * step / 12.0 + clipped;
    if (err < best) {
      best = err;
      best_t = t;
    }
  }
  return best_t;
}

}  // namespace minfer::calib
