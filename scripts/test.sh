#!/usr/bin/env bash
# Installs what is missing, builds everything (Release) and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test
build=${MINFER_BUILD_DIR:-build}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# Tests on, whatever an earlier configure of the same folder chose (scripts/demo.sh configures
# a fresh folder without them).
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DMINFER_BUILD_TESTS=ON "${launcher[@]}"
cmake --build "$build" -j"$(nproc)"
# --no-tests=error: a build without tests is a failure, not "No tests were found" and exit 0.
ctest --test-dir "$build" --output-on-failure --no-tests=error -j"$(nproc)" --timeout 1500
