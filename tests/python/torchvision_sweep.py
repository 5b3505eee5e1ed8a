"""The torchvision sweep: exports torchvision's classification and segmentation models and a
small BERT-style encoder (random weights, nothing downloaded) to ONNX, runs each through minfer
at opt-level 0 and 2 and through ONNX Runtime (the oracle), and prints one table row per model
and opset: the ops the export uses, the result, the error, and latency vs ONNX Runtime.

  torchvision_sweep.py --minfer build/minfer [--models a,b] [--opsets 13,17] [--threads 2]
                       [--no-bench] [--cache DIR] [--markdown]

The error is max|minfer - ort| / max|ort| over each output (a per-tensor relative error: the
element-wise one is meaningless where random-weight outputs cross zero); a model passes when it
is <= 1e-4 at both opt-levels. Latency is the fastest run of minfer `bench` and of ONNX Runtime
(all optimizations), both with --threads intra-op threads, batch 1, timed in interleaved
rounds of 5 runs each (--rounds).
Exit status: 0 = every model ran and matched, 1 = some did not, 3 = torch/onnxruntime missing.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    import torch
    import torchvision
except ImportError as e:  # the test that runs this reports a skip
    print(f"skipped: {e}", file=sys.stderr)
    sys.exit(3)

from sweep_models import MODELS  # noqa: E402  (same folder)

RTOL = 1e-4


def export(name, opset, path):
    """Exports model `name` to `path` (unless it is there already, from an earlier run with
    --cache); returns the inputs (name -> array) to run it on."""
    spec = MODELS[name]
    torch.manual_seed(0)
    args = spec["inputs"]()
    names = [f"input{i}" for i in range(len(args))]
    if not os.path.exists(path):
        model = spec["build"]().eval()
        # Not under no_grad: there nn.TransformerEncoderLayer takes its fused fast path,
        # which has no ONNX export.
        torch.onnx.export(model, tuple(args), path + ".tmp", opset_version=opset,
                          input_names=names, do_constant_folding=True)
        os.replace(path + ".tmp", path)
    return {n: a.numpy() for n, a in zip(names, args)}


def ops_of(path):
    m = onnx.load(path, load_external_data=False)
    return sorted({n.op_type for n in m.graph.node})


def ort_session(path, level, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = level
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def ort_latency(sess, feeds, iterations):
    """The fastest of `iterations` runs after one warm-up, in ms."""
    sess.run(None, feeds)
    times = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t0) * 1e3)
    return min(times)


def minfer_run(exe, path, feeds, level, threads, work):
    """Runs minfer on the feeds; returns (outputs by name, None) or (None, error text)."""
    out_dir = os.path.join(work, f"out{level}")
    os.makedirs(out_dir, exist_ok=True)
    cmd = [exe, "run", path, "--opt-level", str(level), "--threads", str(threads),
           "--save-outputs", out_dir, "--json"]
    for n, a in feeds.items():
        f = os.path.join(work, n + ".npy")
        np.save(f, a)
        cmd += ["--input", f"{n}={f}"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None, (p.stderr.strip() or p.stdout.strip()).splitlines()[-1][:300]
    outs = {}
    for o in json.loads(p.stdout)["outputs"]:
        f = "".join("_" if c in "/:\\" else c for c in o["name"]) + ".npy"
        outs[o["name"]] = np.load(os.path.join(out_dir, f))
    return outs, None


def minfer_latency(exe, path, feeds, threads, iterations):
    """The fastest of `iterations` runs of `minfer bench` after one warm-up, in ms."""
    cmd = [exe, "bench", path, "--threads", str(threads), "--warmup", "1", "--iterations",
           str(iterations), "--json"]
    for n, a in feeds.items():
        cmd += ["--shape", f"{n}={'x'.join(map(str, a.shape)) or '1'}"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None
    return json.loads(p.stdout)["latency_ms"]["min"]


def rel_error(got, want):
    """got: minfer's outputs by name; want: ONNX Runtime's, by name."""
    err = 0.0
    for name, w in want.items():
        g = got.get(name)
        if g is None or g.shape != w.shape:
            return float("inf")
        scale = float(np.max(np.abs(w))) if w.size else 0.0
        diff = float(np.max(np.abs(g.astype(np.float64) - w))) if w.size else 0.0
        err = max(err, diff / scale if scale > 0 else diff)
    return err


def sweep_one(args, name, opset):
    row = {"model": name, "opset": opset, "ops": "", "result": "", "error": None,
           "minfer_ms": None, "ort_ms": None}
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(args.cache or work, f"{name}_op{opset}.onnx")
        try:
            feeds = export(name, opset, path)
        except Exception as e:  # an export failure is torch's, reported as such
            row["result"] = "export failed: " + str(e).splitlines()[0][:200]
            return row
        row["ops"] = " ".join(ops_of(path))
        oracle = ort_session(path, ort.GraphOptimizationLevel.ORT_DISABLE_ALL, args.threads)
        want = dict(zip([o.name for o in oracle.get_outputs()], oracle.run(None, feeds)))
        errs = []
        for level in (0, 2):
            got, failure = minfer_run(args.minfer, path, feeds, level, args.threads, work)
            if failure:
                row["result"] = f"fails (opt {level}): {failure}"
                return row
            errs.append(rel_error(got, want))
        row["error"] = max(errs)
        row["result"] = "pass" if row["error"] <= RTOL else "mismatch"
        if not args.no_bench:
            # Rounds of each, interleaved, keeping the fastest run: on a shared machine the
            # minimum is what load disturbs least, and both see the same conditions.
            sess = ort_session(path, ort.GraphOptimizationLevel.ORT_ENABLE_ALL, args.threads)
            mins, orts = [], []
            for _ in range(args.rounds):
                mins.append(minfer_latency(args.minfer, path, feeds, args.threads, 5))
                orts.append(ort_latency(sess, feeds, 5))
            row["minfer_ms"] = None if None in mins else min(mins)
            row["ort_ms"] = min(orts)
    return row


def fmt_ms(v):
    return "-" if v is None else f"{v:.1f}"


def print_row(row, markdown):
    err = "-" if row["error"] is None else f"{row['error']:.1e}"
    ratio = "-"
    if row["minfer_ms"] and row["ort_ms"]:
        ratio = f"{row['minfer_ms'] / row['ort_ms']:.2f}"
    cells = [row["model"], str(row["opset"]), row["result"], err, fmt_ms(row["minfer_ms"]),
             fmt_ms(row["ort_ms"]), ratio, row["ops"]]
    if markdown:
        print("| " + " | ".join(cells) + " |", flush=True)
    else:
        print("  ".join(cells), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minfer", required=True, help="the minfer executable")
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated model names")
    ap.add_argument("--opsets", default="13,17")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-bench", action="store_true", help="check results only, no latency")
    ap.add_argument("--rounds", type=int, default=3,
                    help="interleaved timing rounds of 5 runs each (default 3)")
    ap.add_argument("--cache", default=None,
                    help="keep the exported models in this folder and reuse them")
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        ap.error("unknown models: " + ", ".join(unknown) + "; known: " + ", ".join(MODELS))
    head = ["model", "opset", "result", "max rel err", "minfer ms", "ORT ms", "ratio", "ops"]
    if args.markdown:
        print("| " + " | ".join(head) + " |\n|" + "---|" * len(head), flush=True)
    else:
        print("  ".join(head), flush=True)
    print(f"# torch {torch.__version__}, torchvision {torchvision.__version__}, "
          f"onnxruntime {ort.__version__}", file=sys.stderr)
    ok = True
    for name in names:
        for opset in (int(o) for o in args.opsets.split(",")):
            row = sweep_one(args, name, opset)
            ok = ok and row["result"] == "pass"
            print_row(row, args.markdown)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
