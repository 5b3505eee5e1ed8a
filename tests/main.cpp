// The test binary's entry point: Catch2's, then removal of the temporary directories that
// this process made with test::temp_dir.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>
#include <unistd.h>

#include <filesystem>
#include <string>

int main(int argc, char* argv[]) {
  const int result = Catch::Session().run(argc, argv);
  if (!std::getenv("MINFER_KEEP_TEST_DIRS")) {  // set it to look at a failed test's files
    const std::string prefix = "minfer_test_" + std::to_string(::getpid()) + "_";
    std::error_code ec;
    for (const auto& entry :
         std::filesystem::directory_iterator(std::filesystem::temp_directory_path(), ec))
      if (entry.path().filename().string().rfind(prefix, 0) == 0)
        std::filesystem::remove_all(entry.path(), ec);
  }
  return result;
}
