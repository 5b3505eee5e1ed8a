// The `minfer` command line, run as a separate process: exit codes, stderr messages, and
// --json output parsed back.
#include <fstream>
#include <set>
#include <sstream>

#include "cli_test_util.h"
#include "repo_data.h"
#include "runtime/device_backend.h"
#include "runtime/json.h"

using namespace minfer;
using minfer::test::cli;
using minfer::test::CliResult;

namespace {

json::Value parse_json(const CliResult& r) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.code == 0);
  return json::parse(r.out);  // throws unless stdout is exactly one JSON document
}

const json::Value& member(const json::Value& v, const char* key) {
  const json::Value* m = v.find(key);
  INFO("JSON member '" << key << "'");
  REQUIRE(m != nullptr);
  return *m;
}

// A file of the project's data/ folder, and one of the shared data (the larger sets), quoted.
std::string repo(const std::string& rel) {
  return test::shell_quote((test::repo_data_dir() / rel).string());
}
std::string shared(const std::string& rel) {
  return test::shell_quote((test::data_dir() / rel).string());
}

// cifar-resnet20's MACs at batch 1: 3x3 convs at 32x32/16x16/8x8 plus the 64->10 classifier.
constexpr int64_t kResnet20Macs = 32 * 32 * 16 * 27 + 6 * 32 * 32 * 16 * 144 +
                                  16 * 16 * 32 * 144 + 5 * 16 * 16 * 32 * 288 +
                                  8 * 8 * 64 * 288 + 5 * 8 * 8 * 64 * 576 + 640;

const std::string kWeights20 = "models/resnet20.safetensors";
const std::string kCat = "images/cifar10-png/cifar10_00_3.png";   // label 3, cat
const std::string kShip = "images/cifar10-png/cifar10_01_8.png";  // label 8, ship

}  // namespace

TEST_CASE("cli: --help of every command", "[cli]") {
  for (const char* cmd : {"run", "eval", "bench", "inspect", "ops", "demo"}) {
    INFO(cmd);
    const CliResult r = cli(std::string(cmd) + " --help");
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Catch::StartsWith(std::string("usage: minfer ") + cmd));
    CHECK(r.err.empty());
  }
  const CliResult top = cli("--help");
  CHECK(top.code == 0);
  CHECK_THAT(top.out, Catch::Contains("commands:") && Catch::Contains("inspect"));
  const CliResult none = cli("");
  CHECK(none.code == 2);
  CHECK_THAT(none.err, Catch::Contains("usage"));
}

TEST_CASE("cli: run a real CIFAR model on images, --json", "[cli]") {
  const CliResult r = cli("run cifar-resnet20 --weights " + repo(kWeights20) + " --image " +
                          repo(kCat) + " --image " + repo(kShip) + " --top 3 --json");
  const json::Value j = parse_json(r);
  CHECK(member(j, "model").string == "cifar-resnet20");
  CHECK(member(j, "batch").integer == 2);
  const auto& results = member(j, "results").array;
  REQUIRE(results.size() == 2);
  const auto& top_cat = member(results[0], "top").array;
  REQUIRE(top_cat.size() == 3);
  CHECK(member(top_cat[0], "index").integer == 3);
  CHECK(member(top_cat[0], "label").string == "cat");
  CHECK(member(top_cat[0], "score").number == Approx(23.7305).margin(1e-3));
  CHECK(member(member(results[1], "top").array[0], "label").string == "ship");
  CHECK(member(j, "run_ms").number > 0);
}

TEST_CASE("cli: run prints a readable top-K table", "[cli]") {
  const CliResult r = cli("run cifar-resnet20 --weights " + repo(kWeights20) + " --image " +
                          repo(kCat) + " --top 2");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("cifar10_00_3.png") && Catch::Contains("cat") &&
                        Catch::Contains(" ms"));
}

