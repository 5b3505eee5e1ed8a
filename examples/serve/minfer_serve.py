"""Serve a minfer model with Ray Serve: each replica holds one minfer.Session, and requests are
batched dynamically (@serve.batch) into one run.

    python examples/serve/minfer_serve.py cifar-resnet20 --replicas 1            # CPU
    python examples/serve/minfer_serve.py resnet50 --device cuda --replicas 4    # one per GPU

A request is an HTTP POST of one image as raw float32 bytes in C order, [C, H, W] (the model's
input without the batch dimension); the answer is JSON: {"logits": [...], "class": k, "batch": n}, n the size of the batch it ran in.
See docs/serving.md for clusters and measured throughput.
"""
import argparse
import asyncio
import time

import numpy as np
from ray import serve
from starlette.requests import Request
from starlette.responses import JSONResponse

import minfer


@serve.deployment
class MinferModel:
    """One replica: one Session (on one GPU when device is 'cuda')."""

    def __init__(self, model, device="cpu", precision="fp32", threads=0, max_batch_size=8,
                 batch_wait_s=0.005):
        self.session = minfer.Session(model, device=device, precision=precision, threads=threads)
        self.input = self.session.input_names[0]
        self.output = self.session.output_names[0]
        dtype, shape = self.session.inputs[self.input]
        if dtype != "f32" or any(d is None for d in shape[1:]):
            raise ValueError(f"{model}: needs one f32 input of fixed [N, ...] shape, has {shape}")
        self.item_shape = tuple(shape[1:])
        self.run_batch.set_max_batch_size(max_batch_size)
        self.run_batch.set_batch_wait_timeout_s(batch_wait_s)

    @serve.batch(max_batch_size=8, batch_wait_timeout_s=0.005)
    async def run_batch(self, items):
        batch = np.stack(items)
        # Session.run releases the GIL: off the event loop, so the next batch keeps filling.
        out = await asyncio.to_thread(self.session.run, {self.input: batch})
        return [(row, len(items)) for row in out[self.output]]

    async def __call__(self, request: Request):
        body = await request.body()
        expected = int(np.prod(self.item_shape)) * 4
        if len(body) != expected:
            return JSONResponse(
                {"error": f"expected {expected} bytes (float32 {list(self.item_shape)}), "
                          f"got {len(body)}"}, status_code=400)
        item = np.frombuffer(body, dtype=np.float32).reshape(self.item_shape)
        logits, batch = await self.run_batch(item)
        return {"logits": logits.tolist(), "class": int(np.argmax(logits)), "batch": batch}


def build_app(model, device="cpu", replicas=1, threads=0, max_batch_size=8, batch_wait_s=0.005,
              precision="fp32"):
    """The Serve application: `replicas` copies of MinferModel; with device 'cuda', each
    replica asks Ray for one GPU, so Ray places one replica per GPU across the cluster."""
    options = {"num_gpus": 1} if device.startswith("cuda") else {"num_cpus": max(threads, 1)}
    # Room for a full batch running and the next one filling (Serve's default is 5).
    return MinferModel.options(num_replicas=replicas, ray_actor_options=options,
                               max_ongoing_requests=2 * max_batch_size).bind(
        model, device=device, precision=precision, threads=threads,
        max_batch_size=max_batch_size, batch_wait_s=batch_wait_s)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", help="a built-in model name or an ONNX file")
    p.add_argument("--device", default="cpu", help="cpu or cuda (one GPU per replica)")
    p.add_argument("--precision", default="fp32", help="int8 for a model from minfer.quantize")
    p.add_argument("--replicas", type=int, default=1)
    p.add_argument("--threads", type=int, default=0, help="per replica; 0 = all cores")
    p.add_argument("--max-batch-size", type=int, default=8)
    p.add_argument("--batch-wait-ms", type=float, default=5.0)
    p.add_argument("--port", type=int, default=8000)
    args = p.parse_args()
    serve.start(http_options={"host": "0.0.0.0", "port": args.port})
    serve.run(build_app(args.model, args.device, args.replicas, args.threads,
                        args.max_batch_size, args.batch_wait_ms / 1000, args.precision),
              route_prefix="/")
    print(f"serving {args.model} on port {args.port}; Ctrl-C stops")
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
