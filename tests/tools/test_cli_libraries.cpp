// A CUDA-enabled build must start where no CUDA library is installed: the CUDA runtime is
// linked statically (it opens the driver itself on the first CUDA call) and cuBLAS is opened
// on first use, so no binary names a CUDA library in its dynamic section. Runs in every
// build: without CUDA it passes trivially, but still checks that the ELF reading works.
#include <unistd.h>

#include "cli_test_util.h"
#include "tools/elf_needed.h"

namespace minfer::test {
namespace {

bool is_cuda_library(const std::string& name) {
  // libcudart, libcuda, libcublas(Lt), libcudnn, ...; libnvrtc, libnvJitLink, ...
  return name.rfind("libcu", 0) == 0 || name.rfind("libnv", 0) == 0;
}

void check_needs_no_cuda_library(const std::string& path) {
  INFO(path);
  const std::vector<std::string> needed = elf_needed_libraries(path);
  // Every binary here is dynamically linked against libc: none found means a broken reader.
  CHECK(std::find(needed.begin(), needed.end(), "libc.so.6") != needed.end());
  for (const std::string& name : needed) {
    INFO("DT_NEEDED " << name);
    CHECK_FALSE(is_cuda_library(name));
  }
}

TEST_CASE("cli: no binary needs a CUDA library to start", "[cli]") {
  check_needs_no_cuda_library(MINFER_CLI_PATH);
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  REQUIRE(n > 0);
  check_needs_no_cuda_library(std::string(self, size_t(n)));  // the tests, linked the same way
}

// cudart_static opens libcuda.so.1 on the first CUDA call, and the cuBLAS loader its
// libraries: the dynamic loader's trace (LD_DEBUG=libs) shows either being looked for.
TEST_CASE("cli: a CPU run of a CUDA-enabled build opens no CUDA library", "[cli]") {
  ::setenv("LD_DEBUG", "libs", 1);
  const CliResult r = cli("bench cifar-resnet20 --iterations 1 --warmup 0");
  ::unsetenv("LD_DEBUG");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.err, Catch::Contains("find library=libc.so.6"));  // the trace is there
  CHECK_THAT(r.err, !Catch::Contains("libcuda") && !Catch::Contains("libcublas"));
}

}  // namespace
}  // namespace minfer::test
