// `minfer bench --profile / --trace / --json`: the per-step profile, read back from its JSON.
#include <cmath>

#include "cli_test_util.h"
#include "runtime/json.h"

using namespace minfer;
using minfer::test::cli;
using minfer::test::CliResult;

namespace {

const json::Value& member(const json::Value& v, const char* key) {
  const json::Value* m = v.find(key);
  INFO("JSON member '" << key << "'");
  REQUIRE(m != nullptr);
  return *m;
}

// cifar-resnet20's MACs at batch 1 (as in test_cli.cpp).
constexpr double kResnet20Macs = 32 * 32 * 16 * 27 + 6 * 32 * 32 * 16 * 144 + 16 * 16 * 32 * 144 +
                                 5 * 16 * 16 * 32 * 288 + 8 * 8 * 64 * 288 + 5 * 8 * 8 * 64 * 576 +
                                 640;

}  // namespace

TEST_CASE("cli: bench --profile --json --trace", "[cli][profile]") {
  const auto trace = test::temp_dir("profile_trace") / "t.json";
  const CliResult r =
      cli("bench cifar-resnet20 --threads 1 --iterations 10 --profile-runs 5 "
          "--profile --json --trace " +
          test::shell_quote(trace.string()));
  INFO("stderr: " << r.err);
  REQUIRE(r.code == 0);
  const json::Value j = json::parse(r.out);
  const json::Value& p = member(j, "profile");
  CHECK(member(p, "runs").integer == 5);
  const auto& steps = member(p, "steps").array;
  REQUIRE(steps.size() > 20);  // 19 convs (fused), pooling, the classifier

  double sum_ms = 0, conv_flops = 0, gemm_flops = 0;
  int fused_residual = 0;
  for (const json::Value& s : steps) {
    const double ms = member(s, "ms").number;
    CHECK(ms >= 0);
    CHECK(member(s, "mean_ms").number >= 0);
    sum_ms += ms;
    CHECK(member(s, "share").number >= 0);
    CHECK(member(s, "bytes").number > 0);
    CHECK(!member(s, "kernel").string.empty());
    CHECK(member(s, "roofline_pct").number >= 0);
    const std::string& op = member(s, "op").string;
    if (op == "FusedConv") {
      conv_flops += member(s, "flops").number;
      const std::string& fused = member(s, "fused").string;
      CHECK(fused.rfind("Conv", 0) == 0);
      fused_residual += fused.find("+ Add") != std::string::npos;
      CHECK(member(s, "gflops_per_s").number > 0);
    }
    if (op == "Gemm" || op == "FusedGemm") gemm_flops += member(s, "flops").number;
  }
  // 2 FLOPs per MAC, plus one per output element for each fused bias, residual, activation
  CHECK(conv_flops + gemm_flops >= 2 * kResnet20Macs);
  CHECK(conv_flops + gemm_flops <= 2.1 * kResnet20Macs);
  CHECK(fused_residual == 9);  // one residual Add per basic block
  CHECK(std::abs(member(p, "steps_ms").number - sum_ms) < 1e-6 * (1 + sum_ms));
  // the steps account for the time of the runs they were measured in: means, as the steps
  // happen within the runs (loose: the cores are shared with other tests). The ratios to the
  // separately timed runs are only checked for presence: under load they move either way
  // (0.29 was seen with a build beside the tests, 1.51 under AddressSanitizer in CI).
  const double ratio =
      member(p, "steps_mean_ms").number / member(p, "profiled_run_mean_ms").number;
  CHECK(ratio > 0.5);
  CHECK(ratio < 1.001);  // (1.001: the JSON rounds)
  CHECK(member(p, "steps_over_latency").number > 0);
  const double mean_ratio = member(p, "steps_mean_over_latency_mean").number;
  CHECK(std::isfinite(mean_ratio));
  CHECK(mean_ratio > 0);
  const json::Value& peak = member(p, "peak");
  CHECK(member(peak, "gflops_per_s").number > 0);
  CHECK(member(peak, "gb_per_s").number > 0);
  CHECK_THAT(member(peak, "method").string, Catch::Contains("measured"));

  const json::Value t = json::parse(test::read_text(trace));
  const auto& events = member(t, "traceEvents").array;
  REQUIRE(events.size() == steps.size());
  CHECK(member(events[0], "ph").string == "X");
  CHECK(member(events[1], "ts").number >= member(events[0], "ts").number);
}

TEST_CASE("cli: bench --profile prints the per-step table", "[cli][profile]") {
  const CliResult r =
      cli("bench cifar-resnet20 --threads 1 --iterations 3 --profile-runs 2 "
          "--profile");
  INFO("stderr: " << r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("GFLOP/s") && Catch::Contains("roofline") &&
                        Catch::Contains("FusedConv (Conv + Add + Relu)") &&
                        Catch::Contains("step medians add up to") &&
                        Catch::Contains("step means add up to"));
  CHECK(cli("bench cifar-resnet20 --profile-runs 0 --profile").code != 0);
}
