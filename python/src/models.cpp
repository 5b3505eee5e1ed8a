// Models from Python: built-in names, ONNX export and int8 quantization.
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <filesystem>

#include "graph/pass.h"
#include "python/src/module.h"

namespace minfer::py {

Device parse_device(const std::string& d) {
  if (d == "cpu") return Device::cpu();
  if (d == "cuda") return Device::cuda(0);
  if (d.rfind("cuda:", 0) == 0 && d.size() > 5 &&
      d.find_first_not_of("0123456789", 5) == std::string::npos)
    return Device::cuda(std::stoi(d.substr(5)));
  throw Error(ErrorCode::InvalidArgument,
              "device must be 'cpu', 'cuda' or 'cuda:N', got '" + d + "'");
}

Graph load_model(const std::string& model, const std::string& weights) {
  if (is_builtin_model(model) && !std::filesystem::exists(model)) {
    check(weights.empty() || std::filesystem::is_regular_file(weights), ErrorCode::InvalidArgument,
          "weights file '" + weights + "' does not exist");
    return build_model(model, weights);
  }
  check(weights.empty(), ErrorCode::InvalidArgument,
        "weights= is for built-in models; '" + model + "' is a file");
  if (!std::filesystem::is_regular_file(model)) {
    std::string names;
    for (const ModelInfo& i : builtin_models()) names += (names.empty() ? "" : ", ") + i.name;
    throw Error(
        ErrorCode::InvalidArgument,
        "model '" + model + "' is neither an ONNX file nor a built-in model (" + names + ")");
  }
  return load_onnx(model);
}

namespace {

nb::list models() {
  nb::list out;
  for (const ModelInfo& i : builtin_models()) {
    nb::dict d;
    d["name"] = i.name;
    d["dataset"] = i.dataset;
    d["num_classes"] = i.num_classes;
    d["description"] = i.description;
    d["input_size"] = nb::make_tuple(i.preprocess.height, i.preprocess.width);
    d["mean"] = nb::make_tuple(i.preprocess.mean[0], i.preprocess.mean[1], i.preprocess.mean[2]);
    d["std"] = nb::make_tuple(i.preprocess.std[0], i.preprocess.std[1], i.preprocess.std[2]);
    out.append(d);
  }
  return out;
}

std::string export_onnx(const std::filesystem::path& model, const std::filesystem::path& output,
                        int opt_level, const std::string& weights) {
  Graph g = load_model(model.string(), weights);
  nb::gil_scoped_release unlocked;
  SessionOptions o;
  o.optimization_level = opt_level;
  check(opt_level >= 0 && opt_level <= 3, ErrorCode::InvalidArgument,
        "opt_level must be 0..3, got " + std::to_string(opt_level));
  g.infer_shapes();
  optimize(g, o);
  verify(g);
  save_onnx(g, output.string());
  return output.string();
}

// Calibration samples: a list of arrays, or of image/.npy/.pb files and directories.
std::vector<Tensor> calibration_samples(const nb::list& calibration, const std::string& model) {
  check(nb::len(calibration) > 0, ErrorCode::InvalidArgument,
        "quantize: calibration is empty; give sample arrays or image files");
  std::vector<Tensor> samples;
  std::vector<std::string> paths;
  for (nb::handle h : calibration) {
    if (nb::isinstance<nb::str>(h) || nb::hasattr(h, "__fspath__")) {
      paths.push_back(nb::cast<std::filesystem::path>(h).string());
      continue;
    }
    InArray a;
    if (!nb::try_cast(h, a))
      throw nb::type_error("quantize: calibration items must be arrays or file paths");
    samples.push_back(tensor_view(a, "calibration sample").clone());  // ours to keep
  }
  if (!paths.empty()) {
    const ImagePreprocess pre =
        is_builtin_model(model) ? builtin_model_info(model).preprocess : ImagePreprocess{};
    for (Tensor& t : load_calibration_samples(paths, pre)) samples.push_back(std::move(t));
  }
  return samples;
}

std::string quantize(const std::filesystem::path& model, const std::filesystem::path& output,
                     const nb::list& calibration, const std::string& method, float percentile,
                     const std::string& weights, int threads,
                     const std::vector<std::string>& exclude_nodes) {
  Graph g = load_model(model.string(), weights);
  check(!is_quantized(g), ErrorCode::InvalidArgument,
        "quantize: '" + model.string() + "' is already quantized");
  const CalibrationMethod m = parse_calibration_method(method);
  std::vector<Tensor> samples = calibration_samples(calibration, model.string());
  nb::gil_scoped_release unlocked;
  CalibrationOptions co;
  co.threads = threads;
  co.progress = false;
  Calibrator cal(g, co);
  cal.add_all(samples);
  QuantizeOptions qo;
  qo.exclude_nodes = exclude_nodes;
  quantize_graph(g, cal.table(m, percentile), qo);
  save_onnx(g, output.string());
  return output.string();
}

// An image file as the model's input, [1,3,H,W] float32, with a built-in model's preprocessing
// (or ImageNet's defaults at 224x224 for any other name).
nb::object load_image_for(const std::filesystem::path& path, const std::string& model) {
  const ImagePreprocess pre =
      is_builtin_model(model) ? builtin_model_info(model).preprocess : ImagePreprocess{};
  Tensor t;
  {
    nb::gil_scoped_release unlocked;
    t = load_image(path.string(), pre);
  }
  return to_numpy(std::move(t));
}

}  // namespace

void register_models(nb::module_& m) {
  m.def("load_image", &load_image_for, nb::arg("path"), nb::arg("model") = "",
        "Loads a PNG/JPEG/BMP image as a [1,3,H,W] float32 array, resized and normalized as the\n"
        "built-in `model` expects (e.g. 'cifar-resnet20': 32x32, CIFAR mean/std); without one,\n"
        "ImageNet's 224x224 and mean/std.");
  m.def("cifar10_classes", &cifar10_class_names, "The CIFAR-10 class names, in index order.");
  m.def("models", &models,
        "The built-in models: a list of dicts (name, dataset, num_classes, description, "
        "input_size, mean, std).");
  m.def("export", &export_onnx, nb::arg("model"), nb::arg("output"), nb::kw_only(),
        nb::arg("opt_level") = 0, nb::arg("weights") = "",
        "Writes `model` (a built-in name or ONNX file) as ONNX after the passes of opt_level.\n"
        "opt_level 0 keeps standard ONNX ops only, so ONNX Runtime runs the file. Returns the "
        "path.");
  m.def("quantize", &quantize, nb::arg("model"), nb::arg("output"), nb::kw_only(),
        nb::arg("calibration"), nb::arg("method") = "percentile", nb::arg("percentile") = 99.99f,
        nb::arg("weights") = "", nb::arg("threads") = 0,
        nb::arg("exclude_nodes") = std::vector<std::string>{},
        "Post-training int8 quantization: calibrates activation ranges on `calibration` (a\n"
        "list of input arrays, each [1,...] or a batch, or of image/.npy files and folders)\n"
        "with `method` (minmax, percentile, entropy, mse) and writes a QDQ ONNX model to\n"
        "`output`; run it with minfer.Session(output, precision='int8'). Returns the path.");
}

}  // namespace minfer::py
