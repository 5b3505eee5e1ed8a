// Calibration that streams: sample files read a batch at a time (add_sample_files) give the
// table that loading them all and add_all gives, for every method.
#include <catch2/catch.hpp>

#include "minfer/minfer.h"
#include "repo_data.h"
#include "runtime/calibrate_samples.h"
#include "test_util.h"

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

// A sample of another shape (here a [2, ...] batch file) ends a batch early and goes alone,
// as add_all groups it: the batch filled while reading must hold only the rows it got.
TEST_CASE("calibration from files a batch at a time: a batch file among images",
          "[int8][calibrate]") {
  const Graph g = build_model(
      "cifar-resnet20", (test::repo_data_dir() / "models" / "resnet20.safetensors").string());
  const ImagePreprocess pre = builtin_model_info("cifar-resnet20").preprocess;
  std::vector<std::string> files =
      list_calibration_files({(test::repo_data_dir() / "images" / "cifar10-png").string()}, 9);
  REQUIRE(files.size() == 9);
  const std::string npy = (test::temp_dir("calib_streaming") / "pair.npy").string();
  save_npy(stack_batch({load_image(files[7], pre), load_image(files[8], pre)}), npy);
  files.insert(files.begin() + 6, npy);  // batches of 4: 4 images, 2 images, the pair, 3 images
  CalibrationOptions co;
  co.progress = false;
  co.batch = 4;
  co.threads = 1;
  Calibrator all(g, co), streamed(g, co);
  all.add_all(load_calibration_samples(files, pre));
  add_sample_files(streamed, files, pre, co);
  REQUIRE(streamed.samples() == 11);
  REQUIRE(all.samples() == 11);
  for (auto method : {CalibrationMethod::minmax, CalibrationMethod::percentile}) {
    INFO(calibration_method_name(method));
    const CalibrationTable a = all.table(method), b = streamed.table(method);
    REQUIRE(a.ranges.size() == b.ranges.size());
    for (const auto& [name, r] : a.ranges) {
      INFO(name);
      REQUIRE(b.ranges.count(name) == 1);
      CHECK(b.ranges.at(name).lo == r.lo);
      CHECK(b.ranges.at(name).hi == r.hi);
    }
  }
}
