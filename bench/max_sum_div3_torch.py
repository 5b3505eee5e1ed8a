#!/usr/bin/env python3
"""torch.max over the same data as bench/max_sum_div3_bench.cpp (2^28 int32 in [-1000, 1000]
on the GPU), timed as in /work/shared/anchors/gpu_reduction_bandwidth.py, in the same run as
minfer's kernel: give the bench binary's path and this script runs it first and prints
the ratio.

    python3 bench/max_sum_div3_torch.py [--bench build/bench/max_sum_div3_bench] [--log2 28]
"""
import argparse
import re
import subprocess
import sys

import torch


def bench(fn, iters=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    s = torch.cuda.Event(enable_timing=True)
    e = torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(iters):
        fn()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) / iters


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", help="path of max_sum_div3_bench, run on the same size first")
    ap.add_argument("--log2", type=int, default=28)
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args()
    n = 1 << args.log2

    ours = None
    if args.bench:
        out = subprocess.run([args.bench, "--no-cpu", "--cuda-log2", str(args.log2),
                              "--iters", str(args.iters)],
                             capture_output=True, text=True)
        sys.stdout.write(out.stdout)
        sys.stderr.write(out.stderr)
        if out.returncode != 0:
            sys.exit(f"{args.bench} failed with status {out.returncode}")
        m = re.search(r"maxSumDiv3 cuda: ([0-9.]+) GB/s", out.stdout)
        ours = float(m.group(1)) if m else None

    torch.manual_seed(0)
    x = torch.randint(-1000, 1001, (n,), dtype=torch.int32, device="cuda")
    y = torch.empty_like(x)
    ms_max = bench(lambda: x.max(), args.iters)
    ms_copy = bench(lambda: y.copy_(x), args.iters)
    gbs_max = 4 * n / ms_max / 1e6
    print(f"torch.max cuda: {gbs_max:.0f} GB/s; torch copy: {2 * 4 * n / ms_copy / 1e6:.0f} GB/s "
          f"(read+write) (2^{args.log2} int32 on {torch.cuda.get_device_name()}, "
          f"{ms_max:.3f} ms)")
    if ours is not None:
        print(f"maxSumDiv3 / torch.max bandwidth: {ours / gbs_max:.2f}")


if __name__ == "__main__":
    main()
