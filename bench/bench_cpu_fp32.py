#!/usr/bin/env python3
"""CPU fp32 latency of minfer against ONNX Runtime, same weights, same threads, same run.

Usage: python3 bench/bench_cpu_fp32.py [--minfer build/minfer] [--models resnet18,resnet50]
           [--batches 1,8] [--threads 1,2] [--iterations 20] [--opt-levels 2]

For each model, minfer exports its graph (seeded weights) to ONNX; ONNX Runtime runs that file
with all graph optimizations on and the same thread count; minfer runs its own built-in model
through `minfer bench`. Prints median latencies and the ratio minfer / ORT (below 1 = faster).
"""
import argparse
import os
import subprocess
import sys
import tempfile

from bench_common import minfer_latency, ort_latency


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--minfer", default=os.path.join("build", "minfer"))
    ap.add_argument("--models", default="resnet18,resnet50")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--opt-levels", default="2")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="minfer_bench_")
    print(f"{'model':<10} {'batch':>5} {'thr':>3} {'opt':>3} {'minfer ms':>10} {'ORT ms':>9} "
          f"{'minfer/ORT':>10}")
    for model in args.models.split(","):
        path = os.path.join(tmp, model + ".onnx")
        subprocess.run([args.minfer, "export", model, "--opt-level", "0", "-o", path], check=True,
                       capture_output=True)
        for batch in map(int, args.batches.split(",")):
            for threads in map(int, args.threads.split(",")):
                t_ort = ort_latency(path, batch, threads, args.iterations)
                for opt in map(int, args.opt_levels.split(",")):
                    t_minfer = minfer_latency(args.minfer, model, batch, threads,
                                              args.iterations, ["--opt-level", str(opt)])
                    print(f"{model:<10} {batch:>5} {threads:>3} {opt:>3} {t_minfer:>10.2f} "
                          f"{t_ort:>9.2f} {t_minfer / t_ort:>10.2f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
