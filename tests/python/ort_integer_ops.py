"""Oracle for the [integer] tests: ONNX Runtime's Cast, DynamicQuantizeLinear and its
dynamically quantized models.

Usage:
  ort_integer_ops.py cast DIR        DIR/x.npy (float32) cast by ONNX Runtime to each of
                                     int8, uint8, int32, int64, float16, bool:
                                     writes DIR/cast_<numpy dtype name>.npy
  ort_integer_ops.py dql DIR N       DynamicQuantizeLinear of DIR/x<k>.npy for k < N:
                                     writes DIR/y<k>.npy, DIR/scale<k>.npy, DIR/zp<k>.npy
  ort_integer_ops.py dynamic MODEL.onnx INPUTS.npy OUT
                                     quantize_dynamic(MODEL) -> OUT/dynamic.onnx, then runs it
                                     on INPUTS in batches of 100: writes OUT/dynamic_top1.npy and
                                     prints the model's op types
Exit status: 0 = written, 2 = usage, 3 = numpy/onnx/onnxruntime missing."""
import os
import sys

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper
except ImportError as e:  # the C++ tests report status 3 as "install ..."
    print(f"{e}: this test oracle needs python3 with numpy, onnx and onnxruntime")
    sys.exit(3)


def session(nodes, inputs, outputs, opset):
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    # IR version 8: what the installed ONNX Runtime accepts whatever onnx's default is.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def cast(folder):
    x = np.load(os.path.join(folder, "x.npy"))
    targets = [(TensorProto.INT8, "int8"), (TensorProto.UINT8, "uint8"),
               (TensorProto.INT32, "int32"), (TensorProto.INT64, "int64"),
               (TensorProto.FLOAT16, "float16"), (TensorProto.BOOL, "bool")]
    for to, name in targets:
        sess = session([helper.make_node("Cast", ["x"], ["y"], to=to)],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                       [helper.make_tensor_value_info("y", to, list(x.shape))], 13)
        np.save(os.path.join(folder, f"cast_{name}.npy"), sess.run(None, {"x": x})[0])
    return 0


def dql(folder, count):
    for k in range(int(count)):
        x = np.load(os.path.join(folder, f"x{k}.npy"))
        sess = session([helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])],
                       [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                       [helper.make_tensor_value_info("y", TensorProto.UINT8, list(x.shape)),
                        helper.make_tensor_value_info("s", TensorProto.FLOAT, []),
                        helper.make_tensor_value_info("z", TensorProto.UINT8, [])], 11)
        y, s, z = sess.run(None, {"x": x})
        np.save(os.path.join(folder, f"y{k}.npy"), y)
        np.save(os.path.join(folder, f"scale{k}.npy"), np.asarray(s, dtype=np.float32))
        np.save(os.path.join(folder, f"zp{k}.npy"), np.asarray(z, dtype=np.uint8))
    return 0


def dynamic(model, inputs, out):
    from onnxruntime.quantization import quantize_dynamic
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "dynamic.onnx")
    # The defaults: uint8 activations (DynamicQuantizeLinear), int8 weights, per tensor;
    # Conv -> ConvInteger and Gemm/MatMul -> MatMulInteger, each followed by Cast and Mul.
    quantize_dynamic(model, path)
    x = np.load(inputs)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    # DynamicQuantizeLinear's range is per tensor, so the batch matters: the C++ test runs
    # the same batches of 100.
    top1 = np.concatenate([sess.run(None, {name: x[i:i + 100]})[0].argmax(axis=1)
                           for i in range(0, len(x), 100)])
    np.save(os.path.join(out, "dynamic_top1.npy"), top1.astype(np.int64))
    ops = sorted({n.op_type for n in onnx.load(path).graph.node})
    print(f"dynamic: onnxruntime {ort.__version__}; {len(top1)} images; ops {', '.join(ops)}")
    return 0


if __name__ == "__main__":
    commands = {"cast": (cast, 1), "dql": (dql, 2), "dynamic": (dynamic, 3)}
    if len(sys.argv) < 2 or sys.argv[1] not in commands or \
            len(sys.argv) != 2 + commands[sys.argv[1]][1]:
        print(__doc__)
        sys.exit(2)
    sys.exit(commands[sys.argv[1]][0](*sys.argv[2:]))
