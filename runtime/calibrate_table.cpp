// The calibration table's JSON file, and loading sample inputs for calibration.
//
//   {"format": "minfer-calibration", "version": 1, "method": "percentile",
//    "percentile": 99.99, "samples": 100, "tensors": {"conv1": [-1.5, 2.25], ...}}
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "minfer/calibrate.h"
#include "minfer/io.h"
#include "minfer/onnx.h"
#include "runtime/calibrate_samples.h"
#include "runtime/file_util.h"
#include "runtime/json.h"

namespace minfer {

void CalibrationTable::save(const std::string& path) const {
  json::Writer w(1);
  w.begin_object()
      .key("format")
      .value("minfer-calibration")
      .key("version")
      .value(1)
      .key("method")
      .value(method)
      .key("percentile")
      .value(static_cast<double>(percentile))
      .key("samples")
      .value(samples)
      .key("tensors")
      .begin_object();
  for (const auto& [name, r] : ranges)
    w.key(name).begin_array().value(double(r.lo)).value(double(r.hi)).end_array();
  w.end_object().end_object();
  std::ofstream out(path, std::ios::binary);
  check(bool(out), ErrorCode::InvalidArgument, "cannot write calibration table '" + path + "'");
  out << w.str() << "\n";
  check(bool(out), ErrorCode::InvalidArgument, "cannot write calibration table '" + path + "'");
}

CalibrationTable CalibrationTable::load(const std::string& path) {
  const std::string what = "calibration table '" + path + "'";
  json::Value doc;
  try {
    doc = json::parse(detail::read_file(path, "calibration table"));
  } catch (const Error& e) {
    throw Error(ErrorCode::InvalidArgument, what + ": " + e.what());
  }
  auto fail = [&](const std::string& msg) {
    throw Error(ErrorCode::InvalidArgument, what + ": " + msg);
  };
  if (!doc.is_object()) fail("not a JSON object");
  const json::Value* format = doc.find("format");
  if (!format || !format->is_string() || format->string != "minfer-calibration")
    fail("\"format\" must be \"minfer-calibration\"");
  const json::Value* version = doc.find("version");
  if (!version || !version->is_integer || version->integer != 1)
    fail("unsupported \"version\" (expected 1)");
  CalibrationTable t;
  if (const json::Value* m = doc.find("method"); m && m->is_string()) t.method = m->string;
  if (const json::Value* p = doc.find("percentile"); p && p->type == json::Value::Type::Number)
    t.percentile = static_cast<float>(p->number);
  if (const json::Value* s = doc.find("samples"); s && s->is_integer) t.samples = s->integer;
  const json::Value* tensors = doc.find("tensors");
  if (!tensors || !tensors->is_object()) fail("\"tensors\" must be an object");
  for (const auto& [name, v] : tensors->object) {
    if (!v.is_array() || v.array.size() != 2 || v.array[0].type != json::Value::Type::Number ||
        v.array[1].type != json::Value::Type::Number)
      fail("tensor '" + name + "': expected [lo, hi]");
    TensorRange r{static_cast<float>(v.array[0].number), static_cast<float>(v.array[1].number)};
    if (!(r.lo <= r.hi)) fail("tensor '" + name + "': lo > hi");
    t.ranges[name] = r;
  }
  return t;
}

namespace {

std::string lower_extension(const std::filesystem::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext;
}

bool is_sample_file(const std::filesystem::path& p) {
  const std::string ext = lower_extension(p);
  return ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".bmp" || ext == ".npy" ||
         ext == ".pb";
}

Tensor load_sample(const std::filesystem::path& p, const ImagePreprocess& pre) {
  const std::string ext = lower_extension(p);
  if (ext == ".npy") return load_npy(p.string());
  if (ext == ".pb") return load_tensor_pb(p.string());
  return load_image(p.string(), pre);
}

}  // namespace

std::vector<std::string> list_calibration_files(const std::vector<std::string>& paths, int count) {
  check(count >= 0, ErrorCode::InvalidArgument,
        "calibration sample count must be >= 0, got " + std::to_string(count));
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      std::vector<std::filesystem::path> in_dir;
      for (const auto& e : std::filesystem::directory_iterator(p))
        if (e.is_regular_file() && is_sample_file(e.path())) in_dir.push_back(e.path());
      std::sort(in_dir.begin(), in_dir.end());
      for (const auto& f : in_dir) files.push_back(f.string());
    } else {
      check(std::filesystem::exists(p, ec), ErrorCode::InvalidArgument,
            "calibration input '" + p + "' does not exist");
      check(is_sample_file(p), ErrorCode::InvalidArgument,
            "calibration input '" + p +
                "' is not an image (.png .jpg .jpeg .bmp) or a tensor "
                "(.npy .pb)");
      files.push_back(p);
    }
  }
  if (count > 0 && files.size() > static_cast<size_t>(count)) files.resize(count);
  check(!files.empty(), ErrorCode::InvalidArgument,
        "no calibration samples found (expected images, .npy or .pb files)");
  return files;
}

