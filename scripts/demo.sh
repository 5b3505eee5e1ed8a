#!/usr/bin/env bash
# Installs what is missing, builds the minfer command line (Release) and runs the demo on the
# data shipped in data/ (the real CIFAR-10 ResNet-20 and 20 CIFAR-10 pictures).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
build=${MINFER_BUILD_DIR:-build}
options=()
# A fresh build folder is configured without the tests, which need Catch2 (scripts/test.sh
# installs it and turns them on); a folder configured before keeps its choice, so that running
# the demo after the tests leaves them in place.
[[ -f "$build/CMakeCache.txt" ]] || options=(-DMINFER_BUILD_TESTS=OFF)
# The same compiler launcher as scripts/test.sh, so that running both (either order) builds the
# library once.
command -v ccache >/dev/null && options+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "${options[@]}"
cmake --build "$build" -j"$(nproc)" --target minfer_cli
# More calibration images for int8 when the shared test data sits next to the project.
extra=()
[[ -d ../shared/data/images/cifar10-jpeg ]] && extra=(--calib ../shared/data/images/cifar10-jpeg)
"$build/minfer" demo "${extra[@]}"
