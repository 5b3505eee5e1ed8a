"""Oracle: runs an ONNX model with ONNX Runtime (CPU, all optimizations) on one .npy input
and writes the first output as .npy. Usage: ort_run.py MODEL INPUT.npy OUTPUT.npy"""
import sys

try:
    import numpy as np
    import onnxruntime as ort
except ImportError as e:
    print(f"{e}: this test oracle needs python3 with numpy and onnxruntime")
    sys.exit(3)


def main(model, inp, out):
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    x = np.load(inp)
    y = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    np.save(out, y)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