std::vector<Tensor> load_calibration_samples(const std::vector<std::string>& paths,
                                             const ImagePreprocess& pre, int count) {
  std::vector<Tensor> samples;
  for (const auto& f : list_calibration_files(paths, count)) samples.push_back(load_sample(f, pre));
  return samples;
}

void add_sample_files(Calibrator& calibrator, const std::vector<std::string>& files,
                      const ImagePreprocess& pre, const CalibrationOptions& options) {
  // add_all's batches: up to calibrator.batch() consecutive [1, ...] samples of one shape (1
  // for a model with a fixed batch). Each batch is filled as its files are read, so that no
  // sample is held twice (alone and stacked); a sample that does not fit is read ahead and
  // starts the next batch.
  const size_t batch = static_cast<size_t>(std::max(1, calibrator.batch()));
  auto fits = [](const Tensor& first, const Tensor& t) {
    return first.rank() >= 1 && first.dim(0) == 1 && t.rank() == first.rank() &&
           t.dim(0) == 1 && t.dtype() == first.dtype() &&
           std::equal(t.shape().dims().begin() + 1, t.shape().dims().end(),
                      first.shape().dims().begin() + 1);
  };
  size_t next = 0;
  Tensor ahead;
  while (ahead.defined() || next < files.size()) {
    Tensor first = ahead.defined() ? std::move(ahead) : load_sample(files[next++], pre);
    ahead = Tensor();
    Tensor stacked;  // [n, ...], allocated when a second sample joins
    size_t n = 1;
    while (n < batch && next < files.size()) {
      Tensor t = load_sample(files[next++], pre);
      if (!fits(first, t)) {
        ahead = std::move(t);
        break;
      }
      if (!stacked.defined()) {  // as many rows as the batch can still take
        Shape shape = first.shape();
        shape[0] = static_cast<int64_t>(std::min(batch, n + 1 + (files.size() - next)));
        stacked = Tensor(first.dtype(), shape);
        std::memcpy(stacked.raw(), first.raw(), first.nbytes());
      }
      std::memcpy(static_cast<char*>(stacked.raw()) + n * first.nbytes(), t.raw(), t.nbytes());
      ++n;
    }
    if (stacked.defined() && static_cast<int64_t>(n) < stacked.dim(0)) {
      // Ended early by a sample of another shape: only the rows filled.
      Shape shape = stacked.shape();
      shape[0] = static_cast<int64_t>(n);
      Tensor filled(stacked.dtype(), shape);
      std::memcpy(filled.raw(), stacked.raw(), filled.nbytes());
      stacked = std::move(filled);
    }
    calibrator.add(stacked.defined() ? stacked : first);
    if (options.progress)  // (the calibrator's own bar would count one batch at a time)
      std::fprintf(stderr, "calibrating: %zu/%zu samples\n", next - (ahead.defined() ? 1 : 0),
                   files.size());
  }
}

}  // namespace minfer
