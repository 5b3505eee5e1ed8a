// `minfer run`: one inference on images or tensors; prints the top-K classes and the time.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>

#include "minfer/io.h"
#include "minfer/onnx.h"
#include "tools/classify.h"
#include "tools/commands.h"
#include "tools/format.h"
#include "tools/json.h"
#include "tools/model_loader.h"

namespace minfer::cli {

namespace {

ArgParser make_parser() {
  ArgParser p("run", "MODEL [--image F]... [--input NAME=F]... [options]",
              "Runs a model once on images or tensors and prints the top-K classes per image\n"
              "and the time the run took.");
  add_model_options(p);
  p.repeated("--image", "F", "an image (PNG/JPEG/BMP); several images make one batch");
  p.repeated("--input", "NAME=F", "a model input from a .npy or .pb (TensorProto) file");
  add_session_options(p);
  p.option("--top", "K", "how many classes to show per image (default 5)");
  p.option("--save-outputs", "DIR", "write every output as DIR/<name>.npy");
  p.flag("--json", "print one JSON object on stdout instead of text");
  p.epilog(
      "examples:\n"
      "  minfer run cifar-resnet20 --weights resnet20.safetensors --image cat.png\n"
      "  minfer run model.onnx --input input=x.npy --save-outputs out/ --json");
  return p;
}

Tensor load_tensor_file(const std::string& path) {
  check(std::filesystem::is_regular_file(path), ErrorCode::InvalidArgument,
        "input file '" + path + "' does not exist");
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".npy") return load_npy(path);
  if (ext == ".pb") return load_tensor_pb(path);
  throw UsageError("--input: '" + path + "' is neither a .npy nor a .pb file");
}

// Output names may hold '/' or ':' (ONNX exporters like "/fc/Gemm_output_0").
std::string file_name_for(const std::string& output) {
  std::string s = output;
  for (char& c : s)
    if (c == '/' || c == ':' || c == '\\') c = '_';
  if (s.empty() || s == "." || s == "..") s = "output";
  return s + ".npy";
}

Json shape_json(const Shape& s) { return Json::array_of(s.dims()); }

}  // namespace

