"""Oracle for the [int8] QDQ export test: ONNX Runtime runs the QDQ model minfer wrote and its
top-1 is compared with minfer's int8 predictions.

Usage: int8_qdq_ort.py MODEL.onnx INPUTS.npy MINFER_TOP1.npy MIN_AGREEMENT
Exit status 0 = onnx.checker accepts the model and the agreement is at least MIN_AGREEMENT
(a fraction); 1 = it is not; 3 = numpy/onnx/onnxruntime are missing."""
import sys

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
except ImportError as e:  # the C++ test reports status 3 as "install ..."
    print(f"{e}: this test oracle needs python3 with numpy, onnx and onnxruntime")
    sys.exit(3)


def main(model_path, inputs_path, top1_path, min_agreement):
    onnx.checker.check_model(onnx.load(model_path), full_check=True)
    x = np.load(inputs_path)
    minfer_top1 = np.load(top1_path)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    top1 = []
    for i in range(0, len(x), 50):
        logits = sess.run(None, {name: x[i:i + 50]})[0]
        top1.extend(np.argmax(logits, axis=1).tolist())
    top1 = np.array(top1)
    agree = float(np.mean(top1 == minfer_top1))
    quantized = sum(1 for n in onnx.load(model_path).graph.node if n.op_type == "QuantizeLinear")
    print(f"onnxruntime {ort.__version__} on the QDQ model ({quantized} QuantizeLinear): "
          f"top-1 agrees with minfer int8 on {agree * 100:.1f}% of {len(x)} inputs")
    return 0 if agree >= min_agreement else 1


if __name__ == "__main__":
    if len(sys.argv) != 5:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])))
