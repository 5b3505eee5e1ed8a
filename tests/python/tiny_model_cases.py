"""Turns the checked-in tiny torchvision/BERT exports (tiny_models/*.onnx, written by
make_tiny_models.py) into ONNX backend-test-style cases, OUT/<model>/model.onnx +
test_data_set_0/{input,output}_K.pb, with ONNX Runtime's outputs (no graph optimization) as
the expected values. Used by the [conformance][torchvision] test.

  tiny_model_cases.py OUT
Exit status: 0 = written, 3 = numpy/onnx/onnxruntime missing."""
import glob
import os
import shutil
import sys

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper
except ImportError as e:
    print(f"missing: {e}", file=sys.stderr)
    sys.exit(3)

HERE = os.path.dirname(os.path.abspath(__file__))


def inputs_for(sess, rng):
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        if i.type == "tensor(int64)":  # token ids: every tiny encoder has >= 100 tokens
            feeds[i.name] = rng.integers(0, 100, shape).astype(np.int64)
        else:
            feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    out = sys.argv[1]
    models = sorted(glob.glob(os.path.join(HERE, "tiny_models", "*.onnx")))
    rng = np.random.default_rng(7)
    for path in models:
        case = os.path.join(out, "test_" + os.path.basename(path)[:-5])
        data = os.path.join(case, "test_data_set_0")
        os.makedirs(data, exist_ok=True)
        shutil.copy(path, os.path.join(case, "model.onnx"))
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        feeds = inputs_for(sess, rng)
        results = sess.run(None, feeds)
        for k, (name, value) in enumerate(feeds.items()):
            onnx.save_tensor(numpy_helper.from_array(value, name),
                             os.path.join(data, f"input_{k}.pb"))
        for k, (o, value) in enumerate(zip(sess.get_outputs(), results)):
            onnx.save_tensor(numpy_helper.from_array(value, o.name),
                             os.path.join(data, f"output_{k}.pb"))
    print(f"{len(models)} cases written to {out}")
    return 0 if models else 1


if __name__ == "__main__":
    sys.exit(main())
