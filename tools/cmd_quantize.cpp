// `minfer quantize`: calibrate an fp32 model and write a QDQ ONNX model (int8 weights,
// QuantizeLinear/DequantizeLinear on activations) that ONNX Runtime and minfer both run.
// --report prints each quantized tensor's SQNR against fp32; --max-drop keeps the worst
// layers in fp32 until the top-1 drop on a labelled dataset is within budget.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "minfer/onnx.h"
#include "tools/classify.h"
#include "tools/commands.h"
#include "tools/format.h"
#include "tools/int8_cli.h"
#include "tools/model_loader.h"

namespace minfer::cli {

namespace {

ArgParser make_parser() {
  ArgParser p("quantize",
              "MODEL [--weights F] --calib DIR|FILES -o OUT.onnx [--method M] [--exclude NAMES] "
              "[--table F] [--report] [--max-drop P --dataset DIR]",
              "Calibrates MODEL on sample inputs and writes an int8 QDQ ONNX model: BatchNorm\n"
              "folded, int8 per-channel weights, int32 biases, QuantizeLinear/DequantizeLinear\n"
              "on the activations. minfer runs it on int8 kernels; ONNX Runtime runs it too.");
  add_model_options(p);
  p.repeated("--calib", "DIR|FILES",
             "calibration samples: a folder of images/.npy/.pb, files, or 'random'");
  p.option("--calib-count", "N", "use at most N calibration samples (default 100)");
  add_calib_batch_option(p);
  p.option("--method", "M", "minmax, percentile (default), entropy or mse");
  p.option("--percentile", "P", "for --method percentile (default 99.99)");
  p.option("--table", "F",
           "calibration table: read if it exists and --calib is absent, else "
           "written");
  p.repeated("--exclude", "NAMES", "node names to keep in fp32 (comma-separated)");
  p.repeated("--exclude-op", "TYPES", "op types to keep in fp32 (comma-separated, e.g. Add)");
  p.flag("--keep-first-last", "keep the first and the last Conv/Gemm in fp32");
  p.option("--output", "OUT.onnx", "(or -o) the QDQ model to write (required unless --report)");
  p.flag("--report", "print each quantized tensor's SQNR (dB) against fp32, worst first");
  p.option("--max-drop", "P", "keep layers in fp32 until the top-1 drop on --dataset <= P %");
  p.option("--dataset", "DIR", "labelled images (labels.csv 'file,label') for --max-drop");
  p.option("--threads", "N", "CPU threads (default 0 = all cores)");
  p.epilog(
      "example:\n"
      "  minfer quantize cifar-resnet20 --weights resnet20.safetensors \\\n"
      "      --calib cifar10-jpeg --calib-count 100 -o resnet20_int8.onnx --report");
  return p;
}

std::vector<std::string> split_list(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const std::string& s : items) {
    std::stringstream ss(s);
    std::string part;
    while (std::getline(ss, part, ','))
      if (!part.empty()) out.push_back(part);
  }
  return out;
}

Session make_session(const Graph& g, int level, int threads) {
  SessionOptions o;
  o.optimization_level = level;
  o.threads = threads;
  return Session(clone_graph(g), o);
}

struct LayerSqnr {
  std::string tensor, op;
  double db = 0;
};

// SQNR of every quantized tensor of `qdq` (the outputs of its QuantizeLinear nodes, as the
// int8 kernels compute them) against the same tensor of the fp32 model, over `samples`.
std::vector<LayerSqnr> sqnr_report(const Graph& fp32, const Graph& qdq,
                                   const std::vector<Tensor>& samples, int threads) {
  Graph ref = clone_graph(fp32);
  prepare_for_quantization(ref);
  Graph q = clone_graph(qdq);
  struct Probe {
    std::string tensor, q_output, op;
    float scale;
    int32_t zero_point;
  };
  std::vector<Probe> probes;
  for (Node* n : q.nodes()) {
    if (n->op_type != "QuantizeLinear" || !n->inputs[0] || !n->input(1) || !n->input(1)->constant)
      continue;
    Value* src = ref.find_value(n->inputs[0]->name);
    if (!src || src->is_graph_input || !src->producer) continue;
    const Tensor* z = n->input(2) ? &*n->input(2)->constant : nullptr;
    probes.push_back({src->name, n->outputs[0]->name, src->producer->op_type,
                      n->input(1)->constant->data<float>()[0],
                      z ? int32_t{z->data<int8_t>()[0]} : 0});
    if (!src->is_graph_output) ref.add_output(src);
    if (!n->outputs[0]->is_graph_output) q.add_output(n->outputs[0]);
  }
  Session rs = make_session(ref, 1, threads), qs = make_session(q, 2, threads);
  std::map<std::string, std::pair<double, double>> energy;  // signal, noise
  const size_t n = std::min<size_t>(samples.size(), 32);
  for (size_t i = 0; i < n; ++i) {
    NamedTensors ro = rs.run({{rs.input_names()[0], samples[i]}});
    NamedTensors qo = qs.run({{qs.input_names()[0], samples[i]}});
    for (const Probe& p : probes) {
      auto r = ro.find(p.tensor);
      auto k = qo.find(p.q_output);
      if (r == ro.end() || k == qo.end() || k->second.numel() != r->second.numel()) continue;
      auto& [sig, noise] = energy[p.tensor];
      const float* a = r->second.data<float>();
      const int8_t* b = k->second.data<int8_t>();
      for (int64_t j = 0; j < r->second.numel(); ++j) {
        const double deq = (double(b[j]) - p.zero_point) * p.scale;
        sig += double(a[j]) * a[j];
        noise += (a[j] - deq) * (a[j] - deq);
      }
    }
  }
  std::vector<LayerSqnr> out;
  for (const Probe& p : probes) {
    auto it = energy.find(p.tensor);
    if (it == energy.end()) continue;
    const auto [sig, noise] = it->second;
    const double db = noise > 0 ? 10 * std::log10(sig / noise) : INFINITY;
    out.push_back({p.tensor, p.op, db});
  }
  std::sort(out.begin(), out.end(),
            [](const LayerSqnr& a, const LayerSqnr& b) { return a.db < b.db; });
  return out;
}

// Top-1 accuracy over a folder with labels.csv ('file,label[,...]', a header allowed).
struct Dataset {
  std::vector<Tensor> images;
  std::vector<int64_t> labels;
};

Dataset load_dataset(const std::string& dir, const ImagePreprocess& pre) {
  std::ifstream csv(std::filesystem::path(dir) / "labels.csv");
  check(bool(csv), ErrorCode::InvalidArgument, "dataset '" + dir + "' has no labels.csv");
  Dataset d;
  std::string line;
  while (std::getline(csv, line)) {
    std::stringstream ss(line);
    std::string file, label;
    std::getline(ss, file, ',');
    std::getline(ss, label, ',');
    char* end = nullptr;
    const long long y = std::strtoll(label.c_str(), &end, 10);
    if (label.empty() || (*end != '\0' && *end != '\r')) continue;  // the header
    d.images.push_back(load_image((std::filesystem::path(dir) / file).string(), pre));
    d.labels.push_back(y);
  }
  check(!d.images.empty(), ErrorCode::InvalidArgument, "dataset '" + dir + "' lists no images");
  return d;
}

double top1(const Graph& g, const Dataset& d, int threads) {
  Session s = make_session(g, 2, threads);
  const std::string out = classifier_output(s.output_names());
  size_t correct = 0;
  for (size_t i = 0; i < d.images.size(); i += 32) {
    std::vector<Tensor> batch(d.images.begin() + i,
                              d.images.begin() + std::min(d.images.size(), i + 32));
    Tensor logits = s.run({{s.input_names()[0], stack_batch(batch)}}).at(out);
    auto best = top_k(logits, 1);
    for (size_t r = 0; r < best.size(); ++r) correct += best[r][0].index == d.labels[i + r];
  }
  return 100.0 * double(correct) / double(d.images.size());
}

size_t constant_bytes(const Graph& g) {
  size_t bytes = 0;
  for (const Value* v : g.values())
    if (v->is_constant() && (!v->uses.empty() || v->is_graph_output))
      bytes += v->constant->nbytes();
  return bytes;
}

}  // namespace

