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

--paired runs minfer in this process too (its Python package: e.g. the .venv that
scripts/test.sh makes, which also has onnxruntime) and pairs the engines run by run: each round
times `iterations` runs of one engine then of the other (the first run of each batch dropped:
it pays for the other engine's threads still spinning), alternating which goes first, and the
ratio is taken within the round. On a shared machine whose speed drifts between seconds (a
cloud VM), the median of those per-round ratios moves far less than ratios of separately
timed medians; it is printed with its quartiles and the share of rounds minfer won.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnxruntime as ort

from bench_common import median_ms, ort_session

try:
    import minfer  # the Python package: only --paired needs it
except ImportError:
    minfer = None


def minfer_median_ms(exe, path, feeds, threads, iterations):
    cmd = [exe, "bench", path, "--threads", str(threads), "--warmup", "2", "--iterations",
           str(iterations), "--json"]
    for name, a in feeds.items():
        cmd += ["--shape", f"{name}={'x'.join(map(str, a.shape))}"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["latency_ms"]["p50"]


# ORT's pool spins after a run until it has work again, i.e. through minfer's next batch
# (minfer measured 1.7x slower beside it); in paired mode it stops when each run ends.
PAIRED_ORT_CONFIG = {"session.force_spinning_stop": "1"}


def paired(path, session, feeds, threads, rounds, iterations):
    """Per-round (minfer ms, ORT ms), the engines timed back to back within each round."""
    mf = minfer.Session(path, threads=threads)
    run_minfer = lambda: mf.run(feeds)
    run_ort = lambda: session.run(None, feeds)
    pairs = []
    for r in range(rounds):
        if r % 2 == 0:
            m = median_ms(run_minfer, iterations)
            o = median_ms(run_ort, iterations)
        else:
            o = median_ms(run_ort, iterations)
            m = median_ms(run_minfer, iterations)
        pairs.append((m, o))
    mf.close()
    return pairs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", help="ONNX files")
    ap.add_argument("--minfer", default="build/minfer")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--paired", action="store_true",
                    help="minfer in this process, paired with ORT round by round (see above)")
    args = ap.parse_args()
    if args.paired and minfer is None:
        sys.exit("--paired needs minfer's Python package in this Python: `bash scripts/test.sh` "
                 "installs it (and onnxruntime) into .venv; run .venv/bin/python "
                 "bench/onnx_vs_ort.py --paired ...")
    if args.paired and os.path.exists(args.minfer) and \
            os.path.getmtime(minfer.__file__) < os.path.getmtime(args.minfer):
        # --paired measures the installed package, not the build: an older one is another minfer.
        print(f"warning: minfer's Python package ({os.path.dirname(minfer.__file__)}) is older "
              f"than {args.minfer}: reinstall it (`pip install .`) to measure this build",
              file=sys.stderr)
    if args.paired:
        print(f"{'model':<28} {'minfer ms':>10} {'ORT ms':>10} {'ORT/minfer':>10} "
              f"{'quartiles':>13} {'won':>5}  (threads {args.threads}, onnxruntime "
              f"{ort.__version__}, {args.rounds} paired rounds of {args.iterations} runs; "
              f"medians)")
    else:
        print(f"{'model':<28} {'minfer ms':>10} {'ORT ms':>10} {'ORT/minfer':>10}  "
              f"(threads {args.threads}, onnxruntime {ort.__version__})")
    for path in args.models:
        session = ort_session(path, args.threads, PAIRED_ORT_CONFIG if args.paired else None)
        rng = np.random.default_rng(0)
        feeds = {i.name: rng.random([d if isinstance(d, int) else 1 for d in i.shape],
                                    dtype=np.float32)
                 for i in session.get_inputs()}
        name = os.path.splitext(os.path.basename(path))[0]
        if args.paired:
            pairs = paired(path, session, feeds, args.threads, args.rounds, args.iterations)
            ratios = np.array([o / m for m, o in pairs])
            q1, q3 = np.percentile(ratios, [25, 75])
            print(f"{name:<28} {np.median([m for m, _ in pairs]):>10.2f} "
                  f"{np.median([o for _, o in pairs]):>10.2f} {np.median(ratios):>10.2f} "
                  f"{q1:>6.2f}-{q3:<6.2f} {np.mean(ratios > 1):>5.0%}", flush=True)
            continue
        mins, orts = [], []
        for _ in range(args.rounds):
            mins.append(minfer_median_ms(args.minfer, path, feeds, args.threads, args.iterations))
            orts.append(median_ms(lambda: session.run(None, feeds), args.iterations))
        print(f"{name:<28} {min(mins):>10.2f} {min(orts):>10.2f} {min(orts) / min(mins):>10.2f}",
              flush=True)


if __name__ == "__main__":
    main()