TEST_CASE("cli: run with --input, --labels and --save-outputs", "[cli]") {
  const auto dir = test::temp_dir("cli_io");
  // The preprocessed image as a .npy input, and WordNet-style labels.
  const Tensor x = load_image((test::repo_data_dir() / kCat).string(),
                              builtin_model_info("cifar-resnet20").preprocess);
  save_npy(x, (dir / "x.npy").string());
  {
    std::ofstream labels(dir / "labels.txt");
    for (int i = 0; i < 10; ++i) labels << "n0000000" << i << " class number " << i << "\n";
  }
  const CliResult r = cli("run cifar-resnet20 --weights " + repo(kWeights20) +
                          " --input input=" + test::shell_quote((dir / "x.npy").string()) + " --labels " +
                          test::shell_quote((dir / "labels.txt").string()) + " --save-outputs " +
                          test::shell_quote((dir / "out").string()) + " --json");
  const json::Value j = parse_json(r);
  const auto& top = member(member(j, "results").array.at(0), "top").array;
  CHECK(member(top.at(0), "label").string == "class number 3");
  const Tensor saved = load_npy((dir / "out" / "logits.npy").string());
  CHECK(saved.shape() == Shape{1, 10});
  CHECK(saved.data<float>()[3] == Approx(member(top[0], "score").number));
}

TEST_CASE("cli: run an exported ONNX model", "[cli]") {
  const auto dir = test::temp_dir("cli_onnx");
  const std::string path = (dir / "resnet20.onnx").string();
  save_onnx(build_model("cifar-resnet20", (test::repo_data_dir() / kWeights20).string()), path);
  // ImageNet mean/std are the default, and the 32x32 size comes from the model's input.
  const json::Value j =
      parse_json(cli("run " + test::shell_quote(path) + " --image " + repo(kCat) + " --json"));
  CHECK(member(member(member(j, "results").array.at(0), "top").array.at(0), "index").integer == 3);
  // --mean/--std/--size belong to ONNX models only.
  const CliResult bad = cli("run cifar-resnet20 --mean 0,0,0 --image " + repo(kCat));
  CHECK(bad.code == 2);
  CHECK_THAT(bad.err, Catch::Contains("--mean"));
}

TEST_CASE("cli: ops lists every registered op", "[cli]") {
  const CliResult text = cli("ops");
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Catch::Contains("Conv") && Catch::Contains("reference"));
  const json::Value j = parse_json(cli("ops --json"));
  // The built-in ops, as this process has them; other tests may have added ops of their own
  // domains (plugins, custom ops) to this process's registry, which the CLI does not have.
  std::set<std::string> builtin;
  for (const OpSchema* op : OpRegistry::global().ops())
    if (op->domain.empty() || op->domain == kMinferDomain)
      builtin.insert(op->domain + ":" + op->name);
  std::set<std::string> listed;
  for (const auto& op : member(j, "ops").array) {
    listed.insert(member(op, "domain").string + ":" + member(op, "name").string);
  }
  CHECK(listed == builtin);
  CHECK(member(j, "count").integer == static_cast<int64_t>(builtin.size()));
  bool conv_has_cpu = false;
  for (const auto& op : member(j, "ops").array)
    if (member(op, "name").string == "Conv")
      for (const auto& k : member(op, "kernels").array)
        conv_has_cpu |= member(k, "device").string == "cpu";
  CHECK(conv_has_cpu);
}

TEST_CASE("cli: inspect --json and --dot", "[cli]") {
  const auto dot = test::temp_dir("cli_dot") / "g.dot";
  const json::Value j =
      parse_json(cli("inspect cifar-resnet20 --opt-level 0 --json --dot " + test::shell_quote(dot.string())));
  CHECK(member(j, "parameters").integer == 269722 + 16 * 2 + (16 * 6 + 32 * 6 + 64 * 6) * 2);
  CHECK(member(j, "batch").integer == 1);  // symbolic, counted at 1
  CHECK(member(j, "macs").integer == kResnet20Macs);
  CHECK(member(j, "op_histogram").find("Conv")->integer == 19);
  const auto& nodes = member(j, "nodes").array;
  REQUIRE(member(j, "node_count").integer == static_cast<int64_t>(nodes.size()));
  CHECK(member(nodes.at(0), "name").string == "conv1");
  CHECK(member(nodes.at(0), "op").string == "Conv");
  CHECK(member(nodes.at(0), "output_shape").array.at(1).integer == 16);
  CHECK(member(j, "arena_bytes").integer > 0);
  CHECK(member(j, "arena_bytes").integer <= member(j, "naive_bytes").integer);
  const std::string dot_text = test::read_text(dot);
  CHECK_THAT(dot_text, Catch::StartsWith("digraph") && Catch::Contains("layer1.0.conv1"));
  const CliResult text = cli("inspect cifar-resnet20 --summary");
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Catch::Contains("MACs") && Catch::Contains("arena"));
  CHECK_THAT(text.out, Catch::Contains("at batch 1") && !Catch::Contains("per image"));
}

