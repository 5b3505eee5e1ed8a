"""Peak RSS (`/usr/bin/time -f %M`) of one batch-1 run of an ONNX model: minfer against ONNX
Runtime (all graph optimizations) on the same file, in the same run of this script; and of
`minfer quantize` calibrating on few and on many samples.

    python bench/memory_peers.py --minfer build/minfer --models r50.onnx,r50_int8.onnx \\
        --calib-model resnet50 --calib DIR --calib-counts 4,64

Each measurement is the median of --repeat runs, in kB as `time` reports them."""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

ORT_RUN = """
import sys
import numpy as np
import onnxruntime as ort
so = ort.SessionOptions()
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
s = ort.InferenceSession(sys.argv[1], so, providers=["CPUExecutionProvider"])
i = s.get_inputs()[0]
shape = [d if isinstance(d, int) else 1 for d in i.shape]
s.run(None, {i.name: np.random.default_rng(0).standard_normal(shape, dtype=np.float32)})
"""


def peak_kb(cmd):
    """Peak RSS in kB of `cmd`, from /usr/bin/time."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as f:
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", f.name, *cmd], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return int(f.read().strip().splitlines()[-1])


def median_kb(cmd, repeat):
    return statistics.median(peak_kb(cmd) for _ in range(repeat))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minfer", default="build/minfer")
    ap.add_argument("--models", default="", help="comma-separated ONNX files")
    ap.add_argument("--calib-model", default="", help="model for `minfer quantize`")
    ap.add_argument("--calib", default="", help="calibration images (a folder)")
    ap.add_argument("--calib-counts", default="4,64")
    ap.add_argument("--calib-batch", default="", help="--calib-batch for quantize, if given")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    if args.models:
        print("| model | minfer (MB) | ORT (MB) | minfer/ORT |")
        print("|---|---|---|---|")
        for model in args.models.split(","):
            m = median_kb([args.minfer, "bench", model, "--iterations", "1", "--warmup", "0"],
                          args.repeat)
            o = median_kb([sys.executable, "-c", ORT_RUN, model], args.repeat)
            print(f"| {os.path.basename(model)} | {m / 1e3:.1f} | {o / 1e3:.1f} | {m / o:.2f} |")

    if args.calib_model:
        counts = [int(c) for c in args.calib_counts.split(",")]
        peaks = []
        with tempfile.TemporaryDirectory() as tmp:
            for n in counts:
                cmd = [args.minfer, "quantize", args.calib_model, "--calib", args.calib,
                       "--calib-count", str(n), "-o", os.path.join(tmp, "q.onnx")]
                if args.calib_batch:
                    cmd += ["--calib-batch", args.calib_batch]
                peaks.append(median_kb(cmd, args.repeat))
        print("\n| calibration samples | peak RSS (MB) | / first |")
        print("|---|---|---|")
        for n, p in zip(counts, peaks):
            print(f"| {n} | {p / 1e3:.1f} | {p / peaks[0]:.3f} |")


if __name__ == "__main__":
    main()
