#!/usr/bin/env bash
# Installs minfer from the build tree into a temporary prefix, then builds examples/embed as
# a separate CMake project with find_package(minfer) and runs it.
set -euo pipefail
source_dir=$1
build_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cmake -S "$source_dir/examples/embed" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" -j2 >/dev/null
out=$("$work/build/embed")
echo "$out"
[[ "$out" == class* ]]
