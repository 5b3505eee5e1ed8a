#!/usr/bin/env bash
# Installs what is missing, builds everything (Release) and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test
build=${MINFER_BUILD_DIR:-build}
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# Tests ON explicitly: scripts/demo.sh configures the same folder without them.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DMINFER_BUILD_TESTS=ON "${launcher[@]}"
cmake --build "$build" -j"$(nproc)"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" --timeout 1500 --no-tests=error
