#!/usr/bin/env bash
# The implicit GEMM's plan-time tuning (backends/cuda/igemm_tune.h) against its heuristic:
# minfer bench with MINFER_CUDA_TUNE=0 and =1, device-resident inputs, ResNet-18/50, int8 and
# fp16, batches 256, 32 and 1; the batch-256 runs also print a per-step profile (each conv's
# chosen tile shows as its kernel's variant). Run on the GPU machine after
# `bash bench/gpu_suite.sh pack`, from the repository root:
#
#   bash bench/gpu_tuning.sh                       # everything
#   MODELS=resnet18 PRECS=int8 BATCHES=256 TUNES=1 bash bench/gpu_tuning.sh
#
# One line per run on stdout; the full outputs go to $OUT/tuning.tgz (or out/).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-out}
mkdir -p "$out/tuning"
export LD_LIBRARY_PATH=$PWD/.carry/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name --format=csv,noheader
minfer=.carry/bin/minfer
for model in ${MODELS:-resnet18 resnet50}; do
  for prec in ${PRECS:-int8 fp16}; do
    for batch in ${BATCHES:-256 32 1}; do
      for tune in ${TUNES:-0 1}; do
        f="$out/tuning/${model}_${prec}_b${batch}_tune${tune}.txt"
        calib=()
        [ "$prec" = int8 ] && calib=(--calib random --calib-count 2)  # timing only
        profile=()
        [ "$batch" = 256 ] && profile=(--profile --profile-runs 5)
        MINFER_CUDA_TUNE=$tune timeout 120 "$minfer" bench "$model" --device cuda \
          --precision "$prec" "${calib[@]}" --batch "$batch" --device-input --iterations 200 \
          "${profile[@]}" >"$f" 2>&1
        echo "$model $prec batch $batch tune=$tune: $(grep -o 'prepare [^·]*' "$f" | head -1)|" \
          "$(grep -o 'throughput.*' "$f") | p50 $(awk '/latency/ {print $5}' "$f") ms"
      done
    done
  done
done
tar czf "$out/tuning.tgz" -C "$out" tuning && rm -rf "$out/tuning"
