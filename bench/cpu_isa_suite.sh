#!/usr/bin/env bash
# The CPU kernels of every ISA level on a machine that has them (the GPU machine's host CPU is
# an AVX-512 Xeon; the development machines may be AVX2-only): the CPU tests, each ISA level
# capped in turn, and minfer against ONNX Runtime at each cap, in one run.
#
#   bash bench/cpu_isa_suite.sh pack MODEL.onnx...   # here, after a build (scripts/test.sh)
#   bash bench/cpu_isa_suite.sh run                  # there, from the repository root
#   bash bench/cpu_isa_suite.sh layers               # there: each model's time per layer
#   bash bench/cpu_isa_suite.sh pack-peers           # here; then `peers` there: cpu_peers.py
#
# `pack` gathers into .carry/ (git-ignored): minfer and minfer_tests, the non-system shared
# libraries they link (stripped; the binaries also xz'd), an ONNX Runtime wheel for the other
# machine's Python (PyPI: `pip download`; ORT_WHEEL_PYTHON, default 3.12) and the models made
# small by bench/constant_weights.py (their weights rebuilt at load time; needs `onnx` here),
# plus ResNet-18 and -50 exported by minfer itself, and the test data. `run` prints the CPU,
# runs the CPU tests (every ISA level the CPU has: the tests loop over them), installs the
# wheel into a temporary folder, and runs bench/onnx_vs_ort.py at 1 and 2 threads (THREADS) once
# per configuration (CONFIGS: "native" or one VAR=value for minfer, e.g. MINFER_ISA=avx2 or
# MINFER_CPU_CONV_GEMM_ALL=0; default "MINFER_ISA=avx2 native"). `layers` runs
# bench/layer_times.py (minfer's and ORT's time per conv/GEMM layer) on each model at THREADS.
# Logs and tables go to $OUT (or out/).
set -euo pipefail
cd "$(dirname "$0")/.."
carry=.carry

