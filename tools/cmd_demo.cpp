// `minfer demo`: the out-of-the-box tour. Builds ResNet-18 (seeded) and the real CIFAR-10
// ResNet-20 (the weights and pictures shipped in data/), classifies the pictures, runs both
// models on every available device in fp32 and int8, and checks each run against minfer's
// reference kernels and ResNet-20 against its published logits.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "minfer/calibrate.h"
#include "minfer/image.h"
#include "minfer/models.h"
#include "models/reference_eval.h"
#include "runtime/device_backend.h"
#include "tools/classify.h"
#include "tools/commands.h"
#include "tools/format.h"
#include "tools/json.h"
#include "tools/model_loader.h"

namespace minfer::cli {

namespace fs = std::filesystem;

namespace {

struct DemoModel {
  std::string name;
  std::string weights;             // "" = seeded
  Tensor input;                    // [B,3,H,W]
  std::vector<std::string> files;  // the images behind `input`, when real
  std::vector<Tensor> calibration;  // int8 calibration samples, other images than `input`
  std::string calibration_source;   // what the calibration samples are, for the report
};

// One classified picture: its label (from the file name) and what fp32 and int8 made of it.
struct Classified {
  std::string file;
  int64_t label = -1;  // -1: the file name carries none
  Prediction fp32, int8;
};

// How int8 compares with the fp32 reference on the same inputs.
struct Int8Check {
  std::string model;
  int64_t images = 0, top1_agree = 0, calibration_samples = 0;
  double max_diff = 0;
  std::string calibration_source;
};

struct Row {
  std::string model, weights, device, precision;
  int64_t batch = 0;
  double latency_ms = 0, throughput = 0, max_diff = 0;
  int64_t argmax_agree = 0;
};

// Rows [begin, begin+count) of a [B,...] tensor, copied.
Tensor slice_batch(const Tensor& t, int64_t begin, int64_t count) {
  Shape s(t.shape().dims());
  s[0] = count;
  Tensor r(t.dtype(), s);
  const size_t row = t.nbytes() / static_cast<size_t>(t.dim(0));
  std::memcpy(r.raw(), static_cast<const char*>(t.raw()) + row * static_cast<size_t>(begin),
              row * static_cast<size_t>(count));
  return r;
}

Tensor random_images(int64_t batch, int64_t size, uint64_t seed) {
  Tensor t(DType::f32, Shape{batch, 3, size, size});
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.f, 1.f);  // like normalized pixels
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  return t;
}

// Median time of session.run on `x`: at least 3 runs, then until ~0.4 s have passed.
double time_runs(const Session& s, const std::string& input, const Tensor& x) {
  s.run({{input, x}});  // warm-up (first run may plan for this batch size)
  std::vector<double> ms;
  const double t0 = now_ms();
  while (ms.size() < 3 || (now_ms() - t0 < 400 && ms.size() < 100)) {
    const double t = now_ms();
    s.run({{input, x}});
    ms.push_back(now_ms() - t);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Compares `got` with the first rows of `want` (the reference run on the full batch).
void compare(const Tensor& got, const Tensor& want, Row& r) {
  const int64_t rows = got.dim(0), cols = got.numel() / rows;
  const float* g = got.data<float>();
  const float* w = want.data<float>();
  r.max_diff = 0;
  r.argmax_agree = 0;
  for (int64_t i = 0; i < rows * cols; ++i) {
    const double d = std::abs(double(g[i]) - double(w[i]));
    r.max_diff = std::isnan(d) ? INFINITY : std::max(r.max_diff, d);
  }
  for (int64_t i = 0; i < rows; ++i) {
    const float* gi = g + i * cols;
    const float* wi = w + i * cols;
    r.argmax_agree +=
        (std::max_element(gi, gi + cols) - gi) == (std::max_element(wi, wi + cols) - wi);
  }
}

// Images in a list of [N,3,H,W] tensors.
int64_t count_samples(const std::vector<Tensor>& batches) {
  int64_t n = 0;
  for (const Tensor& t : batches) n += t.dim(0);
  return n;
}

// `m` calibrated on its calibration samples and quantized (a QDQ graph: a Session folds it
// into int8 kernels).
Graph quantized_graph(const DemoModel& m, int threads) {
  CalibrationOptions co;
  co.threads = threads;
  co.progress = false;
  Calibrator calibrator(build_model(m.name, m.weights), co);
  calibrator.add_all(m.calibration);
  Graph g = build_model(m.name, m.weights);
  quantize_graph(g, calibrator.table(CalibrationMethod::percentile));
  return g;
}

// The 20 CIFAR-10 PNGs and the reference logits of the real ResNet-20 (one line per image:
// "file argmax l0 .. l9").
struct ReferenceLogits {
  std::vector<std::string> files;
  std::vector<std::vector<double>> logits;
};

ReferenceLogits read_reference_logits(const fs::path& path) {
  std::ifstream in(path);
  check(bool(in), ErrorCode::InvalidArgument, "demo: cannot open '" + path.string() + "'");
  ReferenceLogits r;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string file;
    int argmax = 0;
    if (!(ss >> file >> argmax) || file.size() < 5 || file.substr(file.size() - 4) != ".png")
      continue;  // the summary line ("top1 20 / 20")
    std::vector<double> v(10);
    for (double& x : v)
      check(bool(ss >> x), ErrorCode::InvalidArgument,
            path.string() + ": malformed line '" + line + "' (expected file, argmax, 10 logits)");
    r.files.push_back(file);
    r.logits.push_back(v);
  }
  check(!r.files.empty(), ErrorCode::InvalidArgument, path.string() + " holds no logits");
  return r;
}

// The label in a CIFAR-10 file name, "cifar10_<index>_<label>.png"; -1 if there is none.
int64_t label_from_name(const std::string& file) {
  const size_t us = file.rfind('_'), dot = file.rfind('.');
  if (us == std::string::npos || dot == std::string::npos || dot != us + 2) return -1;
  const char c = file[us + 1];
  return c >= '0' && c <= '9' ? c - '0' : -1;
}

// The project's data/ folder, as CMake knew it (see CMakeLists.txt).
#ifndef MINFER_DATA_DIR
#define MINFER_DATA_DIR ""
#endif

// The real ResNet-20 from a folder laid out like data/: the pictures listed in the logits file
// are classified; int8 is calibrated on up to 100 samples of `calib` or, without it, on the
// second half of the pictures, and the first half is classified.
DemoModel real_resnet20(const fs::path& dir, const std::string& calib, ReferenceLogits& ref) {
  const fs::path weights = dir / "models" / "resnet20.safetensors";
  const fs::path images = dir / "images" / "cifar10-png";
  check(fs::is_regular_file(weights), ErrorCode::InvalidArgument,
        "demo: '" + weights.string() + "' does not exist");
  check(fs::is_directory(images), ErrorCode::InvalidArgument,
        "demo: '" + images.string() + "' does not exist");
  ref = read_reference_logits(dir / "models" / "resnet20.cifar10-png.logits.txt");
  DemoModel m{"cifar-resnet20", weights.string(), {}, {}, {}, {}};
  const ImagePreprocess& pre = builtin_model_info(m.name).preprocess;
  size_t checked = ref.files.size();
  if (!calib.empty()) {
    m.calibration = load_calibration_samples({calib}, pre, 100);
    m.calibration_source = std::to_string(m.calibration.size()) + " images of " + calib;
  } else {
    check(ref.files.size() >= 2, ErrorCode::InvalidArgument,
          "demo: " + dir.string() +
              " lists one picture: give --calib DIR for the int8 calibration images");
    checked = ref.files.size() / 2;
    for (size_t i = checked; i < ref.files.size(); ++i)
      m.calibration.push_back(load_image((images / ref.files[i]).string(), pre));
    m.calibration_source = "the other " + std::to_string(m.calibration.size()) + " pictures";
  }
  ref.files.resize(checked);
  ref.logits.resize(checked);
  std::vector<Tensor> batch;
  for (const std::string& f : ref.files) {
    m.files.push_back((images / f).string());
    batch.push_back(load_image(m.files.back(), pre));
  }
  m.input = stack_batch(batch);
  return m;
}

}  // namespace

int cmd_demo(const Argv& argv) {
  ArgParser parser("demo", "[--data DIR] [--calib DIR] [--threads N] [--json]",
                   "Classifies real CIFAR-10 pictures with the real ResNet-20 (shipped in the\n"
                   "project's data/ folder) and checks it against the published logits. Then runs\n"
                   "it and ResNet-18 (ImageNet, seeded weights, built in code) on every available\n"
                   "device in fp32 and in int8 (calibrated, quantized and folded into int8\n"
                   "kernels), and prints latency, throughput and the agreement with minfer's\n"
                   "reference kernels (max |difference| of the logits and how many top-1 classes\n"
                   "match; int8 must match its reference bit for bit), and int8's agreement with\n"
                   "fp32.");
  parser.option("--data", "DIR",
                "a folder laid out like the project's data/ (the default, " MINFER_DATA_DIR
                "):\n"
                "DIR/models/resnet20.safetensors, DIR/images/cifar10-png, and the\n"
                "reference logits DIR/models/resnet20.cifar10-png.logits.txt; without\n"
                "one, ResNet-20 runs with seeded weights on random inputs");
  parser.option("--calib", "DIR",
                "calibrate ResNet-20's int8 on up to 100 images of DIR and classify all\n"
                "the pictures (default: calibrate on half of the pictures, classify the\n"
                "other half)");
  parser.option("--threads", "N", "CPU threads (default 0 = all cores)");
  parser.flag("--json", "print one JSON object on stdout instead of text");
  const Args args = parser.parse(argv);
  if (args.help_requested()) {
    std::fputs(parser.help().c_str(), stdout);
    return 0;
  }
  const bool json = args.has("--json");
  const int threads = static_cast<int>(args.get_int("--threads", 0, 0, 1024));
  const double t_start = now_ms();

  // --- models and inputs ---
  std::vector<DemoModel> models;
  // ResNet-18 is checked at batch 1 only: the reference kernels are deliberately naive
  // (~2 GMAC per image takes seconds), and the demo must stay well under a minute.
  models.push_back(
      {"resnet18", "", random_images(1, 224, 18), {}, {random_images(8, 224, 118)},
       "8 random samples"});
  ReferenceLogits ref_logits;
  // The data: --data, else the project's data/ when it is there (an installed binary may
  // have none: then ResNet-20 is seeded, and says so).
  const fs::path data_dir = args.has("--data") ? fs::path(args.get("--data")) : MINFER_DATA_DIR;
  const bool have_data =
      args.has("--data") ||
      (!data_dir.empty() && fs::is_regular_file(data_dir / "models" / "resnet20.safetensors"));
  if (have_data) {
    models.push_back(real_resnet20(data_dir, args.get("--calib"), ref_logits));
  } else {
    check(!args.has("--calib"), ErrorCode::InvalidArgument,
          "demo: --calib needs the real ResNet-20, and no data was found at '" +
              data_dir.string() + "' (give --data DIR)");
    if (!json)
      std::fprintf(stderr,
                   "demo: no data at '%s' (give --data DIR): ResNet-20 runs with seeded weights "
                   "on random inputs\n",
                   data_dir.string().c_str());
    models.push_back({"cifar-resnet20", "", random_images(8, 32, 20), {},
                      {random_images(32, 32, 120)}, "32 random samples"});
  }

  // --- devices ---
  std::vector<Device> devices{Device::cpu()};
  const bool has_cuda = device_available("cuda");
  if (has_cuda) devices.push_back(Device::cuda(0));
  const int cpu_threads =
      threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  if (!json)
    std::printf("minfer demo · cpu (%d %s)%s\n", cpu_threads,
                cpu_threads == 1 ? "thread" : "threads",
                has_cuda ? " · cuda:0" : " · CUDA not available (no GPU, or built without CUDA)");

  std::vector<Row> rows;
  std::vector<Int8Check> int8_checks;
  Json file_check = Json();
  std::string file_check_text;
  std::vector<Classified> classified;  // the real pictures, on the CPU
  for (const DemoModel& m : models) {
    const std::string weights_text = m.weights.empty() ? "seeded" : base_name(m.weights);
    if (!json) {
      std::fflush(stdout);
      std::fprintf(stderr, "  %s: building, running the reference kernels (batch %lld)...\n",
                   m.name.c_str(), static_cast<long long>(m.input.dim(0)));
    }
    const Graph reference_graph = build_model(m.name, m.weights);
    const Tensor reference = reference_eval(reference_graph, {{"input", m.input}}).at("logits");
    std::optional<Graph> q8;  // made on first use, shared by the devices
    Tensor int8_reference;

    for (const Device& device : devices) {
      SessionOptions opts;
      opts.device = device;
      opts.threads = threads;
      Session session(build_model(m.name, m.weights), opts);
      const int64_t full = m.input.dim(0);
      std::vector<int64_t> batches{1};
      if (full > 1) batches.push_back(full);
      for (int64_t batch : batches) {
        Row r{m.name, weights_text, device.to_string(), "fp32", batch};
        const Tensor x = batch == full ? m.input : slice_batch(m.input, 0, batch);
        compare(session.run({{"input", x}}).at("logits"), reference, r);
        r.latency_ms = time_runs(session, "input", x);
        r.throughput = double(batch) * 1000.0 / r.latency_ms;
        rows.push_back(r);
      }
      if (!ref_logits.files.empty() && device.is_cpu()) {
        // The real ResNet-20 against the published float64 logits.
        const Tensor got = session.run({{"input", m.input}}).at("logits");
        double max_diff = 0;
        int agree = 0;
        for (size_t i = 0; i < ref_logits.files.size(); ++i) {
          const float* g = got.data<float>() + i * 10;
          const auto& want = ref_logits.logits[i];
          for (int c = 0; c < 10; ++c)
            max_diff = std::max(max_diff, std::abs(double(g[c]) - want[c]));
          agree += (std::max_element(g, g + 10) - g) ==
                   (std::max_element(want.begin(), want.end()) - want.begin());
        }
        const size_t n = ref_logits.files.size();
        file_check = Json::object()
                         .set("model", m.name)
                         .set("images", n)
                         .set("max_abs_diff", max_diff)
                         .set("argmax_agree", agree);
        char buf[256];
        std::snprintf(buf, sizeof buf,
                      "%s (%s) on %zu CIFAR-10 PNGs vs resnet20.cifar10-png.logits.txt:\n"
                      "  max |diff| %.2e, argmax %d/%zu",
                      m.name.c_str(), weights_text.c_str(), n, max_diff, agree, n);
        file_check_text = buf;
        const auto top = top_k(got, 1);
        for (size_t i = 0; i < m.files.size(); ++i) {
          const std::string file = base_name(m.files[i]);
          classified.push_back({file, label_from_name(file), top[i][0], {}});
        }
      }
      if (!q8) {
        if (!json) {
          std::fflush(stdout);
          std::fprintf(stderr, "  %s: calibrating on %lld samples, quantizing to int8...\n",
                       m.name.c_str(), static_cast<long long>(count_samples(m.calibration)));
        }
        q8 = quantized_graph(m, threads);
      }
      opts.precision = Precision::int8;
      const Session s8(clone_graph(*q8), opts);
      // The oracle: the folded int8 graph, node by node on the reference kernels, which the
      // int8 kernels of every device must match bit for bit.
      if (!int8_reference.defined())
        int8_reference = reference_eval(s8.graph(), {{"input", m.input}}).at("logits");
      for (int64_t batch : batches) {
        Row r{m.name, weights_text, device.to_string(), "int8", batch};
        const Tensor x = batch == full ? m.input : slice_batch(m.input, 0, batch);
        compare(s8.run({{"input", x}}).at("logits"), int8_reference, r);
        r.latency_ms = time_runs(s8, "input", x);
        r.throughput = double(batch) * 1000.0 / r.latency_ms;
        rows.push_back(r);
      }
      if (device.is_cpu()) {
        Row vs_fp32;
        const Tensor got8 = s8.run({{"input", m.input}}).at("logits");
        compare(got8, reference, vs_fp32);
        int8_checks.push_back({m.name, full, vs_fp32.argmax_agree, count_samples(m.calibration),
                               vs_fp32.max_diff, m.calibration_source});
        if (!m.files.empty()) {
          const auto top = top_k(got8, 1);
          for (size_t i = 0; i < m.files.size(); ++i)
            classified[classified.size() - m.files.size() + i].int8 = top[i][0];
        }
      }
    }
  }
  const double total_s = (now_ms() - t_start) / 1000;

  if (json) {
    Json list = Json::array();
    for (const Row& r : rows) {
      Json o = Json::object()
                   .set("model", r.model)
                   .set("weights", r.weights)
                   .set("device", r.device)
                   .set("precision", r.precision)
                   .set("batch", r.batch)
                   .set("latency_ms", r.latency_ms)
                   .set("throughput_ips", r.throughput)
                   .set("max_abs_diff", r.max_diff)
                   .set("argmax_agree", r.argmax_agree)
                   .set("argmax_total", r.batch);
      list.push(o);
    }
    Json j = Json::object();
    Json devs = Json::array();
    for (const Device& d : devices) devs.push(d.to_string());
    j.set("devices", devs).set("threads", cpu_threads).set("rows", list);
    if (file_check.kind() != Json::Kind::Null) j.set("reference_logits", file_check);
    if (have_data) j.set("data", data_dir.string());
    Json pictures = Json::array();
    const auto& names = cifar10_class_names();
    for (const Classified& c : classified)
      pictures.push(Json::object()
                        .set("file", c.file)
                        .set("label", c.label)
                        .set("fp32", c.fp32.index)
                        .set("fp32_class", names.at(size_t(c.fp32.index)))
                        .set("fp32_probability", c.fp32.prob)
                        .set("int8", c.int8.index)
                        .set("int8_class", names.at(size_t(c.int8.index))));
    j.set("classified", pictures);
    Json checks = Json::array();
    for (const Int8Check& c : int8_checks)
      checks.push(Json::object()
                      .set("model", c.model)
                      .set("calibration_samples", c.calibration_samples)
                      .set("calibration_source", c.calibration_source)
                      .set("images", c.images)
                      .set("top1_agree_with_fp32", c.top1_agree)
                      .set("max_abs_diff_vs_fp32", c.max_diff));
    j.set("int8_vs_fp32", checks);
    j.set("seconds", total_s);
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  if (!classified.empty()) {
    const auto& names = cifar10_class_names();
    std::printf("\nCIFAR-10 pictures in %s, classified by the real ResNet-20 on the cpu\n",
                (data_dir / "images" / "cifar10-png").string().c_str());
    Table pics({"picture", "label", "fp32", "probability", "int8"}, "lllrl");
    int64_t correct = 0, labelled = 0;
    for (const Classified& c : classified) {
      const bool known = c.label >= 0 && c.label < int64_t(names.size());
      labelled += known;
      correct += known && c.fp32.index == c.label;
      pics.add({c.file, known ? names[size_t(c.label)] : "?", names.at(size_t(c.fp32.index)),
                format_percent(c.fp32.prob), names.at(size_t(c.int8.index))});
    }
    std::fputs(pics.str("  ").c_str(), stdout);
    if (labelled > 0)
      std::printf("  fp32 top-1: %lld/%lld pictures as labelled\n", static_cast<long long>(correct),
                  static_cast<long long>(labelled));
  }
  Table t({"model", "weights", "device", "precision", "batch", "latency", "throughput",
           "max |diff| vs ref", "top-1 agree"},
          "llllrrrrr");
  for (const Row& r : rows) {
    char diff[32];
    std::snprintf(diff, sizeof diff, "%.2e", r.max_diff);
    t.add({r.model, r.weights, r.device, r.precision, std::to_string(r.batch),
           format_ms(r.latency_ms), fixed(r.throughput, 1) + " img/s", diff,
           std::to_string(r.argmax_agree) + "/" + std::to_string(r.batch)});
  }
  std::printf("\n%s", t.str().c_str());
  std::printf("\nref = the same graph evaluated node by node with minfer's reference kernels\n"
              "      (for int8: the folded int8 graph, which the int8 kernels of every device\n"
              "      match bit for bit)\n");
  for (const Int8Check& c : int8_checks)
    std::printf("%s int8 (calibrated on %s) vs fp32: top-1 %lld/%lld, max |diff| %.2e\n",
                c.model.c_str(), c.calibration_source.c_str(),
                static_cast<long long>(c.top1_agree), static_cast<long long>(c.images),
                c.max_diff);
  if (!file_check_text.empty()) std::printf("%s\n", file_check_text.c_str());
  std::printf("done in %s\n", format_ms(total_s * 1000).c_str());
  return 0;
}

}  // namespace minfer::cli
