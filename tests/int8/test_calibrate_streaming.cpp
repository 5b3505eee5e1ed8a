// Calibration that streams: sample files read a batch at a time (add_sample_files) give the
// table that loading them all and add_all gives, for every method.
#include <catch2/catch.hpp>

#include "minfer/minfer.h"
#include "repo_data.h"
#include "runtime/calibrate_samples.h"

using namespace minfer;

TEST_CASE("calibration from files a batch at a time equals add_all on all of them",
          "[int8][calibrate]") {
  const Graph g = build_model(
      "cifar-resnet20", (test::repo_data_dir() / "models" / "resnet20.safetensors").string());
  const ImagePreprocess pre = builtin_model_info("cifar-resnet20").preprocess;
  const std::vector<std::string> dir{(test::repo_data_dir() / "images" / "cifar10-png").string()};
  CalibrationOptions co;
  co.progress = false;
  co.batch = 4;  // 10 files: batches of 4, 4 and 2
  co.threads = 1;
  Calibrator all(g, co), streamed(g, co);
  all.add_all(load_calibration_samples(dir, pre, 10));
  const std::vector<std::string> files = list_calibration_files(dir, 10);
  REQUIRE(files.size() == 10);
  add_sample_files(streamed, files, pre, co);
  REQUIRE(streamed.samples() == all.samples());
  for (auto method : {CalibrationMethod::minmax, CalibrationMethod::percentile,
                      CalibrationMethod::entropy, CalibrationMethod::mse}) {
    INFO(calibration_method_name(method));
    const CalibrationTable a = all.table(method), b = streamed.table(method);
    REQUIRE(a.ranges.size() == b.ranges.size());
    REQUIRE(!a.ranges.empty());
    for (const auto& [name, r] : a.ranges) {
      INFO(name);
      REQUIRE(b.ranges.count(name) == 1);
      CHECK(b.ranges.at(name).lo == r.lo);
      CHECK(b.ranges.at(name).hi == r.hi);
    }
  }
}
