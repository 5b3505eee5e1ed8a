#!/usr/bin/env python3
"""CPU fp32 latency of minfer against ONNX Runtime, same weights, same threads, same run.

Usage: python3 bench/bench_cpu_fp32.py [--minfer build/minfer] [--models resnet18,resnet50]
           [--batches 1,8] [--threads 1,2] [--iterations 20] [--opt-levels 2]

For each model, minfer exports its graph (seeded weights) to ONNX; ONNX Runtime runs that file
with all graph optimizations on and the same thread count; minfer runs its own built-in model
through `minfer bench`. Prints median latencies and the ratio minfer / ORT (below 1 = faster).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort


def minfer_latency(exe, model, batch, threads, iterations, opt_level):
    cmd = [exe, "bench", model, "--batch", str(batch), "--threads", str(threads),
           "--warmup", "3", "--iterations", str(iterations), "--opt-level", str(opt_level),
           "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["latency_ms"]["p50"]


def ort_latency(path, batch, threads, iterations):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    size = 32 if "cifar" in path else 224
    x = np.random.default_rng(0).standard_normal((batch, 3, size, size), dtype=np.float32)
    for _ in range(3):
        sess.run(None, {inp.name: x})
    times = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        sess.run(None, {inp.name: x})
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


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
                                              args.iterations, opt)
                    print(f"{model:<10} {batch:>5} {threads:>3} {opt:>3} {t_minfer:>10.2f} "
                          f"{t_ort:>9.2f} {t_minfer / t_ort:>10.2f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
