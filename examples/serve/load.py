"""Load generator for minfer_serve.py: POSTs images concurrently, reports throughput.

    python examples/serve/load.py --url http://127.0.0.1:8000/ --shape 3,32,32 \
        --requests 2000 --concurrency 32
"""
import argparse
import json
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def post(url, image, timeout=60):
    """One request: `image` ([C,H,W] float32) as raw bytes; returns the JSON answer."""
    data = np.ascontiguousarray(image, dtype=np.float32).tobytes()
    req = urllib.request.Request(url, data=data, method="POST",
                                 headers={"Content-Type": "application/octet-stream"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def run_load(url, images, concurrency):
    """Sends every image once with `concurrency` requests in flight; returns (answers, seconds,
    per-request latencies in seconds)."""
    latencies = [0.0] * len(images)

    def one(i):
        t = time.perf_counter()
        answer = post(url, images[i])
        latencies[i] = time.perf_counter() - t
        return answer

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        answers = list(pool.map(one, range(len(images))))
    return answers, time.perf_counter() - t0, latencies


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", default="http://127.0.0.1:8000/")
    p.add_argument("--shape", default="3,32,32", help="one image, C,H,W")
    p.add_argument("--requests", type=int, default=1000)
    p.add_argument("--concurrency", type=int, default=32)
    args = p.parse_args()
    shape = tuple(int(d) for d in args.shape.split(","))
    rng = np.random.default_rng(0)
    images = [rng.standard_normal(shape, dtype=np.float32) for _ in range(64)]
    post(args.url, images[0])  # warm up
    work = [images[i % len(images)] for i in range(args.requests)]
    _, seconds, lat = run_load(args.url, work, args.concurrency)
    lat = np.sort(np.array(lat)) * 1000
    print(f"{args.requests} requests, {args.concurrency} in flight: {args.requests / seconds:.1f} "
          f"req/s; latency p50 {np.percentile(lat, 50):.1f} ms, p99 {np.percentile(lat, 99):.1f} ms")


if __name__ == "__main__":
    main()
