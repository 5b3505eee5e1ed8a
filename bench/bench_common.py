"""Timing shared by the CPU benchmark scripts: minfer's `bench --json` and ONNX Runtime on the
same model, batch and thread count, both reporting the median latency in milliseconds."""
import json
import os
import subprocess
import time

import numpy as np
import onnxruntime as ort


def minfer_latency(exe, model, batch, threads, iterations, extra_args=(), env=None):
    """Median ms of `minfer bench MODEL` after 3 warm-up runs."""
    cmd = [exe, "bench", model, "--batch", str(batch), "--threads", str(threads),
           "--warmup", "3", "--iterations", str(iterations), "--json", *extra_args]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out)["latency_ms"]["p50"]


def median_ms(fn, iterations, warmup=1):
    """Median ms of `iterations` back-to-back calls of fn after `warmup` untimed ones."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


def ort_session(path, threads, config=None, profile_prefix=None):
    """ONNX Runtime as the peer: CPU, all graph optimizations, `threads` intra-op threads
    (and the session config entries in `config`; its profile written from `profile_prefix`
    where given)."""
    so = ort.SessionOptions()
    for key, value in (config or {}).items():
        so.add_session_config_entry(key, value)
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if profile_prefix:
        so.enable_profiling = True
        so.profile_file_prefix = profile_prefix
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def openvino_compiled(core, path, threads, shapes=None, profile=False):
    """OpenVINO as the peer: its CPU plugin with the latency hint, f32 inference precision and
    `threads` inference threads, for the static input shapes {name: dims} where given (and
    its per-node profile with `profile`)."""
    model = core.read_model(path)
    if shapes:
        model.reshape(shapes)
    config = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": threads,
              "INFERENCE_PRECISION_HINT": "f32"}
    if profile:
        config["PERF_COUNT"] = True
    return core.compile_model(model, "CPU", config)


def ort_latency(path, batch, threads, iterations):
    """Median ms of ONNX Runtime (see ort_session)."""
    sess = ort_session(path, threads)
    inp = sess.get_inputs()[0]
    size = 32 if "cifar" in os.path.basename(path) else 224
    x = np.random.default_rng(0).standard_normal((batch, 3, size, size), dtype=np.float32)
    return median_ms(lambda: sess.run(None, {inp.name: x}), iterations, warmup=3)