int cmd_quantize(const Argv& argv) {
  const ArgParser parser = make_parser();
  Argv spelled = argv;  // the parser knows long options only: -o is --output
  for (std::string& a : spelled)
    if (a == "-o") a = "--output";
  const Args args = parser.parse(spelled);
  if (args.help_requested()) {
    std::fputs(parser.help().c_str(), stdout);
    return 0;
  }
  const std::string out_path = args.get("--output");
  if (out_path.empty() && !args.has("--report"))
    throw UsageError("-o OUT.onnx is required (or --report alone)");
  if (args.has("--max-drop") && !args.has("--dataset"))
    throw UsageError("--max-drop needs a labelled --dataset DIR");
  const int threads = static_cast<int>(args.get_int("--threads", 0, 0, 1024));
  const CalibrationMethod method = parse_calibration_method(args.get("--method", "percentile"));
  const float percentile = static_cast<float>(args.get_double("--percentile", 99.99, 0.0));
  const int count = static_cast<int>(args.get_int("--calib-count", 100, 1));

  LoadedModel m = load_model(args);
  check(!is_quantized(m.graph), ErrorCode::InvalidArgument,
        "'" + m.spec + "' is already quantized");
  const std::vector<std::string> specs = args.get_all("--calib");
  const CalibrationTable table =
      calibration_table(m, specs, count, method, percentile, args.get("--table"), threads,
                        calibration_batch(args));

  QuantizeOptions qo;
  qo.exclude_nodes = split_list(args.get_all("--exclude"));
  qo.exclude_op_types = split_list(args.get_all("--exclude-op"));
  qo.keep_first_last_fp32 = args.has("--keep-first-last");
  Graph qdq = clone_graph(m.graph);
  quantize_graph(qdq, table, qo);

  std::vector<LayerSqnr> report;
  std::vector<Tensor> report_samples;
  if (args.has("--report") || args.has("--max-drop")) {
    // The samples to measure on: the calibration data, else the labelled images.
    std::vector<std::string> probe = specs;
    if (probe.empty() && args.has("--dataset")) probe = {args.get("--dataset")};
    if (probe.empty()) throw UsageError("--report needs samples: give --calib DIR|FILES");
    report_samples = calibration_samples(m, probe, std::min(count, 32));
    report = sqnr_report(m.graph, qdq, report_samples, threads);
  }
  if (args.has("--max-drop")) {
    const double budget = args.get_double("--max-drop", 1.0, 0.0);
    const Dataset d = load_dataset(args.get("--dataset"), m.info.preprocess);
    const double fp32 = top1(m.graph, d, threads);
    double int8 = top1(qdq, d, threads);
    std::fprintf(stderr, "top-1 on %zu images: fp32 %.2f %%, int8 %.2f %%\n", d.images.size(), fp32,
                 int8);
    for (const LayerSqnr& l : report) {  // worst first
      if (fp32 - int8 <= budget) break;
      Graph probe = clone_graph(m.graph);
      prepare_for_quantization(probe);
      const Value* t = probe.find_value(l.tensor);
      const Node* layer = t ? t->producer : nullptr;
      while (layer && (layer->op_type == "Relu" || layer->op_type == "Clip") && layer->inputs[0])
        layer = layer->inputs[0]->producer;
      if (!layer || (layer->op_type != "Conv" && layer->op_type != "Gemm" &&
                     layer->op_type != "MatMul" && layer->op_type != "Add"))
        continue;
      if (std::find(qo.exclude_nodes.begin(), qo.exclude_nodes.end(), layer->name) !=
          qo.exclude_nodes.end())
        continue;
      qo.exclude_nodes.push_back(layer->name);
      qdq = clone_graph(m.graph);
      quantize_graph(qdq, table, qo);
      int8 = top1(qdq, d, threads);
      std::fprintf(stderr, "  keeping %s in fp32: int8 top-1 %.2f %%\n", layer->name.c_str(), int8);
    }
    std::printf(
        "top-1: fp32 %.2f %%, int8 %.2f %% (drop %.2f points, budget %.2f); %zu layers "
        "kept in fp32\n",
        fp32, int8, fp32 - int8, budget, qo.exclude_nodes.size());
  }
  if (args.has("--report")) {
    Table t({"tensor", "op", "SQNR dB"}, "llr");
    for (const LayerSqnr& l : report) t.add({l.tensor, l.op, fixed(l.db, 1)});
    std::printf(
        "SQNR of each quantized tensor against fp32 on %zu samples, worst "
        "first:\n%s",
        std::min<size_t>(report_samples.size(), 32), t.str("  ").c_str());
  }
  if (!out_path.empty()) {
    save_onnx(qdq, out_path);
    Graph fp32 = clone_graph(m.graph);
    prepare_for_quantization(fp32);
    std::printf("wrote %s: %s (%s calibration, %lld samples); weights %s -> %s\n", out_path.c_str(),
                m.title().c_str(), table.method.c_str(), static_cast<long long>(table.samples),
                format_bytes(double(constant_bytes(fp32))).c_str(),
                format_bytes(double(constant_bytes(qdq))).c_str());
  }
  return 0;
}

}  // namespace minfer::cli
