#!/usr/bin/env python3
"""Which kernels OpenVINO's CPU plugin runs a model's convs and fully connected layers with, as
bench/cpu_peers.py compiles it (latency hint, f32 inference precision, 1 thread): counts of
(layer type, primitive, runtime precision) from the compiled model's runtime graph. Tells whether
an int8 (QDQ) file runs on OpenVINO's int8 kernels (e.g. brgconv_avx512_I8) or as float ones.

    python3 bench/openvino_kernels.py MODEL.onnx...   (needs `pip install openvino onnxruntime`)
"""
import collections
import sys

import openvino as ov

from bench_common import openvino_compiled


def main():
    core = ov.Core()
    print(f"openvino {ov.__version__}; CPU capabilities: "
          f"{' '.join(core.get_property('CPU', 'OPTIMIZATION_CAPABILITIES'))}")
    for path in sys.argv[1:]:
        compiled = openvino_compiled(core, path, 1)
        kinds = collections.Counter()
        for op in compiled.get_runtime_model().get_ordered_ops():
            rt = op.get_rt_info()
            layer = rt["layerType"].astype(str)
            if layer in ("Convolution", "FullyConnected"):
                kinds[(layer, rt["primitiveType"].astype(str),
                       rt["runtimePrecision"].astype(str))] += 1
        print(path)
        for (layer, primitive, precision), n in sorted(kinds.items()):
            print(f"  {n:3d} x {layer} {primitive} ({precision})")


if __name__ == "__main__":
    main()
