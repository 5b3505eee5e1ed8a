#include "tools/model_loader.h"


#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "minfer/image.h"
#include "minfer/onnx.h"
#include "minfer/plugin.h"
#include "runtime/input_shape.h"
#include "runtime/memory_budget.h"
#include "tools/format.h"
#include "tools/int8_cli.h"

namespace minfer::cli {

namespace {

std::array<float, 3> parse_triple(const Args& args, const std::string& name,
                                  std::array<float, 3> def) {
  if (!args.has(name)) return def;
  const std::string s = args.get(name);
  std::array<float, 3> v{};
  size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    size_t end = s.find(',', pos);
    if ((i < 2) != (end != std::string::npos))
      throw UsageError(name + " expects three comma-separated numbers (R,G,B), got '" + s + "'");
    const std::string part = s.substr(pos, end == std::string::npos ? end : end - pos);
    char* stop = nullptr;
    v[i] = std::strtof(part.c_str(), &stop);
    if (part.empty() || *stop != '\0')
      throw UsageError(name + " expects three comma-separated numbers (R,G,B), got '" + s + "'");
    pos = end + 1;
  }
  return v;
}

// The preprocessing of an ONNX model: --size, or H and W of its input when they are static.
ImagePreprocess onnx_preprocess(const Args& args, const Graph& g) {
  ImagePreprocess pre;
  pre.resize_shorter = 0;
  pre.height = pre.width = 0;
  if (args.has("--size")) {
    const std::string s = args.get("--size");
    int h = 0, w = 0;
    char extra = 0;
    if (std::sscanf(s.c_str(), "%dx%d%c", &h, &w, &extra) != 2 || h <= 0 || w <= 0)
      throw UsageError("--size expects HxW (e.g. 224x224), got '" + s + "'");
    pre.height = h;
    pre.width = w;
  } else if (!g.inputs().empty() && g.inputs()[0]->shape.rank() == 4) {
    const Shape& s = g.inputs()[0]->shape;
    if (s[2] > 0 && s[3] > 0) {
      pre.height = static_cast<int>(s[2]);
      pre.width = static_cast<int>(s[3]);
    }
  }
  pre.mean = parse_triple(args, "--mean", pre.mean);
  pre.std = parse_triple(args, "--std", pre.std);
  for (float x : pre.std)
    if (!(x > 0)) throw UsageError("--std values must be positive");
  return pre;
}

// --shape NAME=DIMS: fixes symbolic input dims before anything reads the input shapes.
void apply_input_shapes(const Args& args, Graph& g) {
  for (const std::string& spec : args.get_all("--shape")) {
    std::pair<std::string, Shape> parsed;
    try {
      parsed = parse_input_shape(spec);
    } catch (const Error& e) {
      throw UsageError(std::string("--shape: ") + e.what());
    }
    set_input_shape(g, parsed.first, parsed.second);
  }
}

}  // namespace

std::string LoadedModel::weights_description() const {
  if (!builtin) return "onnx";
  if (weights.empty()) return "seeded";
  return base_name(weights);
}

std::string LoadedModel::title() const {
  return builtin ? spec + " (" + weights_description() + " weights)" : spec;
}

std::string LoadedModel::class_name(int64_t index) const {
  if (index >= 0 && index < static_cast<int64_t>(class_names.size()))
    return class_names[static_cast<size_t>(index)];
  return "class " + std::to_string(index);
}

void add_model_options(ArgParser& p) {
  p.positional("MODEL",
               "a built-in model (resnet18/34/50/101/152, cifar-resnet20/32/44/56/110)\n"
               "or an .onnx file");
  p.option("--weights", "F", "safetensors weights for a built-in model (default: seeded init)");
  p.option("--seed", "N", "seed of the built-in models' initialization (default 0)");
  p.option("--labels", "F", "class names, one per line (synset_words.txt format works)");
  p.option("--mean", "R,G,B", "ONNX models: per-channel mean (default ImageNet's)");
  p.option("--std", "R,G,B", "ONNX models: per-channel std (default ImageNet's)");
  p.option("--size", "HxW", "ONNX models: input image size (default: from the model input)");
  p.repeated("--shape", "NAME=DIMS",
             "pin the symbolic dims of an input, e.g. input=1x3x224x224 (NAME= may be left\n"
             "out for a one-input model)");
}