int cmd_run(const Argv& argv) {
  const ArgParser parser = make_parser();
  const Args args = parser.parse(argv);
  if (args.help_requested()) {
    std::fputs(parser.help().c_str(), stdout);
    return 0;
  }
  const int top = static_cast<int>(args.get_int("--top", 5, 1, 1000000));
  const std::vector<std::string> images = args.get_all("--image");
  const std::vector<std::string> tensor_args = args.get_all("--input");
  if (images.empty() && tensor_args.empty())
    throw UsageError("give at least one --image F or --input NAME=F");
  const SessionOptions options = session_options(args);

  LoadedModel model = load_model(args);
  const double t_prepare = now_ms();
  Session session(std::move(model.graph), options);
  const double prepare_ms = now_ms() - t_prepare;

  // Inputs: tensors by name, then images for the first input not given as a tensor.
  NamedTensors inputs;
  const auto& input_names = session.input_names();
  for (const std::string& a : tensor_args) {
    const auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == a.size())
      throw UsageError("--input expects NAME=FILE, got '" + a + "'");
    const std::string name = a.substr(0, eq);
    if (std::find(input_names.begin(), input_names.end(), name) == input_names.end()) {
      std::string list;
      for (const auto& n : input_names) list += (list.empty() ? "" : ", ") + n;
      throw Error(ErrorCode::InvalidArgument,
                  "--input: the model has no input '" + name + "' (its inputs: " + list + ")");
    }
    inputs[name] = load_tensor_file(a.substr(eq + 1));
  }
  if (!images.empty()) {
    std::string target;
    for (const auto& n : input_names)
      if (!inputs.count(n)) {
        target = n;
        break;
      }
    check(!target.empty(), ErrorCode::InvalidArgument,
          "--image: every model input is already given with --input");
    inputs[target] = load_images(images, model);
  }
  for (const auto& n : input_names)
    check(inputs.count(n) != 0, ErrorCode::InvalidArgument,
          "model input '" + n + "' is not given: use --image F or --input " + n + "=F.npy");

  // Planning (shapes, arena, weight packing) happens once per input shape: do it first so
  // that the run time is what every further run of this shape costs.
  const double t_plan = now_ms();
  session.plan_stats(inputs);
  const double plan_ms = now_ms() - t_plan;

  const double t_run = now_ms();
  NamedTensors outputs = session.run(inputs);
  const double run_ms = now_ms() - t_run;

  if (args.has("--save-outputs")) {
    const std::filesystem::path dir = args.get("--save-outputs");
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    check(std::filesystem::is_directory(dir), ErrorCode::InvalidArgument,
          "--save-outputs: cannot create directory '" + dir.string() + "'");
    for (const auto& [name, t] : outputs) save_npy(t, (dir / file_name_for(name)).string());
  }

  const std::string out_name = classifier_output(session.output_names());
  const Tensor& scores = outputs.at(out_name);
  std::vector<std::vector<Prediction>> preds;
  if (scores.dtype() == DType::f32 && scores.numel() > 0) preds = top_k(scores, top);
  // Row labels: the image files, else "sample i".
  auto row_label = [&](size_t r) {
    return r < images.size() && inputs.size() == 1 ? images[r] : "sample " + std::to_string(r);
  };
  int64_t batch = 1;
  if (!input_names.empty() && inputs.at(input_names[0]).rank() > 0)
    batch = inputs.at(input_names[0]).dim(0);

  if (args.has("--json")) {
    Json j = Json::object();
    j.set("model", model.spec);
    j.set("weights", model.weights_description());
    j.set("device", options.device.to_string());
    j.set("precision", precision_name(options.precision));
    j.set("threads", effective_threads(options));
    j.set("batch", batch);
    j.set("load_ms", model.load_ms);
    j.set("prepare_ms", prepare_ms);
    j.set("plan_ms", plan_ms);
    j.set("run_ms", run_ms);
    Json outs = Json::array();
    for (const auto& [name, t] : outputs)
      outs.push(Json::object()
                    .set("name", name)
                    .set("dtype", dtype_name(t.dtype()))
                    .set("shape", shape_json(t.shape())));
    j.set("outputs", outs);
    Json results = Json::array();
    for (size_t r = 0; r < preds.size(); ++r) {
      Json topj = Json::array();
      for (const Prediction& p : preds[r])
        topj.push(Json::object()
                      .set("index", p.index)
                      .set("label", model.class_name(p.index))
                      .set("score", p.score)
                      .set("prob", p.prob));
      results.push(Json::object().set("source", row_label(r)).set("top", topj));
    }
    j.set("results", results);
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }

  std::printf("%s · %s\n", model.title().c_str(), describe_options(options).c_str());
  std::printf("load %s · optimize %s · plan %s · run %s (batch %lld)\n",
              format_ms(model.load_ms).c_str(), format_ms(prepare_ms).c_str(),
              format_ms(plan_ms).c_str(), format_ms(run_ms).c_str(), static_cast<long long>(batch));
  if (preds.empty()) {
    for (const auto& [name, t] : outputs)
      std::printf("output %s %s %s\n", name.c_str(), dtype_name(t.dtype()),
                  t.shape().to_string().c_str());
  }
  for (size_t r = 0; r < preds.size(); ++r) {
    std::printf("\n%s\n", base_name(row_label(r)).c_str());
    Table t({"#", "class", "index", "score", "prob"}, "rlrrr");
    for (size_t i = 0; i < preds[r].size(); ++i) {
      const Prediction& p = preds[r][i];
      t.add({std::to_string(i + 1), model.class_name(p.index), std::to_string(p.index),
             fixed(p.score, 4), fixed(100.0 * p.prob, 2) + "%"});
    }
    std::fputs(t.str("  ").c_str(), stdout);
  }
  if (args.has("--save-outputs"))
    std::printf("\noutputs written to %s/\n", args.get("--save-outputs").c_str());
  return 0;
}

}  // namespace minfer::cli
