#!/usr/bin/env python3
"""GPU benchmark: minfer against PyTorch on the same card, the same weights and the same
batch, in one run.

Usage: python3 bench/gpu_peers.py [--minfer build/minfer] [--models resnet18,resnet50]
           [--batches 1,32,256] [--iterations 50] [--json OUT]

For each model, torchvision's architecture with seeded random weights is saved as safetensors
and loaded by minfer's built-in model of the same name (`--weights`), so both run the same
network. Then, per batch:
  minfer int8      `minfer bench MODEL --precision int8` with the input on the GPU
                   (--device-input) and end to end (host input, host output)
  minfer fp16      `minfer bench MODEL --precision fp16` with the input on the GPU
  minfer fp32      `minfer bench MODEL` with the input on the GPU
  torch fp32       eager, NCHW (TF32 convolutions: PyTorch's default)
  torch fp16       channels_last + CUDA graph replay (the fastest plain PyTorch setting)
  torch compile    with --compile: torch.compile(mode="max-autotune-no-cudagraphs"), fp16
                   channels_last (minutes of autotuning per shape)
Throughput is images per second from the median latency of one run; every PyTorch figure
synchronizes after each run, as `minfer bench` does. The last two columns are PyTorch
fp16 + graph's latency over minfer int8's and over minfer fp16's (device input): above 1,
minfer is faster.
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile

import torch
import torchvision
from safetensors.torch import save_file


def median_ms(fn, iterations, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def torch_eager(model, x, iterations):
    with torch.inference_mode():
        return median_ms(lambda: model(x), iterations)


def torch_fp16_graph(model, x, iterations):
    m = model.half().to(memory_format=torch.channels_last)
    xs = x.half().contiguous(memory_format=torch.channels_last)
    with torch.inference_mode():
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                m(xs)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            m(xs)
        return median_ms(graph.replay, iterations)


def torch_compiled(model, x, iterations):
    try:
        m = model.half().to(memory_format=torch.channels_last)
        xs = x.half().contiguous(memory_format=torch.channels_last)
        c = torch.compile(m, mode="max-autotune-no-cudagraphs")
        with torch.inference_mode():
            return median_ms(lambda: c(xs), iterations)
    except Exception as e:  # noqa: BLE001 - compile depends on the machine's toolchain
        print(f"  torch.compile failed: {type(e).__name__}: {str(e)[:200]}", file=sys.stderr)
        return None


def minfer_ms(exe, model, weights, batch, iterations, extra):
    cmd = [exe, "bench", model, "--weights", weights, "--device", "cuda", "--batch", str(batch),
           "--warmup", "5", "--iterations", str(iterations), "--json", *extra]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["latency_ms"]["p50"]


def ips(batch, ms):
    return None if ms is None else batch * 1000.0 / ms


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--minfer", default=os.path.join("build", "minfer"))
    ap.add_argument("--models", default="resnet18,resnet50")
    ap.add_argument("--batches", default="1,32,256")
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--compile", action="store_true", help="also time torch.compile")
    ap.add_argument("--json", help="also write the rows to this file")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("gpu_peers.py: no CUDA device")
    card = torch.cuda.get_device_name(0)
    print(f"card: {card}; torch {torch.__version__}")
    int8 = ["--precision", "int8", "--calib", "random", "--calib-count", "8"]
    rows = []
    tmp = tempfile.mkdtemp(prefix="minfer_gpu_peers_")
    for name in args.models.split(","):
        torch.manual_seed(0)
        net = getattr(torchvision.models, name)().eval()
        weights = os.path.join(tmp, f"{name}.safetensors")
        save_file({k: v.contiguous() for k, v in net.state_dict().items()
                   if not k.endswith("num_batches_tracked")}, weights)
        for batch in [int(b) for b in args.batches.split(",")]:
            it = args.iterations if batch < 256 else max(10, args.iterations // 3)
            x = torch.randn(batch, 3, 224, 224, device="cuda")
            r = {"model": name, "batch": batch, "card": card}
            r["minfer_int8_dev"] = minfer_ms(args.minfer, name, weights, batch, it,
                                             int8 + ["--device-input"])
            r["minfer_int8_e2e"] = minfer_ms(args.minfer, name, weights, batch, it, int8)
            r["minfer_fp16_dev"] = minfer_ms(args.minfer, name, weights, batch, it,
                                             ["--precision", "fp16", "--device-input"])
            r["minfer_fp32_dev"] = minfer_ms(args.minfer, name, weights, batch, it,
                                             ["--device-input"])
            gpu_net = copy.deepcopy(net).cuda()
            r["torch_fp32"] = torch_eager(gpu_net, x, it)
            r["torch_fp16_graph"] = torch_fp16_graph(copy.deepcopy(gpu_net), x, it)
            r["torch_compile_fp16"] = (torch_compiled(copy.deepcopy(gpu_net), x, it)
                                       if args.compile else None)
            rows.append(r)
            print(json.dumps(r), file=sys.stderr, flush=True)
    cols = [("minfer_int8_dev", "minfer int8 (GPU in)"), ("minfer_int8_e2e", "minfer int8 (host)"),
            ("minfer_fp16_dev", "minfer fp16 (GPU in)"), ("minfer_fp32_dev", "minfer fp32 (GPU in)"), ("torch_fp32", "torch fp32"),
            ("torch_fp16_graph", "torch fp16+graph"), ("torch_compile_fp16", "torch compile")]
    print(f"\n{'model':9} {'batch':>5} " + " ".join(f"{c[1]:>21}" for c in cols) +
          "  int8 vs torch  fp16 vs torch")
    for r in rows:
        cells = []
        for key, _ in cols:
            ms = r[key]
            cells.append(f"{'-':>21}" if ms is None else
                         f"{ms:8.3f} ms {ips(r['batch'], ms):8.0f}/s")
        ratio = r["torch_fp16_graph"] / r["minfer_int8_dev"]
        ratio16 = r["torch_fp16_graph"] / r["minfer_fp16_dev"]
        print(f"{r['model']:9} {r['batch']:5} " + " ".join(cells) +
              f"  {ratio:12.2f}x {ratio16:12.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