void add_session_options(ArgParser& p) {
  p.option("--device", "D", "cpu or cuda (default cpu)");
  p.option("--precision", "P", "fp32, int8 or fp16 (CUDA only) (default fp32)");
  add_int8_options(p);  // --calib...: calibration for --precision int8 (tools/int8_cli.h)
  p.option("--threads", "N", "CPU threads (default 0 = all cores)");
  p.option("--opt-level", "N", "graph optimization level 0..3 (default 2)");
  p.repeated("--disable-pass", "NAME", "skip the optimization pass NAME (see inspect --passes)");
  p.flag("--verbose", "log each pass and each node's kernel on stderr");
  p.flag("--no-cuda-graph", "on CUDA, run each node's kernels one by one instead of replaying "
                            "the plan as a CUDA graph");
  p.option("--memory-limit", "SIZE",
           "refuse (OutOfMemory) a plan whose run needs more memory on a device, e.g. 512MB\n"
           "(default: the machine's physical memory; on a GPU its free memory)");
  add_plugin_option(p);
}

void add_plugin_option(ArgParser& p) {
  p.repeated("--plugin", "F", "load ops from a plugin library (.so) first");
}

void load_plugins(const Args& args) {
  for (const std::string& path : args.get_all("--plugin")) load_plugin(path);
}

LoadedModel load_model(const Args& args) {
  load_plugins(args);
  LoadedModel m;
  m.spec = args.positional(0);
  const double t0 = now_ms();
  if (is_builtin_model(m.spec)) {
    for (const char* flag : {"--mean", "--std", "--size"})
      if (args.has(flag))
        throw UsageError(std::string(flag) + " is for ONNX models; " + m.spec +
                         " carries its own preprocessing");
    m.builtin = true;
    m.info = builtin_model_info(m.spec);
    m.weights = args.get("--weights");
    if (!m.weights.empty()) {
      check(!std::filesystem::is_directory(m.weights), ErrorCode::InvalidArgument,
            "weights file '" + m.weights + "' is a directory, not a .safetensors file");
      check(std::filesystem::is_regular_file(m.weights), ErrorCode::InvalidArgument,
            "weights file '" + m.weights + "' does not exist");
    }
    const uint64_t seed = static_cast<uint64_t>(args.get_int("--seed", 0));
    m.graph = build_model(m.spec, m.weights, seed);
    apply_input_shapes(args, m.graph);
    if (m.info.dataset == "cifar10") m.class_names = cifar10_class_names();
  } else {
    check(!std::filesystem::is_directory(m.spec), ErrorCode::InvalidArgument,
          "MODEL '" + m.spec +
              "' is a directory: give an .onnx file or a built-in model name (see --help)");
    const bool looks_like_file =
        m.spec.find('/') != std::string::npos || m.spec.find('.') != std::string::npos;
    if (!looks_like_file) builtin_model_info(m.spec);  // throws: unknown model, lists names
    check(std::filesystem::is_regular_file(m.spec), ErrorCode::InvalidArgument,
          "model file '" + m.spec + "' does not exist");
    if (args.has("--weights"))
      throw UsageError("--weights is for built-in models; an ONNX file carries its weights");
    m.graph = load_onnx(m.spec);
    apply_input_shapes(args, m.graph);
    m.info.name = std::filesystem::path(m.spec).stem().string();
    m.info.dataset = "";
    m.info.description = "ONNX model " + m.spec;
    m.info.preprocess = onnx_preprocess(args, m.graph);
    m.info.num_classes = 0;
    if (!m.graph.outputs().empty()) {
      const Shape& s = m.graph.outputs()[0]->shape;
      if (s.rank() >= 1 && s[s.rank() - 1] > 0)
        m.info.num_classes = static_cast<int>(s[s.rank() - 1]);
    }
  }
  if (args.has("--labels")) m.class_names = load_labels(args.get("--labels"));
  m.load_ms = now_ms() - t0;
  quantize_for_precision(m, args);  // --precision int8: calibrate, insert Q/DQ
  return m;
}

