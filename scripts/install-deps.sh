#!/usr/bin/env bash
# Installs what minfer needs on Debian 12 (run as root). With --test, also what the tests
# need: Catch2, and Python's onnx/onnxruntime/numpy as test oracles (never needed by the
# library itself), and a virtualenv ($MINFER_VENV, default .venv) with what the Python
# package and its tests need (python/requirements-test.txt, pinned).
set -euo pipefail
packages=(cmake g++ make libeigen3-dev libonnx-dev libprotobuf-dev protobuf-compiler libstb-dev
          libomp-dev ccache)
if [[ "${1:-}" == "--test" ]]; then
  packages+=(catch2 python3 python3-pip python3-venv python3-dev)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [[ "${1:-}" == "--test" ]]; then
  if ! python3 -c "import onnx, onnxruntime, numpy" 2>/dev/null; then
    python3 -m pip install -q --break-system-packages onnx onnxruntime numpy 2>/dev/null ||
      python3 -m pip install -q onnx onnxruntime numpy
  fi
fi
if [[ "${1:-}" == "--test" ]]; then
  # Debian's pip refuses system-wide installs of these: they go into a virtualenv.
  venv=${MINFER_VENV:-$(cd "$(dirname "$0")/.." && pwd)/.venv}
  [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check \
    -r "$(dirname "$0")/../python/requirements-test.txt"
fi
