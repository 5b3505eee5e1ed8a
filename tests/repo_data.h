// The real data shipped in the project's data/ folder (see data/README.md): the CIFAR-10
// ResNet-20 weights and reference logits, the 20 CIFAR-10 test PNGs and their labels.csv.
// It is always there, so the tests that use it need nothing beside the project; the larger
// sets are in the shared data (test::data_dir(), test_util.h).
#pragma once

#include <catch2/catch.hpp>

#include <filesystem>

namespace minfer::test {

inline std::filesystem::path repo_data_dir() {
  auto p = std::filesystem::path(MINFER_SOURCE_DIR) / "data";
  INFO("the project's data folder is missing: " << p.string());
  REQUIRE(std::filesystem::is_directory(p));
  return p;
}

}  // namespace minfer::test
