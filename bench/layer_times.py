"""minfer's and a peer's (ONNX Runtime or OpenVINO) time per layer on one ONNX file, side by
side: where a model's gap to the peer is.

    python bench/layer_times.py MODEL.onnx [--minfer build/minfer] [--threads 1] [--runs 20]
                                [--peer ort|openvino] [--batch 1]

minfer's times come from `minfer bench --profile --json` (median of the profiled runs, step by
step), ONNX Runtime's from its own profiler (`enable_profiling`: the median over the runs of
each node's kernel time; an activation ORT left unfused right after a conv or GEMM, such as its
QuickGelu for SiLU, is added to that node, as minfer fuses it). The conv and GEMM nodes are
paired by their shapes (output and weight sizes, in execution order: the engines name fused
nodes differently, ORT after the last node it absorbed); the other nodes are summed by op
(ORT's layout reorders among them). Both columns are per-run times measured in separate
passes: use them for where the time goes, and onnx_vs_ort.py --paired for the ratio.

With --peer openvino (needs `pip install openvino`): OpenVINO's CPU plugin (latency hint, f32
inference precision, as bench/cpu_peers.py) with PERF_COUNT, the median over the runs of each
executed node's time; its convs and fully connected layers paired with minfer's by the shapes of
its runtime model (OpenVINO fuses the bias and activations into them, as minfer does).
"""
import argparse
import collections
import json
import os
import subprocess
import tempfile

import numpy as np
import onnxruntime as ort

from bench_common import openvino_compiled, ort_session


HEAVY = ("Conv", "FusedConv", "NhwcConv", "Gemm", "MatMul", "FusedMatMul", "FusedGemm", "QConv",
         "QGemm", "QLinearConv", "QLinearMatMul", "ConvInteger", "MatMulInteger", "Convolution",
         "GroupConvolution", "FullyConnected")
ACTIVATIONS = ("QuickGelu", "Relu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Gelu",
               "FastGelu")


def minfer_steps(exe, path, threads, runs, batch):
    """{node name: (op, kernel, ms)} of minfer's profiled runs."""
    cmd = [exe, "bench", path, "--batch", str(batch), "--threads", str(threads), "--iterations",
           "1", "--profile", "--profile-runs", str(runs), "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return {s["node"]: (s["op"], s["kernel"], s["ms"], shape_key(s["input_shapes"],
                                                                  s["output_shapes"]))
            for s in json.loads(out)["profile"]["steps"]}


def shape_key(inputs, outputs, weight=1):
    """(output elements, weight elements): pairs a conv or GEMM with its twin in the other
    engine, whatever the engines named or fused around it. weight: the weight's input index
    (3 in ORT's QLinearConv and QLinearMatMul, after the input's scale and zero point)."""
    size = lambda shape: int(np.prod(shape)) if shape else 0
    return (size(outputs[0]) if outputs else 0,
            size(inputs[weight]) if len(inputs) > weight else 0)


def input_dims(dims, batch):
    """An input's dims with the batch (the first) set and other symbolic dims 1."""
    return [batch if i == 0 else d if isinstance(d, int) else 1 for i, d in enumerate(dims)]


def ort_steps(path, threads, runs, batch):
    """{node name: (op, ms, shape key)}: the median over `runs` runs of each node's kernel
    time."""
    with tempfile.TemporaryDirectory() as folder:
        session = ort_session(path, threads, profile_prefix=os.path.join(folder, "ort"))
        rng = np.random.default_rng(0)
        feeds = {i.name: rng.random(input_dims(i.shape, batch), dtype=np.float32)
                 for i in session.get_inputs()}
        for _ in range(3):  # warm-up runs: their events are dropped below
            session.run(None, feeds)
        for _ in range(runs):
            session.run(None, feeds)
        with open(session.end_profiling()) as f:
            events = json.load(f)
    times = collections.defaultdict(list)
    info = {}
    previous = None  # the node that ran just before, with its op
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            name = e["name"][: -len("_kernel_time")]
            op = e["args"].get("op_name", "?")
            # An activation that ORT left unfused after a conv (QuickGelu, its SiLU) counts as
            # that conv's: minfer applies it in the conv's epilogue.
            if op in ACTIVATIONS and previous and previous[1] in HEAVY:
                times[previous[0]][-1] += e["dur"] / 1e3
                previous = None
                continue
            previous = (name, op)
            times[name].append(e["dur"] / 1e3)
            shapes = lambda key: [list(t.values())[0] for t in e["args"].get(key, [])]
            info[name] = (op, shape_key(shapes("input_type_shape"), shapes("output_type_shape"),
                                        3 if op.startswith("QLinear") else 1))
    return {n: (info[n][0], float(np.median(t[-runs:])), info[n][1]) for n, t in times.items()}


