#!/usr/bin/env bash
# Sanitizer job: ASan+UBSan over the unit, fault and CLI tests; TSan (OpenMP off) over the
# tests tagged [concurrency]. A report from any process fails the job, the command-line
# tests' child processes included: every report is written to a file (log_path) and the job
# fails if any file appears, whatever the exit codes the tests saw.
#   scripts/sanitize.sh [asan|tsan|all]   (default all; builds in build-asan/, build-tsan/)
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}
jobs=${JOBS:-$(nproc)}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
reports=$(mktemp -d)
trap 'rm -rf "$reports"' EXIT
# -O1: sanitizer builds are about compiling fast and catching errors, not speed.
common=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -g -DNDEBUG"
        -DMINFER_WITH_CUDA=OFF -DMINFER_BUILD_BENCH=OFF "${launcher[@]}")

fail_on_reports() {
  if compgen -G "$reports/*" >/dev/null; then
    echo "sanitizer reports:" >&2
    cat "$reports"/* >&2
    exit 1
  fi
}

if [[ $what == asan || $what == all ]]; then
  cmake -S . -B build-asan "${common[@]}" -DMINFER_SANITIZE=address,undefined
  cmake --build build-asan -j"$jobs" --target minfer_tests minfer_fault_tests minfer_cli
  export ASAN_OPTIONS="log_path=$reports/asan:detect_leaks=1:abort_on_error=0"
  export UBSAN_OPTIONS="log_path=$reports/ubsan:print_stacktrace=1"
  export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp"
  # install_and_embed builds another project; cuda tests skip without a GPU anyway.
  ctest --test-dir build-asan --output-on-failure --no-tests=error -j"$jobs" --timeout 1500 \
    -E 'install_and_embed'
  unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
  fail_on_reports
fi

if [[ $what == tsan || $what == all ]]; then
  cmake -S . -B build-tsan "${common[@]}" -DMINFER_SANITIZE=thread -DMINFER_WITH_OPENMP=OFF
  cmake --build build-tsan -j"$jobs" --target minfer_tests
  TSAN_OPTIONS="log_path=$reports/tsan:halt_on_error=0" \
    build-tsan/tests/minfer_tests "[concurrency]"
  fail_on_reports
fi
echo "sanitizers: no reports"
