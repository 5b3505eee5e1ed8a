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
if [[ ! -d "${MINFER_DATA:-../shared/data}" ]]; then
  echo "note: no ../shared/data (or \$MINFER_DATA): the tests on the larger data sets were" \
       "skipped (listed above as not run); everything else ran."
fi
# The Python package (pip install . into the virtualenv install-deps.sh made) and its tests,
# the Ray Serve example's included.
venv=${MINFER_VENV:-$PWD/.venv}
# The compiler and CUDA choice of the build above, so that ccache serves the library's objects.
cached() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
py_opts=(--config-settings=cmake.define.CMAKE_CXX_COMPILER="$(cached CMAKE_CXX_COMPILER)"
         --config-settings=cmake.define.MINFER_WITH_CUDA="$(cached MINFER_WITH_CUDA)")
command -v ccache >/dev/null &&
  py_opts+=(--config-settings=cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache)
CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) "$venv/bin/python" -m pip install -q \
  --disable-pip-version-check --no-build-isolation "${py_opts[@]}" .
MINFER_REQUIRE_SERVE=1 "$venv/bin/python" -m pytest -q python/tests
