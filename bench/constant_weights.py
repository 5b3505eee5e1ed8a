#!/usr/bin/env python3
"""Writes a copy of an ONNX model whose large weights are made at load time, for benchmarks only.

Usage: python3 bench/constant_weights.py IN.onnx OUT.onnx [--min-elements 4096]
           [--chunk 4096]

Every initializer of at least `min-elements` elements becomes Reshape(Tile(head)): its first
values (the largest divisor of its size up to `chunk`) repeated to its size. minfer and ONNX
Runtime both fold that into a constant before they run, so the timed graph is the same, and the
file shrinks from the weights' size (ViT-B/16: 330 MB) to a few hundred KB, small enough to
travel to a machine that cannot download the model (bench/cpu_isa_suite.sh). The repeated
values are the model's own, so activations keep realistic magnitudes (a single constant made
them shrink into denormals, which are slow); the outputs are meaningless, only the time counts.
Needs `pip install onnx numpy`.
"""
import argparse

import numpy as np
import onnx
from onnx import helper, numpy_helper


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--min-elements", type=int, default=4096)
    ap.add_argument("--chunk", type=int, default=4096)
    args = ap.parse_args()

    model = onnx.load(args.input)
    graph = model.graph
    kept, made = [], []
    for init in graph.initializer:
        count = int(np.prod(init.dims)) if init.dims else 1
        if count < args.min_elements:
            kept.append(init)
            continue
        values = numpy_helper.to_array(init).reshape(-1)
        chunk = max(d for d in range(1, min(args.chunk, count) + 1) if count % d == 0)
        name = init.name
        kept.append(numpy_helper.from_array(values[:chunk].copy(), name + "__head"))
        kept.append(numpy_helper.from_array(np.array([count // chunk], np.int64), name + "__reps"))
        kept.append(numpy_helper.from_array(np.array(init.dims, np.int64), name + "__shape"))
        made.append(helper.make_node("Tile", [name + "__head", name + "__reps"], [name + "__flat"],
                                     name=name + "__tile"))
        made.append(helper.make_node("Reshape", [name + "__flat", name + "__shape"], [name],
                                     name=name + "__reshape"))
    del graph.initializer[:]
    graph.initializer.extend(kept)
    nodes = made + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.save(model, args.output)
    print(f"{args.output}: {len(made) // 2} weights made by Tile, the other initializers kept")


if __name__ == "__main__":
    main()
