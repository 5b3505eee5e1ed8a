#!/usr/bin/env python3
"""Per-kernel GPU time of one `minfer bench` run, from Nsight Compute's CSV.

Usage (on the GPU machine):
  ncu --clock-control none --graph-profiling node --metrics gpu__time_duration.sum --csv \
      minfer bench MODEL ... --warmup 0 --iterations 1 > ncu.csv
  python3 bench/gpu_kernel_times.py ncu.csv [--top 25]
Prints each kernel (grouped by name, template arguments shortened) with its count, total
microseconds and share, largest first; the total is the GPU time of the profiled launches.
"""
import argparse
import csv
import io
import re
from collections import defaultdict


def short(name):
    name = re.sub(r"\(.*$", "", name) if not name.startswith("void ") else name
    name = name.replace("void ", "").replace("minfer::cuda::", "").replace("(anonymous namespace)::", "")
    return re.sub(r"\(.*\)$", "", name)[:90]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    text = open(args.csv, errors="replace").read()
    start = text.find('"ID"')
    rows = csv.DictReader(io.StringIO(text[start:]))
    total = defaultdict(float)
    count = defaultdict(int)
    for r in rows:
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        v = float(r["Metric Value"].replace(",", ""))
        unit = r.get("Metric Unit", "nsecond")
        us = v / 1000 if unit.startswith("n") else v if unit.startswith("u") else v * 1000
        k = short(r["Kernel Name"])
        total[k] += us
        count[k] += 1
    grand = sum(total.values())
    print(f"total GPU time {grand:.1f} us in {sum(count.values())} kernels")
    for k, us in sorted(total.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"{us:10.1f} us {100 * us / grand:5.1f}% {count[k]:4d}x  {k}")


if __name__ == "__main__":
    main()