SessionOptions session_options(const Args& args) {
  SessionOptions o;
  const std::string device = args.get("--device", "cpu");
  if (device == "cpu") {
    o.device = Device::cpu();
  } else if (device == "cuda" || device.rfind("cuda:", 0) == 0) {
    int index = 0;
    if (device.size() > 5) {
      char* end = nullptr;
      index = static_cast<int>(std::strtol(device.c_str() + 5, &end, 10));
      if (*end != '\0' || index < 0) throw UsageError("--device: bad CUDA device '" + device + "'");
    }
    o.device = Device::cuda(index);
  } else {
    throw UsageError("--device expects cpu or cuda, got '" + device + "'");
  }
  const std::string precision = args.get("--precision", "fp32");
  if (precision == "fp32") {
    o.precision = Precision::fp32;
  } else if (precision == "int8") {
    o.precision = Precision::int8;  // load_model quantized the graph (quantize_for_precision)
  } else if (precision == "fp16") {
    o.precision = Precision::fp16;  // CUDA only: the Session refuses it on the CPU
  } else {
    throw UsageError("--precision expects fp32, int8 or fp16, got '" + precision + "'");
  }
  o.threads = static_cast<int>(args.get_int("--threads", 0, 0, 1024));
  o.optimization_level = static_cast<int>(args.get_int("--opt-level", 2, 0, 3));
  o.disabled_passes = args.get_all("--disable-pass");
  o.verbose = args.has("--verbose");
  o.cuda_graphs = !args.has("--no-cuda-graph");
  if (args.has("--memory-limit")) {
    try {
      o.memory_limit = parse_memory_size(args.get("--memory-limit", ""));
    } catch (const Error& e) {
      throw UsageError(std::string("--memory-limit: ") + e.what());
    }
  }
  return o;
}

int effective_threads(const SessionOptions& o) {
  if (o.threads > 0) return o.threads;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::int8: return "int8";
    case Precision::fp16: return "fp16";
  }
  return "?";
}

std::string describe_options(const SessionOptions& o) {
  const int threads = effective_threads(o);
  std::string s = o.device.to_string() + " · " + precision_name(o.precision);
  if (o.device.is_cpu())
    s += " · " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
  else if (!o.cuda_graphs)
    s += " · no CUDA graph";
  return s + " · opt-level " + std::to_string(o.optimization_level);
}

std::vector<std::string> load_labels(const std::string& path) {
  std::ifstream in(path);
  check(bool(in), ErrorCode::InvalidArgument, "cannot open labels file '" + path + "'");
  std::vector<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // A WordNet id ("n01440764 ") before the names: keep what follows it.
    if (line.size() > 10 && line[0] == 'n' && line[9] == ' ' &&
        line.find_first_not_of("0123456789", 1) == 9)
      line = line.substr(10);
    names.push_back(line);
  }
  check(!names.empty(), ErrorCode::InvalidArgument, "labels file '" + path + "' is empty");
  return names;
}

Shape concrete_shape(const Value& input, int64_t batch) {
  Shape s(input.shape.dims());
  for (size_t i = 0; i < s.rank(); ++i) {
    if (s[i] >= 0) continue;
    check(i == 0, ErrorCode::Unsupported,
          "model input '" + input.name + "' " + shape_string(input.shape) + " has a symbolic dim " +
              std::to_string(i) +
              " besides the batch; pin it with --shape NAME=DIMS or give the tensor with --input");
    s[i] = batch;
  }
  return s;
}

namespace {
const Value* first_input(const Graph& g) {
  for (const Value* v : g.inputs())
    if (!v->is_constant()) return v;
  return nullptr;
}
}  // namespace

bool has_fixed_batch(const Graph& g) {
  const Value* in = first_input(g);
  return in && in->shape.rank() > 0 && in->shape[0] > 0;
}

int64_t choose_batch(const Graph& g, const Args& args, int64_t def) {
  const int64_t requested = args.get_int("--batch", def, 1, 1 << 20);
  if (!has_fixed_batch(g)) return requested;
  const Value* in = first_input(g);
  const int64_t fixed = in->shape[0];
  if (args.has("--batch") && requested != fixed)
    throw UsageError("--batch " + std::to_string(requested) + ": the model's input '" + in->name +
                     "' has a fixed batch of " + std::to_string(fixed));
  return fixed;
}

Tensor load_images(const std::vector<std::string>& paths, const LoadedModel& model) {
  const ImagePreprocess& pre = model.info.preprocess;
  check(pre.height > 0 && pre.width > 0, ErrorCode::InvalidArgument,
        "model '" + model.spec + "' has no static input size: give --size HxW");
  std::vector<Tensor> images;
  for (const std::string& p : paths) images.push_back(load_image(p, pre));
  return images.size() == 1 ? images[0] : stack_batch(images);
}

std::string shape_string(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.rank(); ++i) {
    if (i) out += ",";
    if (s[i] >= 0) {
      out += std::to_string(s[i]);
    } else {
      out += i < s.symbols.size() && !s.symbols[i].empty() ? s.symbols[i] : "?";
    }
  }
  return out + "]";
}

}  // namespace minfer::cli
