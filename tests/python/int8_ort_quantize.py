"""Makes a QDQ model with ONNX Runtime's own quantizer (static, per-channel int8 weights,
int8 activations), for the [int8] test that minfer folds models quantized by other tools.

Usage: int8_ort_quantize.py FP32.onnx CALIB.npy OUT.onnx [int8|uint8]   (activation type)
Exit status 0 = written; 3 = numpy/onnx/onnxruntime are missing."""
import os
import sys
import tempfile

try:
    import numpy as np
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process
except ImportError as e:  # the C++ test reports status 3 as "install ..."
    print(f"{e}: this test oracle needs python3 with numpy, onnx and onnxruntime")
    sys.exit(3)


class Reader(CalibrationDataReader):
    def __init__(self, x, name):
        self.x, self.name, self.i = x, name, 0

    def get_next(self):
        if self.i >= len(self.x):
            return None
        self.i += 1
        return {self.name: self.x[self.i - 1:self.i]}


def main(fp32, calib, out, activations="int8"):
    x = np.load(calib)
    with tempfile.TemporaryDirectory() as tmp:
        pre = os.path.join(tmp, "pre.onnx")
        quant_pre_process(fp32, pre)
        quantize_static(pre, out, Reader(x, "input"), quant_format=QuantFormat.QDQ,
                        activation_type=(QuantType.QUInt8 if activations == "uint8"
                                         else QuantType.QInt8),
                        weight_type=QuantType.QInt8,
                        per_channel=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5):
        print(__doc__)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
