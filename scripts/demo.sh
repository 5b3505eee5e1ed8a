#!/usr/bin/env bash
# Installs what is missing, builds the minfer command line (Release) and runs the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
build=${MINFER_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DMINFER_BUILD_TESTS=OFF
cmake --build "$build" -j"$(nproc)" --target minfer_cli
data=()
[[ -d ../shared/data ]] && data=(--data ../shared/data)
"$build/minfer" demo "${data[@]}"
