// `minfer eval`: top-1/top-5 accuracy over a folder of images listed in labels.csv.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tools/classify.h"
#include "tools/commands.h"
#include "tools/format.h"
#include "tools/json.h"
#include "tools/model_loader.h"

namespace minfer::cli {

namespace {

struct Sample {
  std::string file;
  int64_t label;
  int line;  // in labels.csv, for errors
};

ArgParser make_parser() {
  ArgParser p("eval", "MODEL --dataset DIR [options]",
              "Measures top-1 and top-5 accuracy on a folder of images. DIR holds the images\n"
              "and labels.csv with lines 'file,label[,...]' (a header line is allowed).");
  add_model_options(p);
  p.option("--dataset", "DIR", "the folder with the images and labels.csv (required)");
  p.option("--limit", "N", "use only the first N images");
  p.option("--batch", "N", "images per run (default 16)");
  add_session_options(p);
  p.flag("--json", "print one JSON object on stdout instead of text");
  p.epilog(
      "example:\n"
      "  minfer eval cifar-resnet20 --weights resnet20.safetensors --dataset cifar10-jpeg");
  return p;
}

bool parse_int(const std::string& s, int64_t& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (*end != '\0') return false;
  out = v;
  return true;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t b = s.find_first_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b);
}

std::vector<Sample> read_labels_csv(const std::filesystem::path& dir) {
  const std::filesystem::path csv = dir / "labels.csv";
  std::ifstream in(csv);
  check(bool(in), ErrorCode::InvalidArgument,
        "dataset '" + dir.string() + "' has no labels.csv (expected 'file,label' lines)");
  std::vector<Sample> samples;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    line = trim(line);
    if (line.empty()) continue;
    const auto c1 = line.find(',');
    const std::string file = trim(line.substr(0, c1));
    const std::string label =
        c1 == std::string::npos ? "" : trim(line.substr(c1 + 1, line.find(',', c1 + 1) - c1 - 1));
    int64_t value = 0;
    if (!parse_int(label, value)) {
      if (line_no == 1) continue;  // a header such as "file,label,class_name"
      throw Error(ErrorCode::InvalidArgument, csv.string() + ":" + std::to_string(line_no) +
                                                  ": expected 'file,label' with an integer "
                                                  "label, got '" +
                                                  line + "'");
    }
    check(value >= 0, ErrorCode::InvalidArgument,
          csv.string() + ":" + std::to_string(line_no) + ": label " + std::to_string(value) +
              " is negative (labels are class indices 0, 1, ...)");
    samples.push_back({file, value, line_no});
  }
  check(!samples.empty(), ErrorCode::InvalidArgument, csv.string() + " lists no images");
  return samples;
}

// Every label must be a class of the model: a label past its classes could never be
// predicted, and would silently count as a miss.
void check_label_range(const std::vector<Sample>& samples, int64_t classes,
                       const std::filesystem::path& csv, const std::string& model) {
  for (const Sample& s : samples)
    check(s.label < classes, ErrorCode::InvalidArgument,
          csv.string() + ":" + std::to_string(s.line) + ": label " + std::to_string(s.label) +
              " is out of range: " + model + " has " + std::to_string(classes) +
              " classes (0.." + std::to_string(classes - 1) + ")");
}

}  // namespace