TEST_CASE("cli: inspect labels MACs and arena with the model's pinned batch", "[cli]") {
  const json::Value one = parse_json(cli("inspect cifar-resnet20 --summary --json"));
  const json::Value four =
      parse_json(cli("inspect cifar-resnet20 --shape input=4x3x32x32 --summary --json"));
  CHECK(member(four, "batch").integer == 4);
  CHECK(member(four, "macs").integer == 4 * kResnet20Macs);
  // Four images' activations: more arena than one image's.
  CHECK(member(four, "arena_bytes").integer > member(one, "arena_bytes").integer);
  const CliResult text = cli("inspect cifar-resnet20 --shape input=4x3x32x32");
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Catch::Contains("MACs at batch 4") && Catch::Contains("per image"));
  CHECK_THAT(text.out, !Catch::Contains("batch 1"));
  std::istringstream lines(text.out);
  std::string line;
  int labelled = 0;  // the node table's title, the MACs total and the arena total
  while (std::getline(lines, line)) labelled += line.find("at batch 4") != std::string::npos;
  CHECK(labelled == 3);
}

TEST_CASE("cli: bench --iterations 2", "[cli]") {
  const json::Value j =
      parse_json(cli("bench cifar-resnet20 --iterations 2 --warmup 1 --batch 2 --json"));
  CHECK(member(j, "iterations").integer == 2);
  CHECK(member(j, "batch").integer == 2);
  const auto& lat = member(j, "latency_ms");
  CHECK(member(lat, "min").number > 0);
  CHECK(member(lat, "min").number <= member(lat, "p50").number);
  CHECK(member(lat, "p50").number <= member(lat, "max").number);
  CHECK(member(j, "throughput_ips").number > 0);
  const CliResult text = cli("bench cifar-resnet20 --iterations 2");
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Catch::Contains("p99") && Catch::Contains("img/s"));
}

TEST_CASE("cli: eval on a labelled folder", "[cli]") {
  const json::Value j =
      parse_json(cli("eval cifar-resnet20 --weights " + repo(kWeights20) + " --dataset " +
                     shared("images/cifar10-jpeg") + " --limit 40 --batch 16 --json"));
  CHECK(member(j, "count").integer == 40);
  const double top1 = member(j, "top1").number;
  CHECK(top1 > 0.5);  // the real model: ~80% on this set
  CHECK(member(j, "top5").number >= top1);
  CHECK(member(j, "top1_correct").integer == static_cast<int64_t>(std::lround(top1 * 40)));
}

TEST_CASE("cli: bad command lines exit 2 with a message on stderr", "[cli]") {
  for (const std::string args :
       {"frobnicate", "run", "run cifar-resnet20 --bogus", "run cifar-resnet20",
        "bench cifar-resnet20 --iterations abc", "bench cifar-resnet20 --iterations 2 --duration 1",
        "eval cifar-resnet20", "run cifar-resnet20 --device tpu --image x.png",
        "inspect cifar-resnet20 extra-argument", "run cifar-resnet20 --top"}) {
    INFO(args);
    const CliResult r = cli(args);
    CHECK(r.code == 2);
    CHECK_FALSE(r.err.empty());
    CHECK(r.out.empty());
  }
}

