#include "models/weights.h"

#include <cmath>
#include <random>
#include <vector>

#include "minfer/io.h"

namespace minfer {

namespace {

// FNV-1a: a stable hash of the tensor name, so each tensor's values do not depend on the
// order in which tensors are created (std::hash is not stable across standard libraries).
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Distributions written out by hand: std::normal_distribution differs between standard
// libraries, and the seeded models must be the same everywhere.
double uniform01(std::mt19937_64& rng) { return double(rng() >> 11) * 0x1.0p-53; }

// Fills p[0..n) with N(0, sd) samples: Marsaglia's polar method, both outputs of each pair
// (no trigonometry; a ResNet-152 has 60M weights to draw).
void fill_normal(float* p, int64_t n, double sd, std::mt19937_64& rng) {
  for (int64_t i = 0; i < n;) {
    double u, v, s;
    do {
      u = 2 * uniform01(rng) - 1;
      v = 2 * uniform01(rng) - 1;
      s = u * u + v * v;
    } while (s >= 1 || s == 0);
    const double f = sd * std::sqrt(-2 * std::log(s) / s);
    p[i++] = float(u * f);
    if (i < n) p[i++] = float(v * f);
  }
}

// Torch checkpoints carry these counters; they are not parameters.
bool is_ignored(const std::string& name) {
  const std::string suffix = "num_batches_tracked";
  return name.size() >= suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

WeightSource::WeightSource(const std::string& path, uint64_t seed, std::string model)
    : path_(path), seed_(seed), model_(std::move(model)) {
  if (!path_.empty()) file_ = load_safetensors(path_);
}

Tensor WeightSource::get(const std::string& name, const Shape& shape, WeightInit init,
                         int64_t fan_in) {
  if (path_.empty()) return init_tensor(name, shape, init, fan_in);
  auto it = file_.find(name);
  check(it != file_.end(), ErrorCode::InvalidModel,
        "weights file '" + path_ + "': tensor '" + name + "' is missing (" + model_ +
            " expects f32 " + shape.to_string() + ")");
  const Tensor& t = it->second;
  check(t.dtype() == DType::f32, ErrorCode::InvalidModel,
        "weights file '" + path_ + "': tensor '" + name + "' is " + dtype_name(t.dtype()) + ", " +
            model_ + " expects f32");
  check(t.shape() == shape, ErrorCode::InvalidModel,
        "weights file '" + path_ + "': tensor '" + name + "' has shape " + t.shape().to_string() +
            ", " + model_ + " expects " + shape.to_string());
  used_.insert(name);
  return t;
}

void WeightSource::check_all_used() const {
  std::vector<std::string> unused;
  for (const auto& [name, t] : file_)
    if (!used_.count(name) && !is_ignored(name)) unused.push_back(name);
  if (unused.empty()) return;
  std::string list;
  for (size_t i = 0; i < unused.size() && i < 5; ++i) list += (i ? ", " : "") + unused[i];
  if (unused.size() > 5) list += ", ...";
  throw Error(ErrorCode::InvalidModel, "weights file '" + path_ + "' has " +
                                           std::to_string(unused.size()) + " tensor(s) that " +
                                           model_ + " does not use (" + list +
                                           "): is it the weights of another model?");
}

// Seeded initialization. The goal is a network whose activations stay O(1) from the stem to
// the logits even for ResNet-152 (50 residual blocks), so that a seeded model is a
// meaningful numerical test (no overflow, no all-zero Relus, logits that differ per input):
// * He-normal convolutions keep the second moment of a Relu'd input roughly constant.
// * The BN running statistics are non-trivial (mean != 0, var != 1), so BN folding and BN
//   kernels are really exercised; gamma in U(0.5, 1.5) keeps each branch at unit scale.
// * The last BN of every residual branch has a small gamma, U(0.05, 0.15) (torchvision's
//   zero_init_residual idea, but not zero): a block then adds only ~2% to the variance of
//   the identity path instead of compounding. On N(0,1) inputs the block outputs of
//   ResNet-152 stay within rms 2.5..7 and its logits near rms 4 (with U(0.1, 0.3) they grew
//   to rms 44 and 25).
Tensor WeightSource::init_tensor(const std::string& name, const Shape& shape, WeightInit init,
                                 int64_t fan_in) const {
  std::mt19937_64 rng(fnv1a(name) ^ (seed_ * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull));
  Tensor t(DType::f32, shape);
  float* p = t.data<float>();
  auto uniform = [&](double lo, double hi) {
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = float(lo + (hi - lo) * uniform01(rng));
  };
  switch (init) {
    case WeightInit::ConvHe: {
      fill_normal(p, t.numel(), std::sqrt(2.0 / double(fan_in > 0 ? fan_in : 1)), rng);
      break;
    }
    case WeightInit::BnGamma:
      uniform(0.5, 1.5);
      break;
    case WeightInit::BnGammaResidual:
      uniform(0.05, 0.15);
      break;
    case WeightInit::BnBeta:
      uniform(-0.1, 0.1);
      break;
    case WeightInit::BnMean:
      uniform(-0.1, 0.1);
      break;
    case WeightInit::BnVar:
      uniform(0.5, 1.5);
      break;
    case WeightInit::LinearUniform: {
      const double bound = 1.0 / std::sqrt(double(fan_in > 0 ? fan_in : 1));
      uniform(-bound, bound);
      break;
    }
  }
  return t;
}

}  // namespace minfer
