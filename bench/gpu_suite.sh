#!/usr/bin/env bash
# The whole GPU check in one go: the CUDA tests, compute-sanitizer on them, the demo, and the
# benchmark against PyTorch (bench/gpu_peers.py).
#
#   bash bench/gpu_suite.sh pack            # here: build/ must hold a CUDA build (scripts/test.sh)
#   bash bench/gpu_suite.sh run [STEPS]     # on the GPU machine, from the repository root
#
# `pack` gathers what the GPU machine lacks into .carry/ (git-ignored): the minfer and
# minfer_tests binaries, the non-system shared libraries they link (protobuf, ONNX, OpenMP)
# and the test data they read (../shared/data), plus the QDQ models named in INT8_MODELS
# (`minfer quantize` output) for the `int8` step, which runs each on the CPU and on CUDA and
# requires the same output bytes. The machine has the CUDA runtime, cuBLAS,
# PyTorch and compute-sanitizer. STEPS (default "tests sanitizer demo peers") picks what `run`
# does; PEERS_ARGS passes options to gpu_peers.py. Results and logs go to $OUT (or out/). The
# sanitizers run with the plan-time tuning off (MINFER_CUDA_TUNE=0): its timed launches add
# nothing to check and take racecheck minutes; the kernel tests pick every tile themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
carry=.carry

pack() {
  rm -rf "$carry"
  mkdir -p "$carry/bin" "$carry/lib" "$carry/data/models" "$carry/data/images"
  cp build/minfer build/tests/minfer_tests "$carry/bin/"
  # Libraries from the distribution that the GPU machine may not have (CUDA's are there).
  ldd build/minfer build/tests/minfer_tests | awk '/=>/ {print $3}' | sort -u |
    grep -E 'libprotobuf|libonnx|libgomp|libomp' | xargs -r -I{} cp -L {} "$carry/lib/"
  local data=../shared/data
  cp "$data"/models/resnet20.* "$data"/models/resnet32.* "$carry/data/models/"
  cp -r "$data/images/cifar10-jpeg" "$data/images/cifar10-png" "$data/images/imagenet" \
    "$carry/data/images/"
  mkdir -p "$carry/int8"
  for model in ${INT8_MODELS:-}; do cp "$model" "$carry/int8/"; done
  du -sh "$carry"
}

run() {
  local steps=${1:-tests sanitizer demo peers}
  local out=${OUT:-out}
  mkdir -p "$out"
  export MINFER_DATA=$PWD/$carry/data
  local cuda_libs
  cuda_libs=$(python3 -c 'import nvidia, os; print(":".join(os.path.join(p, d, "lib")
    for p in nvidia.__path__ for d in ("cublas", "cuda_runtime", "cu13") ))' 2>/dev/null || true)
  export LD_LIBRARY_PATH=$PWD/$carry/lib:/usr/local/cuda/lib64:${cuda_libs}:${LD_LIBRARY_PATH:-}
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/card.txt"
  local status=0
  for step in $steps; do
    echo "=== $step"
    case $step in
      tests)
        "$carry/bin/minfer_tests" "[cuda]" 2>&1 | tee "$out/tests.log" | tail -5 || status=1 ;;
      sanitizer)
        # memcheck also on a whole session run on a caller's stream (racecheck is too slow there).
        local kernels="CUDA QConv and QGemm equal the reference bit for bit,CUDA HConv on the implicit GEMM matches the fp16 reference"
        for tool in memcheck racecheck; do
          local cases=$kernels
          [ "$tool" = memcheck ] && cases+=",A CUDA session runs into GPU memory*"
          MINFER_CUDA_TUNE=0 compute-sanitizer --tool "$tool" --error-exitcode 3 "$carry/bin/minfer_tests" "$cases" 2>&1 |
            tee "$out/sanitizer_$tool.log" | tail -3 || status=1
        done ;;
      demo)
        (cd "$carry" && MINFER_DATA=$PWD/data ./bin/minfer demo) 2>&1 | tee "$out/demo.log" |
          tail -25 || status=1 ;;
      int8)
        # Each QDQ model on the CPU and on CUDA (which runs the ops it lacks on the CPU): the
        # int8 ops compute the same values on both, so the outputs differ only by what float
        # ops between them do (a float pool's order of sums, a BatchNormalization's rounding).
        local image=$carry/data/images/imagenet/cat_285.png
        for model in "$carry"/int8/*.onnx; do
          [ -e "$model" ] || continue
          for device in cpu cuda; do
            rm -rf "$out/int8_$device"
            "$carry/bin/minfer" run "$model" --image "$image" --device "$device" \
              --save-outputs "$out/int8_$device" >/dev/null || status=1
          done
          python3 - "$model" "$out" <<'PY' | tee -a "$out/int8.txt" || status=1
import glob, os, sys
import numpy as np
for cpu in sorted(glob.glob(os.path.join(sys.argv[2], "int8_cpu", "*.npy"))):
    a, b = np.load(cpu), np.load(cpu.replace("int8_cpu", "int8_cuda"))
    print(f"{os.path.basename(sys.argv[1])}: {int((a != b).sum())} of {a.size} values differ, "
          f"max |CUDA - CPU| {float(np.abs(a - b).max()):.3g} (max |CPU| {float(np.abs(a).max()):.3g}), "
          f"top-1 {int(a.argmax())} / {int(b.argmax())}")
PY
        done ;;
      peers)
        python3 bench/gpu_peers.py --minfer "$carry/bin/minfer" --json "$out/gpu_peers.json" \
          ${PEERS_ARGS:-} 2>"$out/gpu_peers.err" | tee "$out/gpu_peers.txt" || status=1 ;;
      *) echo "unknown step '$step'" >&2; exit 2 ;;
    esac
  done
  return $status
}

case ${1:-} in
  pack) pack ;;
  run) run "${2:-}" ;;
  *) echo "usage: bash bench/gpu_suite.sh pack | run [STEPS]" >&2; exit 2 ;;
esac