def openvino_steps(path, threads, runs, batch):
    """{node name: (layer type, ms, shape key)}: the median over `runs` runs of each executed
    node's time in OpenVINO's profile (compiled for static input shapes, as cpu_peers.py)."""
    import openvino as ov  # only for --peer openvino
    core = ov.Core()
    shapes = {i.get_any_name(): input_dims([d.get_length() if d.is_static else None
                                            for d in i.get_partial_shape()], batch)
              for i in core.read_model(path).inputs}
    compiled = openvino_compiled(core, path, threads, shapes, profile=True)
    request = compiled.create_infer_request()
    rng = np.random.default_rng(0)
    feeds = {i.get_any_name(): rng.random([d.get_length() for d in i.get_partial_shape()],
                                          dtype=np.float32) for i in compiled.inputs}
    for _ in range(3):
        request.infer(feeds)
    times = collections.defaultdict(list)
    for _ in range(runs):
        request.infer(feeds)
        for p in request.get_profiling_info():
            if p.status == p.Status.EXECUTED:
                times[p.node_name].append(p.real_time.total_seconds() * 1e3)
    info = {}
    for op in compiled.get_runtime_model().get_ordered_ops():
        rt = op.get_rt_info()
        dims = lambda port: [d.get_length() for d in port.get_partial_shape()]
        inputs = [dims(op.input(i)) for i in range(op.get_input_size())]
        outputs = [dims(op.output(i)) for i in range(op.get_output_size())]
        kind = rt["layerType"].astype(str) if "layerType" in rt else op.get_type_name()
        info[op.get_friendly_name()] = (kind, shape_key(inputs, outputs))
    return {n: (info.get(n, ("?", None))[0], float(np.median(t)), info.get(n, ("?", None))[1])
            for n, t in times.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--minfer", default="build/minfer")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--top", type=int, default=25, help="layer rows to print, minfer's worst first")
    ap.add_argument("--peer", choices=("ort", "openvino"), default="ort")
    ap.add_argument("--batch", type=int, default=1, help="the inputs' first dimension")
    args = ap.parse_args()
    ours = minfer_steps(args.minfer, args.model, args.threads, args.runs, args.batch)
    if args.peer == "openvino":
        import openvino as ov
        peer, version = "OpenVINO", f"openvino {ov.__version__}"
        theirs = openvino_steps(args.model, args.threads, args.runs, args.batch)
    else:
        peer, version = "ORT", f"onnxruntime {ort.__version__}"
        theirs = ort_steps(args.model, args.threads, args.runs, args.batch)
    heavy_ours = [(n, v) for n, v in ours.items() if v[0].split(":")[-1].split(" ")[0] in HEAVY]
    heavy_theirs = [(n, v) for n, v in theirs.items() if v[0] in HEAVY]
    print(f"{os.path.basename(args.model)}, batch {args.batch}, {args.threads} thread(s), "
          f"{version}: per-run sums of the steps, "
          f"minfer {sum(v[2] for v in ours.values()):.2f} ms, {peer} "
          f"{sum(v[1] for v in theirs.values()):.2f} ms")
    pairs, unused = [], list(heavy_theirs)
    for n, v in heavy_ours:  # in order, the first of ORT's nodes with the same shapes
        twin = next((u for u in unused if u[1][2] == v[3]), None)
        if twin:
            unused.remove(twin)
            pairs.append(((n, v), twin))
    if len(pairs) < len(heavy_ours):
        print(f"({len(heavy_ours) - len(pairs)} of minfer's conv/GEMM nodes have no twin of the "
              f"same shapes in {peer}'s profile)")
    print(f"\n{'minfer node':<44} {'kernel':<26} {'minfer':>7} {peer:>8} "
          f"{peer + ' - minfer':>17}  {peer} node")
    for (n, (op, kernel, ms, _)), (m, (_, theirs_ms, _)) in sorted(
            pairs, key=lambda p: p[1][1][1] - p[0][1][2])[: args.top]:
        print(f"{n[-44:]:<44} {kernel[:26]:<26} {ms:7.3f} {theirs_ms:8.3f} "
              f"{theirs_ms - ms:+17.3f}  {m}")
    print(f"\nconv/GEMM nodes: minfer {sum(v[2] for _, v in heavy_ours):.2f} ms, {peer} "
          f"{sum(v[1] for _, v in heavy_theirs):.2f} ms")
    for label, steps in (("minfer", [(v[0], v[2]) for n, v in ours.items()]),
                         (peer, [(v[0], v[1]) for v in theirs.values()])):
        by_op = collections.defaultdict(float)
        for op, ms in steps:
            if op.split(":")[-1].split(" ")[0] not in HEAVY:
                by_op[op] += ms
        print(f"{label}'s other nodes by op (ms per run): " +
              (", ".join(f"{op} {ms:.3f}" for op, ms in sorted(by_op.items(),
                                                                key=lambda kv: -kv[1]))
               or "none"))


if __name__ == "__main__":
    main()
