#!/usr/bin/env bash
# Two builds of the minfer command line alternated on the built-in int8 ResNets (seeded
# weights, random calibration), at each ISA level and thread count: the minimum and median ms
# of `minfer bench MODEL --precision int8` per round. For machines whose speed drifts between
# calls (compare the best minimum of several rounds).
#
#   bash bench/int8_builds_ab.sh OLD_MINFER NEW_MINFER
#   (LEVELS="amx avx512vnni" THREADS="1 2" ROUNDS=3 MODELS="resnet18 resnet50" by default)
set -euo pipefail
old=$1
new=$2
lscpu | grep 'Model name'
for round in $(seq "${ROUNDS:-3}"); do
  for isa in ${LEVELS:-amx avx512vnni}; do
    for t in ${THREADS:-1 2}; do
      for model in ${MODELS:-resnet18 resnet50}; do
        for exe in "$old" "$new"; do
          ms=$(MINFER_ISA=$isa "$exe" bench "$model" --precision int8 --calib random \
               --threads "$t" --iterations 20 2>&1 | awk '/latency \(ms\)/ {print $3, $5}')
          echo "round $round $isa ${t}t $model $exe min/median: $ms"
        done
      done
    done
  done
done
