#!/usr/bin/env python3
"""minfer against ONNX Runtime on any ONNX files, CPU, in one run.

Usage: python3 bench/onnx_vs_ort.py [--minfer build/minfer] [--threads 2] [--rounds 3]
           [--iterations 10] MODEL.onnx...

For each file: random float inputs of the model's input shapes (symbolic dimensions set to 1),
then `rounds` rounds, each timing `minfer bench FILE --json` (median of `iterations` runs
after 2 warm-up runs) and ONNX Runtime (all graph optimizations, `threads` intra-op threads,
median of `iterations` runs after a warm-up run), interleaved so that machine noise hits both
alike; prints the fastest round's medians and ORT / minfer (below 1: minfer is slower).
Needs `pip install onnxruntime numpy` (minfer itself never does).
"""
import argparse
import json
import os
import subprocess
import time

import numpy as np
import onnxruntime as ort

from bench_common import ort_session


def ort_median_ms(session, feeds, iterations):
    session.run(None, feeds)
    times = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1000)
    return float(np.median(times))


def minfer_median_ms(exe, path, feeds, threads, iterations):
    cmd = [exe, "bench", path, "--threads", str(threads), "--warmup", "2", "--iterations",
           str(iterations), "--json"]
    for name, a in feeds.items():
        cmd += ["--shape", f"{name}={'x'.join(map(str, a.shape))}"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["latency_ms"]["p50"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", help="ONNX files")
    ap.add_argument("--minfer", default="build/minfer")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=10)
    args = ap.parse_args()
    print(f"{'model':<28} {'minfer ms':>10} {'ORT ms':>10} {'ORT/minfer':>10}  "
          f"(threads {args.threads}, onnxruntime {ort.__version__})")
    for path in args.models:
        session = ort_session(path, args.threads)
        rng = np.random.default_rng(0)
        feeds = {i.name: rng.random([d if isinstance(d, int) else 1 for d in i.shape],
                                    dtype=np.float32)
                 for i in session.get_inputs()}
        mins, orts = [], []
        for _ in range(args.rounds):
            mins.append(minfer_median_ms(args.minfer, path, feeds, args.threads, args.iterations))
            orts.append(ort_median_ms(session, feeds, args.iterations))
        name = os.path.splitext(os.path.basename(path))[0]
        print(f"{name:<28} {min(mins):>10.2f} {min(orts):>10.2f} {min(orts) / min(mins):>10.2f}",
              flush=True)


if __name__ == "__main__":
    main()
