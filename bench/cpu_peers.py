#!/usr/bin/env python3
"""minfer against its CPU peers, ONNX Runtime and OpenVINO, in one run on the same ONNX files.

Usage: python3 bench/cpu_peers.py [--minfer build/minfer] [--models resnet18,resnet50,FILE.onnx]
           [--precisions fp32,int8] [--batches 1] [--threads 1,N] [--iterations 30]
           [--rounds 5] [--calib DIR] [--markdown]

Per model (built-in, seeded weights; or an ONNX file, itself the fp32 file):
  fp32  `minfer export MODEL --opt-level 0` writes the plain ONNX graph;
  int8  `minfer quantize MODEL` (16 calibration photos) writes the QDQ graph.
Each file then runs in minfer (`minfer bench FILE --json`), ONNX Runtime (all graph
optimizations, `threads` intra-op threads) and OpenVINO (CPU plugin, latency hint, f32
inference precision, `threads` inference threads), interleaved so that machine noise hits all
three alike: in each of `rounds` rounds every engine runs iterations / rounds times (after 3
warm-up runs), the engines' order turning each round, a pause after each turn (the peers'
worker threads spin after a run and would take a core from the next engine). Prints each
engine's median over the rounds of its per-round medians (ms) and, as peer / minfer (below 1:
minfer is slower), the median of the per-round ratios (paired: a round that a stalled vCPU slowed
counts once), the CPU model and the variants minfer's kernels chose: the ISA level of the int8
kernels (MINFER_ISA caps it), "winograd" for fp32 convs run that way (MINFER_CPU_WINOGRAD=0 turns
it off). On a shared machine, repeat the run: the load of other processes moves the figures,
2-thread ones most. Needs `pip install onnxruntime openvino numpy` (e.g. in a venv; minfer itself
never needs them).
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
import openvino as ov

from bench_common import median_ms, openvino_compiled, ort_session  # same folder

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CALIB = os.path.join(HERE, "..", "..", "shared", "data", "images", "imagenet")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def make_files(exe, model, calib, tmp, precisions):
    """The fp32 and int8 files of a built-in model, or of an ONNX file (a 3-channel image
    input, of the file's height and width; the file itself is the fp32 one)."""
    files = {}
    name = os.path.basename(model)[:-5] if model.endswith(".onnx") else model
    if "fp32" in precisions:
        path = os.path.join(tmp, f"{name}_fp32.onnx")
        if model.endswith(".onnx"):
            path = model
        else:
            subprocess.run([exe, "export", model, "--opt-level", "0", "-o", path], check=True,
                           capture_output=True)
        files["fp32"] = path
    if "int8" in precisions:
        path = os.path.join(tmp, f"{name}_int8.onnx")
        subprocess.run([exe, "quantize", model, "--calib", calib, "--calib-count", "16",
                        "-o", path], check=True, capture_output=True)
        files["int8"] = path
    return files


def minfer_run(exe, path, batch, threads, iterations):
    """(median ms, kernels) of `minfer bench FILE` after 3 warm-up runs."""
    cmd = [exe, "bench", path, "--batch", str(batch), "--threads", str(threads), "--warmup", "3",
           "--iterations", str(iterations), "--json"]
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    return out["latency_ms"]["p50"], out.get("kernels", {})


def input_of(path, batch):
    """The model's image input (its first graph input that is not a weight) and a batch for it
    (of the input's channels, height and width where the file fixes them, else 3 and 224x224),
    read from the file's graph without building an engine for it."""
    graph = onnx.load(path, load_external_data=False).graph
    weights = {t.name for t in graph.initializer}
    inp = next(i for i in graph.input if i.name not in weights)
    dims = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    c = dims[1] if len(dims) == 4 and dims[1] > 0 else 3
    h, w = (dims[2], dims[3]) if len(dims) == 4 and dims[2] > 0 and dims[3] > 0 else (224, 224)
    x = np.random.default_rng(0).standard_normal((batch, c, h, w), dtype=np.float32)
    return inp.name, x


def ort_runner(path, batch, threads):
    """A function of n: the median ms of n ONNX Runtime runs (one session for every round)."""
    sess = ort_session(path, threads)
    name, x = input_of(path, batch)
    return lambda n: median_ms(lambda: sess.run(None, {name: x}), n, warmup=3)


def openvino_runner(core, path, batch, threads):
    """Likewise for OpenVINO (one compiled model and infer request for every round)."""
    name, x = input_of(path, batch)
    req = openvino_compiled(core, path, threads, {name: list(x.shape)}).create_infer_request()
    return lambda n: median_ms(lambda: req.infer({name: x}), n, warmup=3)


# After each engine's turn: the worker threads of ONNX Runtime and OpenVINO spin for a while
# after a run, and on 2 cores they took one from the engine that ran next (OpenVINO's int8
# ResNet-18 at 2 threads ran 4.45 ms after ONNX Runtime's turn, 2.3 ms alone or after a pause;
# ONNX Runtime's 11.5 ms after OpenVINO's, 7.9 alone; Zen 5). 50 ms was enough there.
SETTLE_S = 0.2


def interleaved(runners, rounds, per_round):
    """Each runner's per-round medians, the runners taking turns (the first one rotating), with
    a pause after each turn (SETTLE_S)."""
    times = [[] for _ in runners]
    for r in range(rounds):
        for i in [(r + j) % len(runners) for j in range(len(runners))]:
            times[i].append(runners[i](per_round))
            time.sleep(SETTLE_S)
    return times


def variants_of(kernels):
    """The variants minfer's kernels report, e.g. "avx512vnni" or "winograd" (from "name [v]")."""
    levels = sorted({k[k.index("[") + 1:k.index("]")] for k in kernels if "[" in k})
    return ",".join(levels) if levels else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--minfer", default=os.path.join("build", "minfer"))
    ap.add_argument("--models", default="resnet18,resnet50")
    ap.add_argument("--precisions", default="fp32,int8")
    ap.add_argument("--batches", default="1")
    ap.add_argument("--threads", default=f"1,{os.cpu_count()}")
    ap.add_argument("--iterations", type=int, default=30, help="timed runs per engine in all")
    ap.add_argument("--rounds", type=int, default=5, help="turns the engines take")
    ap.add_argument("--calib", default=DEFAULT_CALIB)
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = ap.parse_args()

    precisions = args.precisions.split(",")
    threads_list = sorted({int(t) for t in args.threads.split(",")})
    core = ov.Core()
    print(f"{cpu_model()}, {os.cpu_count()} CPUs; MINFER_ISA={os.environ.get('MINFER_ISA', '(auto)')}")
    rounds = max(1, args.rounds)
    per_round = max(1, -(-args.iterations // rounds))
    print(f"onnxruntime {ort.__version__}, openvino {ov.__version__}; {rounds} rounds of "
          f"{per_round} runs per engine, the engines interleaved: median of the round medians "
          f"(ms); ratio = median of the rounds' peer / minfer (below 1: minfer is slower)")
    cols = ["model", "precision", "batch", "threads", "minfer variants", "minfer", "ORT", "OpenVINO",
            "ORT/minfer", "OV/minfer"]
    if args.markdown:
        print("| " + " | ".join(cols) + " |")
        print("|" + "---|" * len(cols))
    else:
        print(f"{cols[0]:<10} {cols[1]:<9} {cols[2]:>5} {cols[3]:>7} {cols[4]:>11} {cols[5]:>8} "
              f"{cols[6]:>8} {cols[7]:>8} {cols[8]:>10} {cols[9]:>9}")
    tmp = tempfile.mkdtemp(prefix="minfer_cpu_peers_")
    for model in args.models.split(","):
        files = make_files(args.minfer, model, args.calib, tmp, precisions)
        for precision in precisions:
            path = files[precision]
            for batch in map(int, args.batches.split(",")):
                for threads in threads_list:
                    kernels = {}

                    def minfer_ms(n):
                        ms, k = minfer_run(args.minfer, path, batch, threads, n)
                        kernels.update(k)
                        return ms

                    mine, theirs, ovs = interleaved(
                        [minfer_ms, ort_runner(path, batch, threads),
                         openvino_runner(core, path, batch, threads)], rounds, per_round)
                    ratio = lambda peer: float(np.median(np.array(peer) / np.array(mine)))
                    row = [os.path.basename(model), precision, batch, threads, variants_of(kernels),
                           f"{np.median(mine):.2f}", f"{np.median(theirs):.2f}",
                           f"{np.median(ovs):.2f}", f"{ratio(theirs):.2f}", f"{ratio(ovs):.2f}"]
                    if args.markdown:
                        print("| " + " | ".join(map(str, row)) + " |", flush=True)
                    else:
                        print(f"{row[0]:<10} {row[1]:<9} {row[2]:>5} {row[3]:>7} {row[4]:>11} "
                              f"{row[5]:>8} {row[6]:>8} {row[7]:>8} {row[8]:>10} {row[9]:>9}",
                              flush=True)


if __name__ == "__main__":
    sys.exit(main())