# A fresh $carry with the given binaries and the non-system libraries they link. The working
# tree and what it carries travel within 64 MiB: the binaries go stripped and xz'd.
pack_binaries() {
  rm -rf "$carry"
  mkdir -p "$carry/bin" "$carry/lib"
  cp "$@" "$carry/bin/"
  ldd "$@" | awk '/=>/ {print $3}' | sort -u |
    grep -E 'libprotobuf|libonnx|libgomp|libomp' | xargs -r -I{} cp -L {} "$carry/lib/"
  strip "$carry"/bin/* "$carry"/lib/*
  xz -T0 "$carry"/bin/*
}

# The binaries unpacked, their libraries on LD_LIBRARY_PATH, the CPU described in $out/cpu.txt.
unpack_binaries() {
  mkdir -p "$out"
  export LD_LIBRARY_PATH=$PWD/$carry/lib:${LD_LIBRARY_PATH:-}
  { lscpu | grep -E 'Model name|^CPU\(s\)'
    grep -o -w -E 'avx2|avx512f|avx512_vnni|avx_vnni|amx_int8|avx512_fp16' /proc/cpuinfo |
      sort -u | tr '\n' ' '; echo; } | tee "$out/cpu.txt"
  xz -d -k -f "$carry"/bin/*.xz
}

pack() {
  pack_binaries build/minfer build/tests/minfer_tests
  mkdir -p "$carry/wheels" "$carry/models"
  python3 -m pip download "onnxruntime==1.32.0" --no-deps --only-binary=:all: \
    --python-version "${ORT_WHEEL_PYTHON:-3.12}" --platform manylinux_2_28_x86_64 \
    -d "$carry/wheels" >/dev/null
  for model in "$@"; do
    python3 bench/constant_weights.py "$model" "$carry/models/$(basename "$model")"
  done
  for depth in 18 50; do
    build/minfer export "resnet$depth" --opt-level 0 -o "$carry/models/resnet$depth.onnx" >/dev/null
    python3 bench/constant_weights.py "$carry/models/resnet$depth.onnx" \
      "$carry/models/resnet$depth.onnx"
  done
  # The test data (../shared/data, where present): the int8 accuracy and conformance tests.
  [ -d ../shared/data ] && cp -r ../shared/data "$carry/data"
  du -sh "$carry"
}

# The binaries unpacked, ORT's wheel installed (PYTHONPATH), the CPU described in $out/cpu.txt.
prepare() {
  unpack_binaries
  local site
  site=$(mktemp -d)
  python3 -m pip install --quiet --no-deps --no-index --target "$site" "$carry"/wheels/*.whl
  export PYTHONPATH=$site:$PWD/bench:${PYTHONPATH:-}
}

layers() {
  local out=${OUT:-out}
  prepare
  for threads in ${THREADS:-1 2}; do
    for model in "$carry"/models/*.onnx; do
      python3 bench/layer_times.py --minfer "$carry/bin/minfer" --threads "$threads" \
        --runs "${ITERATIONS:-20}" "$model" 2>&1 |
        tee "$out/layers_${threads}t_$(basename "$model" .onnx).txt"
    done
  done
}

run() {
  local out=${OUT:-out}
  prepare
  local status=0
  echo "=== CPU tests (each ISA level this CPU has)"
  # (not the command-line tests: they look for the build folder's binary)
  MINFER_DATA=$PWD/$carry/data "$carry/bin/minfer_tests" \
    "[cpu]~[cli],[int8]~[cli],[winograd]~[cli],[ops]~[cli],[passes]~[cli],[zoo]~[cli]" 2>&1 |
    tee "$out/tests.log" | tail -4 || status=1
  for threads in ${THREADS:-1 2}; do
    for config in ${CONFIGS:-MINFER_ISA=avx2 native}; do
      echo "=== $threads threads, $config"
      local vars=()
      [ "$config" != native ] && vars=("$config")
      env "${vars[@]}" python3 bench/onnx_vs_ort.py --minfer "$carry/bin/minfer" \
        --threads "$threads" --rounds "${ROUNDS:-3}" --iterations "${ITERATIONS:-10}" \
        "$carry"/models/*.onnx 2>&1 | tee "$out/ort_${threads}t_${config//[^A-Za-z0-9]/_}.txt" ||
        status=1
    done
  done
  return $status
}

# minfer against ONNX Runtime and OpenVINO there (bench/cpu_peers.py; PEERS_ARGS, default
# ResNet-18 and -50, fp32 and int8, 1 and 2 threads). Their wheels (OpenVINO's 59 MB) do not fit
# beside the tests' binary, so `pack-peers` carries minfer, its libraries, the calibration
# photos and both peers unpacked, stripped of what a CPU run does not load (OpenVINO's GPU and
# NPU plugins and other frontends than ONNX) and xz'd; `peers` unpacks them into a temporary
# folder on PYTHONPATH.
pack_peers() {
  pack_binaries build/minfer
  mkdir -p "$carry/data/images"
  local photos=../shared/data/images/imagenet
  [ -d "$photos" ] && cp -r "$photos" "$carry/data/images/"
  local wheels
  wheels=$(mktemp -d)
  for wheel in "onnxruntime==1.32.0" "openvino==2026.4.1"; do
    python3 -m pip download "$wheel" --no-deps --only-binary=:all: \
      --python-version "${ORT_WHEEL_PYTHON:-3.12}" --platform manylinux_2_28_x86_64 \
      -d "$wheels" >/dev/null
  done
  mkdir -p "$wheels/site"
  for whl in "$wheels"/*.whl; do (cd "$wheels/site" && unzip -q -o "$whl"); done
  rm -f "$wheels"/site/openvino/libs/libopenvino_intel_{gpu,npu}_plugin.so \
    "$wheels"/site/openvino/libs/libopenvino_{tensorflow,tensorflow_lite,pytorch}_frontend.so* \
    "$wheels"/site/openvino/libs/libopenvino_{paddle,jax,gguf}_frontend.so*
  tar -C "$wheels/site" -cf - . | xz -T0 -6 >"$carry/peers.tar.xz"
  rm -rf "$wheels"
  du -sh "$carry"
}

peers() {
  local out=${OUT:-out}
  unpack_binaries
  local site
  site=$(mktemp -d)
  xz -dc "$carry/peers.tar.xz" | tar -C "$site" -xf -
  export PYTHONPATH=$site:$PWD/bench:${PYTHONPATH:-}
  # shellcheck disable=SC2086  # PEERS_ARGS is a list of options
  python3 bench/cpu_peers.py --minfer "$carry/bin/minfer" --calib "$carry/data/images/imagenet" \
    ${PEERS_ARGS:---models resnet18,resnet50 --threads 1,2 --rounds 6 --markdown} 2>&1 |
    tee "$out/peers.txt"
}

case ${1:-} in
  pack) shift; pack "$@" ;;
  pack-peers) pack_peers ;;
  run) run ;;
  layers) layers ;;
  peers) peers ;;
  *) echo "usage: bash bench/cpu_isa_suite.sh pack MODEL.onnx... | run | layers | pack-peers |" \
       "peers" >&2
     exit 2 ;;
esac