TEST_CASE("cli: missing files and unsupported requests fail clearly", "[cli]") {
  struct Case {
    std::string args, message;
  };
  const std::vector<Case> cases{
      {"run cifar-resnet20 --weights /nonexistent/w.safetensors --image " + repo(kCat),
       "/nonexistent/w.safetensors"},
      {"run cifar-resnet20 --image /nonexistent/cat.png", "/nonexistent/cat.png"},
      {"run /nonexistent/model.onnx --image " + repo(kCat), "/nonexistent/model.onnx"},
      {"run resnet19 --image " + repo(kCat), "unknown model 'resnet19'"},
      {"eval cifar-resnet20 --dataset /nonexistent/dir", "/nonexistent/dir"},
      {"demo --data /nonexistent/dir", "/nonexistent/dir"},
      {"run cifar-resnet20 --input nope=x.npy", "no input 'nope'"},
  };
  for (const Case& c : cases) {
    INFO(c.args);
    const CliResult r = cli(c.args);
    CHECK(r.code == 1);
    CHECK_THAT(r.err, Catch::Contains(c.message));
  }
  if (!device_available("cuda")) {
    const CliResult r = cli("run cifar-resnet20 --device cuda --image " + repo(kCat));
    CHECK(r.code == 1);
    CHECK_THAT(r.err, Catch::Contains("CUDA", Catch::CaseSensitive::No));
  }
}

TEST_CASE("cli: a directory given as MODEL or --weights is named as one", "[cli]") {
  const auto dir = test::temp_dir("cli_dir_model");
  std::filesystem::create_directories(dir / "mymodel");
  std::filesystem::create_directories(dir / "weights.safetensors");
  struct Case {
    std::string args, message;
  };
  const std::string model_dir = (dir / "mymodel").string();
  const std::vector<Case> cases{
      {"run " + test::shell_quote(model_dir) + " --image " + repo(kCat),
       "MODEL '" + model_dir + "' is a directory"},
      {"inspect " + test::shell_quote(model_dir + "/"), "MODEL '" + model_dir + "/' is a directory"},
      {"run cifar-resnet20 --weights " + test::shell_quote((dir / "weights.safetensors").string()) +
           " --image " + repo(kCat),
       "weights.safetensors' is a directory"},
  };
  for (const Case& c : cases) {
    INFO(c.args);
    const CliResult r = cli(c.args);
    CHECK(r.code == 1);
    CHECK_THAT(r.err, Catch::Contains(c.message) && !Catch::Contains("does not exist"));
  }
  // A bare name (no '/' or '.') that is a folder here, not a built-in model.
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  const CliResult bare = cli("run mymodel --image " + repo(kCat));
  std::filesystem::current_path(cwd);
  CHECK(bare.code == 1);
  CHECK_THAT(bare.err, Catch::Contains("MODEL 'mymodel' is a directory") &&
                           !Catch::Contains("unknown model"));
}

TEST_CASE("cli: eval on the shipped CIFAR-10 pictures", "[cli]") {
  const json::Value j =
      parse_json(cli("eval cifar-resnet20 --weights " + repo(kWeights20) + " --dataset " +
                     repo("images/cifar10-png") + " --json"));
  CHECK(member(j, "count").integer == 20);
  CHECK(member(j, "top1_correct").integer == 20);  // as the reference logits say
}

TEST_CASE("cli: eval rejects labels that are not classes of the model", "[cli]") {
  const auto dir = test::temp_dir("cli_eval_labels");
  for (const char* f : {"cifar10_00_3.png", "cifar10_01_8.png"})
    std::filesystem::copy_file(test::repo_data_dir() / "images" / "cifar10-png" / f, dir / f);
  const std::string csv = (dir / "labels.csv").string();
  struct Case {
    std::string lines;  // labels.csv after its header
    std::vector<std::string> message;
  };
  const std::vector<Case> cases{
      {"cifar10_00_3.png,3\ncifar10_01_8.png,999\n",
       {csv + ":3", "label 999 is out of range", "10 classes (0..9)"}},
      {"cifar10_00_3.png,-1\ncifar10_01_8.png,8\n", {csv + ":2", "label -1 is negative"}},
      {"cifar10_00_3.png,10\n", {csv + ":2", "label 10 is out of range"}},
  };
  for (const Case& c : cases) {
    {
      std::ofstream f(csv);
      f << "file,label\n" << c.lines;
    }
    INFO(c.lines);
    const CliResult r = cli("eval cifar-resnet20 --dataset " + test::shell_quote(dir.string()));
    CHECK(r.code == 1);
    for (const std::string& part : c.message) CHECK_THAT(r.err, Catch::Contains(part));
    CHECK(r.out.empty());
  }
  // The same files with labels in range evaluate.
  {
    std::ofstream f(csv);
    f << "file,label\ncifar10_00_3.png,3\ncifar10_01_8.png,9\n";
  }
  const json::Value j =
      parse_json(cli("eval cifar-resnet20 --dataset " + test::shell_quote(dir.string()) + " --json"));
  CHECK(member(j, "count").integer == 2);
}

