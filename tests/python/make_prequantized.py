"""Oracle for the [conformance] pre-quantized model test: quantizes an fp32 ONNX model with
ONNX Runtime's quantize_static, in QDQ format and in QOperator format (QLinearConv, QGemm,
QLinearAdd, QLinearGlobalAveragePool), int8 activations and per-channel int8 weights, calibrated
on the first 64 images of INPUTS; then runs each quantized model in ONNX Runtime on all of
INPUTS and saves its top-1 classes.

Usage: make_prequantized.py MODEL.onnx INPUTS.npy OUT
Writes OUT/qdq.onnx, OUT/qoperator.onnx, OUT/qdq_top1.npy, OUT/qoperator_top1.npy.
Exit status: 0 = written, 3 = numpy/onnx/onnxruntime missing."""
import os
import sys

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process
except ImportError as e:  # the C++ test reports status 3 as "install ..."
    print(f"{e}: this test oracle needs python3 with numpy, onnx and onnxruntime")
    sys.exit(3)


class Calibration(CalibrationDataReader):
    def __init__(self, name, x):
        self.name, self.x, self.i = name, x, 0

    def get_next(self):
        if self.i >= min(64, len(self.x)):
            return None
        self.i += 1
        return {self.name: self.x[self.i - 1:self.i]}


def main(model, inputs, out):
    os.makedirs(out, exist_ok=True)
    x = np.load(inputs)
    prepared = os.path.join(out, "prepared.onnx")
    quant_pre_process(model, prepared)
    name = onnx.load(prepared).graph.input[0].name
    for fmt, tag in ((QuantFormat.QDQ, "qdq"), (QuantFormat.QOperator, "qoperator")):
        path = os.path.join(out, f"{tag}.onnx")
        quantize_static(prepared, path, Calibration(name, x), quant_format=fmt,
                        per_channel=True, activation_type=QuantType.QInt8,
                        weight_type=QuantType.QInt8)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        top1 = np.concatenate([sess.run(None, {name: x[i:i + 100]})[0].argmax(axis=1)
                               for i in range(0, len(x), 100)])
        np.save(os.path.join(out, f"{tag}_top1.npy"), top1.astype(np.int64))
        ops = sorted({f"{n.domain + ':' if n.domain else ''}{n.op_type}"
                      for n in onnx.load(path).graph.node})
        print(f"{tag}: {len(top1)} images; ops {', '.join(ops)}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
