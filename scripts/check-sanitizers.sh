#!/usr/bin/env bash
# CI's sanitizer and fuzzing job (run by .ci/run after scripts/test.sh):
#   1. builds minfer, its tests and the fuzz target with clang, AddressSanitizer and UBSan
#      (CPU only; OpenMP off, as libomp's own allocations would read as leaks);
#   2. runs every test under them: any report fails the run, in the test process and in the
#      CLI processes the tests start (UBSan halts on its first report);
#   3. builds the [concurrency] tests again with ThreadSanitizer (their own binary) and runs them
#      (threads sharing a Session, its plan cache and the CPU task pool) under it;
#   4. replays fuzz/regressions, then fuzzes the ONNX loader from a seed corpus of the ONNX
#      conformance models (fuzz/README.md): MINFER_FUZZ_RUNS inputs (default 300000) from the
#      fixed MINFER_FUZZ_SEED (default 1), so that a run is reproducible and CI does not fail
#      at random on an old bug a new mutation happens to reach; MINFER_FUZZ_SECONDS=N instead
#      fuzzes for N seconds from a random seed (exploring: what it finds goes to
#      fuzz/regressions with its fix).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test
missing=()
for p in clang libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

build=${MINFER_SANITIZE_BUILD_DIR:-build-sanitize}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ "${launcher[@]}" \
  -DMINFER_SANITIZE=address,undefined -DMINFER_FUZZ=ON \
  -DMINFER_WITH_CUDA=OFF -DMINFER_WITH_OPENMP=OFF -DMINFER_BUILD_TESTS=ON
cmake --build "$build" -j"$(nproc)"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
ctest --test-dir "$build" --output-on-failure --no-tests=error -j"$(nproc)" --timeout 3000

# ThreadSanitizer on the tests where threads meet (it cannot share a build with ASan).
tsan=${MINFER_TSAN_BUILD_DIR:-build-tsan}
cmake -S . -B "$tsan" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ "${launcher[@]}" \
  -DMINFER_SANITIZE=thread -DMINFER_WITH_CUDA=OFF -DMINFER_WITH_OPENMP=OFF \
  -DMINFER_BUILD_TESTS=ON -DMINFER_BUILD_BENCH=OFF
cmake --build "$tsan" -j"$(nproc)" --target minfer_concurrency_tests  # (not the whole suite)
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 "$tsan/tests/minfer_concurrency_tests" \
  "[concurrency]"

fuzzer=$build/fuzz/fuzz_onnx_load
"$fuzzer" fuzz/regressions/*.onnx
corpus=$(mktemp -d)  # fresh each time: a grown corpus would make the run differ
trap 'rm -rf "$corpus"' EXIT
cp fuzz/regressions/*.onnx "$corpus/"
data=${MINFER_DATA:-../shared/data}
if [[ -d "$data/onnx-node-tests" ]]; then
  for d in "$data"/onnx-node-tests/*/; do cp "$d/model.onnx" "$corpus/$(basename "$d").onnx"; done
fi
if [[ -n "${MINFER_FUZZ_SECONDS:-}" ]]; then
  budget=(-max_total_time="$MINFER_FUZZ_SECONDS")
else
  budget=(-seed="${MINFER_FUZZ_SEED:-1}" -runs="${MINFER_FUZZ_RUNS:-300000}")
fi
"$fuzzer" "$corpus" "${budget[@]}" -rss_limit_mb=2048 -timeout=10 -max_len=65536 \
  -dict=fuzz/onnx.dict -artifact_prefix="$build/" -print_final_stats=1
