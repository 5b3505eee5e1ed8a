// MINFER_ISA through the command line: every level this CPU has runs and is reported by
// `bench --json`; a level it lacks, or a name that is no level, is an error message and a
// non-zero exit, never a crash.
#include <cstdlib>
#include <string>

#include "backends/cpu/isa.h"
#include "cli_test_util.h"

using minfer::test::cli;
using minfer::test::CliResult;
namespace cpu = minfer::cpu;

namespace {

CliResult bench_int8() {
  return cli("bench cifar-resnet20 --precision int8 --calib random --calib-count 2 "
             "--iterations 1 --warmup 0 --json");
}

}  // namespace

TEST_CASE("cli: MINFER_ISA picks the int8 kernels' level and refuses what the CPU lacks",
          "[cli][isa]") {
  for (cpu::Isa isa : cpu::kAllIsas) {
    minfer::test::ScopedEnv env("MINFER_ISA", cpu::isa_name(isa));
    const CliResult r = bench_int8();
    INFO(cpu::isa_name(isa) << "\nstdout: " << r.out << "\nstderr: " << r.err);
    if (cpu::isa_supported(isa)) {
      CHECK(r.code == 0);
      CHECK_THAT(r.out, Catch::Contains(std::string("\"cpu-int8-gemm [") + cpu::isa_name(isa) +
                                        "]\""));
    } else {
      CHECK(r.code > 0);
      CHECK(r.code < 128);  // an exit, not a signal (the shell reports those as 128 + n)
      CHECK_THAT(r.err, Catch::Contains("cannot run"));
    }
  }
  minfer::test::ScopedEnv env("MINFER_ISA", "sse2");
  const CliResult r = bench_int8();
  CHECK(r.code > 0);
  CHECK(r.code < 128);
  CHECK_THAT(r.err, Catch::Contains("MINFER_ISA=sse2"));
}