TEST_CASE("cli: demo classifies the shipped pictures and agrees with the reference", "[cli]") {
  const json::Value j = parse_json(cli("demo --json"));
  CHECK(member(j, "data").string == std::string(MINFER_SOURCE_DIR) + "/data");
  const auto& rows = member(j, "rows").array;
  int fp32_rows = 0, int8_rows = 0;
  for (const auto& row : rows) {
    const std::string precision = member(row, "precision").string;
    (precision == "int8" ? int8_rows : fp32_rows)++;
    INFO(member(row, "model").string << " " << precision << " batch "
                                     << member(row, "batch").integer);
    // int8 is checked against the int8 reference kernels: bit for bit, on every device.
    if (precision == "int8")
      CHECK(member(row, "max_abs_diff").number == 0);
    else
      CHECK(member(row, "max_abs_diff").number < 1e-3);
    CHECK(member(row, "argmax_agree").integer == member(row, "argmax_total").integer);
    CHECK(member(row, "throughput_ips").number > 0);
  }
  CHECK(fp32_rows >= 3);
  CHECK(int8_rows >= 3);
  // Without --calib, half of the 20 pictures calibrate int8 and the other half are classified.
  const auto& file_check = member(j, "reference_logits");
  CHECK(member(file_check, "images").integer == 10);
  CHECK(member(file_check, "argmax_agree").integer == 10);
  CHECK(member(file_check, "max_abs_diff").number < 1e-3);
  const auto& pictures = member(j, "classified").array;
  REQUIRE(pictures.size() == 10);
  const auto& names = cifar10_class_names();
  for (size_t i = 0; i < pictures.size(); ++i) {
    const auto& p = pictures[i];
    const std::string file = member(p, "file").string;
    INFO(file);
    CHECK(file.rfind("cifar10_0" + std::to_string(i) + "_", 0) == 0);
    // The real model gets each of these right (the reference logits say so).
    const int64_t label = member(p, "label").integer;
    CHECK(file == "cifar10_0" + std::to_string(i) + "_" + std::to_string(label) + ".png");
    CHECK(member(p, "fp32").integer == label);
    CHECK(member(p, "fp32_class").string == names.at(size_t(label)));
    CHECK(member(p, "fp32_probability").number > 0.5);
    CHECK(member(p, "int8_class").string == names.at(size_t(member(p, "int8").integer)));
  }
  // The real ResNet-20 in int8, calibrated on the other 10 pictures, keeps fp32's top-1 on
  // these 10 (9 would still be a fine int8 model; fewer is a regression).
  bool found = false;
  for (const auto& c : member(j, "int8_vs_fp32").array)
    if (member(c, "model").string == "cifar-resnet20") {
      found = true;
      CHECK(member(c, "images").integer == 10);
      CHECK(member(c, "calibration_samples").integer == 10);
      CHECK(member(c, "top1_agree_with_fp32").integer >= 9);
    }
  CHECK(found);
}

#ifdef MINFER_PLUGIN_PATH
TEST_CASE("cli: --plugin adds the plugin's ops", "[cli]") {
  const json::Value j =
      parse_json(cli(std::string("ops --json --plugin ") + test::shell_quote(MINFER_PLUGIN_PATH)));
  bool found = false;
  for (const auto& op : member(j, "ops").array)
    found |= member(op, "name").string == "Swish" && member(op, "domain").string == "com.example";
  CHECK(found);
  const CliResult bad = cli("ops --plugin /nonexistent/libnope.so");
  CHECK(bad.code == 1);
  CHECK_THAT(bad.err, Catch::Contains("/nonexistent/libnope.so"));
}
#endif
