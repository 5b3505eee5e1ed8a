#!/usr/bin/env python3
"""CPU int8 benchmark: minfer int8 against minfer fp32 and against ONNX Runtime running the
same QDQ model, same threads, same batch, same machine, in one run.

Usage: python3 bench/int8_bench.py [--minfer build/minfer] [--models resnet18,resnet50]
           [--batches 1,8] [--threads 1,2] [--iterations 20] [--calib DIR] [--isas auto]

For each model, `minfer quantize` calibrates the built-in model (seeded weights) on --calib
(default: the ImageNet photos of the shared test data) and writes a QDQ ONNX file. Then:
  fp32   `minfer bench MODEL`            (fp32 kernels)
  int8   `minfer bench MODEL_int8.onnx`  (the QDQ graph folded into int8 kernels)
  ORT    onnxruntime on MODEL_int8.onnx  (its own QDQ fusion, all graph optimizations)
and prints median latencies, int8's speedup over fp32, and ORT / minfer-int8 (above 1 = minfer
faster). --isas runs minfer int8 once per listed level (avx2, avxvnni, avx512, avx512vnni; 'auto' =
the fastest the CPU has) through MINFER_ISA. Also prints the weight size fp32 -> int8.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import onnxruntime as ort
from bench_common import minfer_latency, ort_latency

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CALIB = os.path.join(HERE, "..", "..", "shared", "data", "images", "imagenet")


def quantize(exe, model, calib, out):
    cmd = [exe, "quantize", model, "--calib", calib, "--calib-count", "16", "-o", out]
    text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    m = re.search(r"weights (.+?) -> (.+?)$", text, re.M)
    return (m.group(1), m.group(2)) if m else ("?", "?")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--minfer", default=os.path.join("build", "minfer"))
    ap.add_argument("--models", default="resnet18,resnet50")
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--calib", default=DEFAULT_CALIB)
    ap.add_argument("--isas", default="auto")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="minfer_int8_bench_")
    print(f"onnxruntime {ort.__version__}; latencies are medians of {args.iterations} runs")
    header = (f"{'model':<10} {'batch':>5} {'thr':>3} {'int8 path':>10} {'fp32 ms':>9} "
              f"{'int8 ms':>9} {'ORT int8 ms':>11} {'int8/fp32':>9} {'ORT/int8':>8}")
    for model in args.models.split(","):
        path = os.path.join(tmp, model + "_int8.onnx")
        fp32_size, int8_size = quantize(args.minfer, model, args.calib, path)
        print(f"\n{model}: weights {fp32_size} fp32 -> {int8_size} int8 "
              f"(QDQ file {os.path.getsize(path) / 2**20:.1f} MiB)")
        print(header)
        for batch in map(int, args.batches.split(",")):
            for threads in map(int, args.threads.split(",")):
                t_fp32 = minfer_latency(args.minfer, model, batch, threads, args.iterations)
                t_ort = ort_latency(path, batch, threads, args.iterations)
                for isa in args.isas.split(","):
                    env = dict(os.environ)
                    if isa != "auto":
                        env["MINFER_ISA"] = isa
                    t_int8 = minfer_latency(args.minfer, path, batch, threads, args.iterations,
                                            env=env)
                    print(f"{model:<10} {batch:>5} {threads:>3} {isa:>10} {t_fp32:>9.2f} "
                          f"{t_int8:>9.2f} {t_ort:>11.2f} {t_fp32 / t_int8:>8.2f}x "
                          f"{t_ort / t_int8:>7.2f}x", flush=True)


if __name__ == "__main__":
    sys.exit(main())