int cmd_eval(const Argv& argv) {
  const ArgParser parser = make_parser();
  const Args args = parser.parse(argv);
  if (args.help_requested()) {
    std::fputs(parser.help().c_str(), stdout);
    return 0;
  }
  if (!args.has("--dataset")) throw UsageError("--dataset DIR is required");
  const std::filesystem::path dir = args.get("--dataset");
  check(std::filesystem::is_directory(dir), ErrorCode::InvalidArgument,
        "dataset folder '" + dir.string() + "' does not exist");
  std::vector<Sample> samples = read_labels_csv(dir);
  if (args.has("--limit")) {
    const auto limit = static_cast<size_t>(args.get_int("--limit", 0, 1));
    if (samples.size() > limit) samples.resize(limit);
  }
  const SessionOptions options = session_options(args);
  LoadedModel model = load_model(args);
  const int64_t batch = choose_batch(model.graph, args, 16);
  const bool fixed_batch = has_fixed_batch(model.graph);
  Session session(std::move(model.graph), options);
  check(session.input_names().size() == 1, ErrorCode::Unsupported,
        "eval needs a model with one image input; this one has " +
            std::to_string(session.input_names().size()) + " inputs");
  const std::string in_name = session.input_names()[0];
  const std::string out_name = classifier_output(session.output_names());
  // The classes: the model's, or (an output of unknown width) the first batch's row width.
  int64_t classes = model.info.num_classes;
  if (classes > 0) check_label_range(samples, classes, dir / "labels.csv", model.spec);
  const bool json = args.has("--json");
  const bool tty = isatty(fileno(stderr));

  size_t top1 = 0, top5 = 0, done = 0;
  double run_ms = 0;
  const double t0 = now_ms();
  int last_decile = -1;
  for (size_t start = 0; start < samples.size(); start += static_cast<size_t>(batch)) {
    const size_t end = std::min(samples.size(), start + static_cast<size_t>(batch));
    std::vector<std::string> paths;
    for (size_t i = start; i < end; ++i) paths.push_back((dir / samples[i].file).string());
    // A model with a fixed batch gets the last, partial batch padded (extra rows ignored).
    while (fixed_batch && static_cast<int64_t>(paths.size()) < batch) paths.push_back(paths.back());
    Tensor x = load_images(paths, model);
    const double t = now_ms();
    NamedTensors out = session.run({{in_name, x}});
    run_ms += now_ms() - t;
    if (classes <= 0) {
      const Tensor& o = out.at(out_name);
      classes = o.numel() / std::max<int64_t>(1, o.rank() >= 2 ? o.dim(0) : 1);
      check_label_range(samples, classes, dir / "labels.csv", model.spec);
    }
    const auto preds = top_k(out.at(out_name), 5);
    check(preds.size() == paths.size(), ErrorCode::InvalidModel,
          "the model returned " + std::to_string(preds.size()) + " rows for a batch of " +
              std::to_string(paths.size()));
    for (size_t i = start; i < end; ++i) {
      const auto& p = preds[i - start];
      top1 += p[0].index == samples[i].label;
      for (const Prediction& q : p) top5 += q.index == samples[i].label;
    }
    done = end;
    // Progress on stderr: rewritten in place on a terminal, every 10% otherwise.
    const std::string progress = "eval " + std::to_string(done) + "/" +
                                 std::to_string(samples.size()) + "  top-1 " +
                                 format_percent(double(top1) / double(done));
    if (tty) {
      std::fprintf(stderr, "\r%s", progress.c_str());
    } else if (int decile = static_cast<int>(10 * done / samples.size()); decile != last_decile) {
      last_decile = decile;
      std::fprintf(stderr, "%s\n", progress.c_str());
    }
  }
  if (tty) std::fprintf(stderr, "\n");
  const double total_ms = now_ms() - t0;
  const double n = double(done);

  if (json) {
    Json j = Json::object();
    j.set("model", model.spec);
    j.set("weights", model.weights_description());
    j.set("dataset", dir.string());
    j.set("device", options.device.to_string());
    j.set("count", done);
    j.set("top1_correct", top1);
    j.set("top5_correct", top5);
    j.set("top1", double(top1) / n);
    j.set("top5", double(top5) / n);
    j.set("batch", batch);
    j.set("seconds", total_ms / 1000);
    j.set("inference_seconds", run_ms / 1000);
    j.set("images_per_second", n / (total_ms / 1000));
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("%s · %s · batch %lld\n", model.title().c_str(), describe_options(options).c_str(),
              static_cast<long long>(batch));
  std::printf("dataset  %s (%zu images)\n", dir.string().c_str(), done);
  std::printf("top-1    %s  (%zu/%zu)\n", format_percent(top1 / n).c_str(), top1, done);
  std::printf("top-5    %s  (%zu/%zu)\n", format_percent(top5 / n).c_str(), top5, done);
  std::printf("time     %s total, %s inference (%s img/s)\n", format_ms(total_ms).c_str(),
              format_ms(run_ms).c_str(), fixed(n / (total_ms / 1000), 1).c_str());
  return 0;
}

}  // namespace minfer::cli
