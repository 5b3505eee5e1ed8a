// `minfer quantize` and `--precision int8` on the command line, run as a separate process.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "minfer/calibrate.h"
#include "cli_test_util.h"
#include "repo_data.h"

using namespace minfer;
using minfer::test::cli;
using minfer::test::CliResult;

namespace {

// A file of the project's data/ folder, and one of the shared data (the larger sets), quoted.
std::string repo(const std::string& rel) {
  return test::shell_quote((test::repo_data_dir() / rel).string());
}
std::string shared(const std::string& rel) {
  return test::shell_quote((test::data_dir() / rel).string());
}

}  // namespace

TEST_CASE("minfer quantize writes a QDQ model that run and eval use", "[int8][cli]") {
  const auto dir = test::temp_dir("int8_cli_quantize");
  const std::string model = (dir / "r20_int8.onnx").string();
  const std::string table = (dir / "r20.calib.json").string();
  const std::string cat = repo("images/cifar10-png/cifar10_00_3.png");
  CliResult q = cli("quantize cifar-resnet20 --weights " + repo("models/resnet20.safetensors") +
                    " --calib " + repo("images/cifar10-png") + " --calib-count 12 -o " +
                    test::shell_quote(model) + " --table " + test::shell_quote(table) + " --report");
  INFO("stdout: " << q.out << "\nstderr: " << q.err);
  REQUIRE(q.code == 0);
  CHECK(q.out.find("SQNR") != std::string::npos);
  CHECK(q.out.find("layer3.2.relu") != std::string::npos);
  CHECK(q.err.find("calibrating") != std::string::npos);  // the progress lines

  Graph g = load_onnx(model);
  int quantize = 0;
  for (const Node* n : g.nodes()) quantize += n->op_type == "QuantizeLinear";
  CHECK(quantize > 10);
  CHECK(CalibrationTable::load(table).samples == 12);

  // The QDQ file runs on int8 kernels; the table is reused by --precision int8.
  CliResult r = cli("run " + test::shell_quote(model) + " --image " + cat);
  INFO("stderr: " << r.err);
  CHECK(r.code == 0);
  CliResult e = cli("eval cifar-resnet20 --weights " + repo("models/resnet20.safetensors") +
                    " --dataset " + shared("images/cifar10-jpeg") +
                    " --limit 20 --precision int8 --calib-table " + test::shell_quote(table));
  INFO("stderr: " << e.err);
  CHECK(e.code == 0);
  CHECK(e.out.find("top-1") != std::string::npos);

  // Mistakes: int8 eval with nothing to calibrate on; a bad method; no output.
  CHECK(cli("eval cifar-resnet20 --dataset " + shared("images/cifar10-jpeg") +
            " --precision int8").code == 2);
  CHECK(cli("quantize cifar-resnet20 --calib random --method kl -o " + test::shell_quote(model)).code == 1);
  CHECK(cli("quantize cifar-resnet20 --calib random").code == 2);
  CliResult random = cli("quantize cifar-resnet20 --calib random -o " +
                         test::shell_quote((dir / "random.onnx").string()));
  CHECK(random.code == 0);
  CHECK(random.err.find("RANDOM") != std::string::npos);
}

// Most model-zoo files fix the batch at 1 ([1, 3, H, W]): calibration then runs the samples one
// at a time instead of stacking them (it used to stack 8 and fail on the input's shape).
TEST_CASE("minfer quantize calibrates a model whose input has a fixed batch", "[int8][cli]") {
  const auto dir = test::temp_dir("int8_cli_fixed_batch");
  const std::string src = test::shell_quote(
      (std::filesystem::path(MINFER_SOURCE_DIR) / "tests/python/tiny_models/efficientnet_op13.onnx")
          .string());
  const std::string out = test::shell_quote((dir / "q.onnx").string());
  // Random samples (stacked by Calibrator::add_all) and image files (stacked as they are read).
  const std::string images = test::shell_quote(
      (std::filesystem::path(MINFER_SOURCE_DIR) / "data/images/cifar10-png").string());
  for (const std::string calib : {"random", images.c_str()}) {
    CliResult q = cli("quantize " + src + " --calib " + calib + " --calib-count 9 -o " + out);
    INFO("--calib " << calib << ", stderr: " << q.err);
    REQUIRE(q.code == 0);
    CHECK(q.err.find("9 samples") != std::string::npos);
    CliResult b = cli("bench " + out + " --iterations 1 --warmup 0");
    INFO("stderr: " << b.err);
    CHECK(b.code == 0);
  }
}
