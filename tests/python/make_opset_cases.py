"""Writes ONNX backend-test-style cases (OUT/<case>/model.onnx + test_data_set_0/*.pb) for the
ops minfer supports at the opsets from 7 to 25 where their form or meaning changed: Clip's
bounds as attributes (< 11) or inputs, Softmax's axis before and after 13, BatchNormalization
7/9/14/15, Reshape's allowzero (14), Pad's attribute form (< 11), modes and axes input (18),
Slice's attribute form (< 10), Unsqueeze's axes attribute (< 13), Gemm's required C (< 11),
pooling's ceil_mode/dilations, Shape's start/end (15), Quantize/DequantizeLinear 10..21. Models
of opset <= 8 are IR 3 files whose initializers are also graph inputs.

Every model passes onnx.checker; the expected outputs come from ONNX Runtime, or from
onnx.reference where ONNX Runtime does not run that opset. Used by the [conformance] opset
test; by hand: make_opset_cases.py OUT && minfer conformance OUT.
Exit status: 0 = written, 3 = numpy/onnx/onnxruntime missing."""
import os
import sys

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from onnx.reference import ReferenceEvaluator
    import onnxruntime as ort
except ImportError as e:  # the C++ test reports status 3 as "install ..."
    print(f"{e}: this test oracle needs python3 with numpy, onnx and onnxruntime")
    sys.exit(3)

F = TensorProto.FLOAT
rng = np.random.default_rng(7)


def rand(*shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def tensor_type(array):
    return helper.np_dtype_to_tensor_dtype(array.dtype)


class Case:
    """One model: a single node (or a few) over named inputs and constant initializers."""

    def __init__(self, name, opset, inputs, nodes, outputs, inits=None, dims=None, more=()):
        self.name = f"test_{name}_opset{opset}"
        self.opset = opset
        self.inputs = inputs  # name -> array fed at run time (test_data_set_0)
        self.inits = inits or {}  # name -> array stored in the model
        self.nodes = nodes
        self.outputs = outputs  # names
        self.dims = dims or {}  # name -> declared dims where symbolic ("N"), else the array's
        self.sets = [inputs] + list(more)  # one test_data_set_K per entry

    def model(self):
        graph_inputs = [
            helper.make_tensor_value_info(n, tensor_type(a), self.dims.get(n, a.shape))
            for n, a in self.inputs.items()
        ]
        ir = helper.find_min_ir_version_for([helper.make_opsetid("", self.opset)])
        ir = max(ir, 3)
        if ir < 4:  # IR 3: every initializer is listed as a graph input too
            graph_inputs += [
                helper.make_tensor_value_info(n, tensor_type(a), a.shape)
                for n, a in self.inits.items()
            ]
        inits = [numpy_helper.from_array(a, n) for n, a in self.inits.items()]
        outputs = [helper.make_empty_tensor_value_info(n) for n in self.outputs]
        graph = helper.make_graph(self.nodes, self.name, graph_inputs, outputs, inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                                  ir_version=ir, producer_name="minfer-opset-cases")
        # Output types and shapes as ONNX infers them; where it cannot (a shape computed from
        # data), from onnx.reference's result. The checker then validates the whole model.
        model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
        for out in model.graph.output:
            if not out.type.tensor_type.HasField("shape"):
                value = ReferenceEvaluator(model).run([out.name], self.inputs)[0]
                dims = [f"{out.name}_d{i}" for i in range(value.ndim)]  # rank only
                out.CopyFrom(helper.make_tensor_value_info(out.name, tensor_type(value), dims))
        onnx.checker.check_model(model, full_check=True)
        return model


def expected(model, case, inputs):
    try:
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        return sess.run(case.outputs, inputs), "onnxruntime"
    except Exception as e:  # an opset or IR version this ONNX Runtime does not have
        if "opset" not in str(e).lower() and "ir_version" not in str(e).lower() and \
                "not implemented" not in str(e).lower():
            raise
    return ReferenceEvaluator(model).run(case.outputs, inputs), "onnx.reference"


def node(op, inputs, outputs=("y",), **attrs):
    return helper.make_node(op, list(inputs), list(outputs), **attrs)


def cases():
    x34 = rand(3, 4)
    x234 = rand(2, 3, 4)
    img = rand(1, 2, 5, 6)
    c = []

    # Clip: attributes before 11, optional inputs after (an absent bound does not clip).
    c.append(Case("clip_attrs", 7, {"x": x34}, [node("Clip", ["x"], min=-0.5, max=0.7)], ["y"]))
    c.append(Case("clip_attr_max_only", 7, {"x": x34}, [node("Clip", ["x"], max=0.1)], ["y"]))
    c.append(Case("clip_no_bounds", 7, {"x": x34}, [node("Clip", ["x"])], ["y"]))
    for opset in (11, 12, 13):
        c.append(Case("clip_inputs", opset, {"x": x34}, [node("Clip", ["x", "lo", "hi"])], ["y"],
                      {"lo": np.array(-0.5, np.float32), "hi": np.array(0.7, np.float32)}))
        c.append(Case("clip_max_only", opset, {"x": x34}, [node("Clip", ["x", "", "hi"])], ["y"],
                      {"hi": np.array(0.1, np.float32)}))
    c.append(Case("clip_runtime_bounds", 13,
                  {"x": x34, "lo": np.array(-1, np.float32), "hi": np.array(1.5, np.float32)},
                  [node("Clip", ["x", "lo", "hi"])], ["y"]))

    # Softmax: before 13 the input is coerced to 2-D at `axis` (default 1); after, one axis
    # (default -1).
    for opset in (7, 11, 13):
        c.append(Case("softmax_default_axis", opset, {"x": x234}, [node("Softmax", ["x"])], ["y"]))
        for axis in (0, 1, 2, -1) if opset >= 11 else (0, 1, 2):
            c.append(Case(f"softmax_axis_{axis}".replace("-", "m"), opset, {"x": x234},
                          [node("Softmax", ["x"], axis=axis)], ["y"]))

    # BatchNormalization: spatial (7), no spatial (9), training_mode attribute (14), different
    # scale/mean types allowed (15). Inference mode throughout.
    bn = {"s": rand(2, lo=0.5), "b": rand(2), "m": rand(2), "v": rand(2, lo=0.5, hi=2)}
    c.append(Case("batchnorm_spatial", 7, {"x": img},
                  [node("BatchNormalization", ["x", "s", "b", "m", "v"], spatial=1,
                        epsilon=1e-3)], ["y"], bn))
    for opset in (9, 14, 15):
        c.append(Case("batchnorm", opset, {"x": img},
                      [node("BatchNormalization", ["x", "s", "b", "m", "v"], epsilon=1e-4)], ["y"],
                      bn))
    c.append(Case("batchnorm_training_mode_0", 15, {"x": img},
                  [node("BatchNormalization", ["x", "s", "b", "m", "v"], training_mode=0)], ["y"],
                  bn))

    # Reshape: 0 copies the input dim, -1 is inferred; allowzero (14) makes 0 a real 0.
    for opset in (7, 13, 14):
        c.append(Case("reshape_zero_and_minus_one", opset, {"x": x234},
                      [node("Reshape", ["x", "shape"])], ["y"],
                      {"shape": np.array([0, -1, 2], np.int64)}))
    c.append(Case("reshape_allowzero_0", 14, {"x": x234},
                  [node("Reshape", ["x", "shape"], allowzero=0)], ["y"],
                  {"shape": np.array([2, 0, 4], np.int64)}))
    c.append(Case("reshape_allowzero_empty", 14, {"x": np.zeros((0, 3, 4), np.float32)},
                  [node("Reshape", ["x", "shape"], allowzero=1)], ["y"],
                  {"shape": np.array([3, 4, 0], np.int64)}))

    # Pad: attributes (2..10), then inputs (11), axes input (18), wrap mode (19).
    x2d = rand(3, 4)
    for mode in ("constant", "reflect", "edge"):
        attrs = {"pads": [1, 2, 0, 1], "mode": mode}
        if mode == "constant":
            attrs["value"] = 1.5
        c.append(Case(f"pad_attrs_{mode}", 7, {"x": x2d}, [node("Pad", ["x"], **attrs)], ["y"]))
        for opset in (11, 13, 18, 19, 21):
            ins, inits = ["x", "pads"], {"pads": np.array([1, 2, 0, 1], np.int64)}
            if mode == "constant":
                ins.append("value")
                inits["value"] = np.array(1.5, np.float32)
            c.append(Case(f"pad_{mode}", opset, {"x": x2d}, [node("Pad", ins, mode=mode)], ["y"],
                          inits))
    c.append(Case("pad_axes", 18, {"x": x234}, [node("Pad", ["x", "pads", "", "axes"])], ["y"],
                  {"pads": np.array([1, 0, 2, 1], np.int64), "axes": np.array([0, -1], np.int64)}))
    c.append(Case("pad_wrap", 19, {"x": x2d}, [node("Pad", ["x", "pads"], mode="wrap")], ["y"],
                  {"pads": np.array([1, 2, 2, 1], np.int64)}))

    # Slice: attributes before 10; inputs with steps after; negative and clamped indices.
    x45 = rand(4, 5, 6)
    c.append(Case("slice_attrs", 7, {"x": x45},
                  [node("Slice", ["x"], starts=[1, 0], ends=[3, 100], axes=[0, 2])], ["y"]))
    c.append(Case("slice_attrs_no_axes", 7, {"x": x45},
                  [node("Slice", ["x"], starts=[0, 1, -3], ends=[2, -1, 1000])], ["y"]))
    for opset in (10, 11, 13):
        c.append(Case("slice_steps", opset, {"x": x45},
                      [node("Slice", ["x", "s", "e", "a", "st"])], ["y"],
                      {"s": np.array([3, 0], np.int64), "e": np.array([0, 6], np.int64),
                       "a": np.array([0, 2], np.int64), "st": np.array([-1, 2], np.int64)}))
    c.append(Case("slice_negative_axes", 13, {"x": x45}, [node("Slice", ["x", "s", "e", "a"])],
                  ["y"], {"s": np.array([-2], np.int64), "e": np.array([1000], np.int64),
                          "a": np.array([-1], np.int64)}))

    # Unsqueeze: axes attribute before 13 (negative from 11), input after.
    c.append(Case("unsqueeze_attr", 7, {"x": x34}, [node("Unsqueeze", ["x"], axes=[0, 3])], ["y"]))
    c.append(Case("unsqueeze_attr_negative", 11, {"x": x34},
                  [node("Unsqueeze", ["x"], axes=[-1])], ["y"]))
    c.append(Case("unsqueeze_input", 13, {"x": x34}, [node("Unsqueeze", ["x", "axes"])], ["y"],
                  {"axes": np.array([1, -1], np.int64)}))

    # Gemm: C required before 11 (and broadcast), optional after.
    a, b = rand(3, 5), rand(4, 5)
    for opset in (7, 9, 11, 13):
        c.append(Case("gemm_transb_bias", opset, {"a": a},
                      [node("Gemm", ["a", "b", "c"], ["y"], transB=1, alpha=0.5, beta=2.0)], ["y"],
                      {"b": b, "c": rand(4)}))
    c.append(Case("gemm_transa_scalar_c", 7, {"a": rand(5, 3)},
                  [node("Gemm", ["a", "b", "c"], ["y"], transA=1)], ["y"],
                  {"b": rand(5, 4), "c": np.array([0.25], np.float32)}))
    c.append(Case("gemm_no_c", 11, {"a": a, "b": rand(5, 4)}, [node("Gemm", ["a", "b"])], ["y"]))

    # MatMul with batch broadcasting; Flatten (negative axis from 11); Concat (negative
    # axis from 11); Transpose; Gather (negative indices from 11).
    for opset in (7, 9, 13):
        c.append(Case("matmul_broadcast", opset, {"a": rand(2, 1, 3, 4), "b": rand(3, 4, 5)},
                      [node("MatMul", ["a", "b"])], ["y"]))
    for opset, axis in ((7, 0), (9, 2), (11, -1), (13, -3), (21, 1)):
        c.append(Case(f"flatten_axis_{axis}".replace("-", "m"), opset, {"x": img},
                      [node("Flatten", ["x"], axis=axis)], ["y"]))
    for opset, axis in ((7, 1), (11, -1), (13, 0)):
        c.append(Case(f"concat_axis_{axis}".replace("-", "m"), opset,
                      {"a": rand(2, 3, 2), "b": rand(2, 3, 2)}, [node("Concat", ["a", "b", "k"],
                                                                      axis=axis)], ["y"],
                      {"k": rand(2, 3, 2)}))
    for opset in (7, 13, 21):
        c.append(Case("transpose_perm", opset, {"x": img},
                      [node("Transpose", ["x"], perm=[0, 2, 3, 1])], ["y"]))
        c.append(Case("transpose_default", opset, {"x": x234}, [node("Transpose", ["x"])], ["y"]))
    c.append(Case("gather", 7, {"x": x45}, [node("Gather", ["x", "i"], axis=1)], ["y"],
                  {"i": np.array([[0, 4], [2, 2]], np.int64)}))
    c.append(Case("gather_negative_indices", 13, {"x": x45},
                  [node("Gather", ["x", "i"], axis=-1)], ["y"], {"i": np.array([-1, 0], np.int64)}))

    # Shape (start/end from 15), feeding a Reshape the way exporters do.
    for opset in (7, 13, 15, 19, 21):
        c.append(Case("shape_reshape", opset, {"x": x234, "z": rand(24)},
                      [node("Shape", ["x"], ["s"]), node("Reshape", ["z", "s"])], ["y"]))
    c.append(Case("shape_start_end", 15, {"x": img}, [node("Shape", ["x"], start=1, end=-1)],
                  ["y"]))

    # Pooling: ceil_mode (10), dilations (MaxPool 10+, AveragePool 19+), auto_pad,
    # count_include_pad.
    pool_x = rand(1, 2, 7, 7)
    for opset in (7, 8, 10, 11, 12, 22):
        c.append(Case("maxpool_pads_strides", opset, {"x": pool_x},
                      [node("MaxPool", ["x"], kernel_shape=[3, 3], strides=[2, 2],
                            pads=[1, 1, 1, 1])], ["y"]))
        c.append(Case("averagepool_count_include_pad", opset, {"x": pool_x},
                      [node("AveragePool", ["x"], kernel_shape=[3, 2], pads=[1, 0, 1, 1],
                            count_include_pad=1)], ["y"]))
        c.append(Case("averagepool_same_upper", opset, {"x": pool_x},
                      [node("AveragePool", ["x"], kernel_shape=[2, 2], strides=[2, 2],
                            auto_pad="SAME_UPPER")], ["y"]))
    for opset in (10, 12, 22):
        c.append(Case("maxpool_ceil_dilations", opset, {"x": pool_x},
                      [node("MaxPool", ["x"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1,
                            dilations=[2, 1])], ["y"]))
        c.append(Case("averagepool_ceil", opset, {"x": pool_x},
                      [node("AveragePool", ["x"], kernel_shape=[3, 3], strides=[2, 2],
                            ceil_mode=1)], ["y"]))
    c.append(Case("averagepool_dilations", 19, {"x": pool_x},
                  [node("AveragePool", ["x"], kernel_shape=[2, 2], dilations=[2, 2])], ["y"]))
    for opset in (7, 22):
        c.append(Case("globalaveragepool", opset, {"x": pool_x},
                      [node("GlobalAveragePool", ["x"])], ["y"]))

    # Conv (weights are initializers: IR 3 lists them as inputs too), element-wise ops.
    w, wb = rand(4, 2, 3, 3), rand(4)
    for opset in (7, 11, 22):
        c.append(Case("conv_bias_pads", opset, {"x": img}, [node("Conv", ["x", "w", "b"],
                                                                 pads=[1, 1, 1, 1])], ["y"],
                      {"w": w, "b": wb}))
        c.append(Case("conv_group_same_lower", opset, {"x": rand(1, 4, 5, 5)},
                      [node("Conv", ["x", "w"], group=2, strides=[2, 2], auto_pad="SAME_LOWER")],
                      ["y"], {"w": rand(6, 2, 3, 3)}))
    for op in ("Add", "Sub", "Mul", "Div"):
        for opset in (7, 13, 14):
            c.append(Case(f"{op.lower()}_broadcast", opset, {"a": x234, "b": rand(3, 1, lo=0.5)},
                          [node(op, ["a", "b"])], ["y"]))
    for op in ("Relu", "Sigmoid", "Identity"):
        for opset in (7, 13, 14, 21, 25):
            if op == "Sigmoid" and opset in (14, 21, 25):
                continue  # Sigmoid has versions 6 and 13 only
            c.append(Case(op.lower(), opset, {"x": x234}, [node(op, ["x"])], ["y"]))

    # Quantize/DequantizeLinear: per tensor (10), per axis (13), saturate (19), int8/uint8.
    qx = rand(2, 3, 4, lo=-3, hi=3)
    for opset in (10, 13, 19, 21):
        for zp in (np.array(3, np.uint8), np.array(-2, np.int8)):
            kind = "uint8" if zp.dtype == np.uint8 else "int8"
            c.append(Case(f"quantizelinear_{kind}", opset, {"x": qx},
                          [node("QuantizeLinear", ["x", "s", "zp"])], ["y"],
                          {"s": np.array(0.02, np.float32), "zp": zp}))
            c.append(Case(f"dequantizelinear_{kind}", opset,
                          {"q": rng.integers(-100, 100, (2, 3, 4)).astype(zp.dtype)},
                          [node("DequantizeLinear", ["q", "s", "zp"])], ["y"],
                          {"s": np.array(0.05, np.float32), "zp": zp}))
    for opset in (13, 21):
        c.append(Case("quantizelinear_per_axis", opset, {"x": qx},
                      [node("QuantizeLinear", ["x", "s", "zp"], axis=1)], ["y"],
                      {"s": np.array([0.01, 0.02, 0.04], np.float32),
                       "zp": np.array([0, 5, -5], np.int8)}))
        c.append(Case("dequantizelinear_per_axis", opset,
                      {"q": rng.integers(-128, 127, (2, 3, 4)).astype(np.int8)},
                      [node("DequantizeLinear", ["q", "s", "zp"], axis=-2)], ["y"],
                      {"s": np.array([0.01, 0.02, 0.04], np.float32),
                       "zp": np.array([0, 5, -5], np.int8)}))
    c.append(Case("quantizelinear_no_zero_point", 13, {"x": qx},
                  [node("QuantizeLinear", ["x", "s"])], ["y"], {"s": np.array(0.05, np.float32)}))

    # Edge cases of the same ops: 8-bit and integer types, 1-D/3-D windows, negative pads,
    # scalars, two-output MaxPool.
    i8 = rng.integers(-100, 100, (2, 3, 4)).astype(np.int8)
    u8 = rng.integers(0, 255, (1, 2, 5, 5)).astype(np.uint8)
    c.append(Case("clip_int8", 13, {"x": i8}, [node("Clip", ["x", "lo", "hi"])], ["y"],
                  {"lo": np.array(-20, np.int8), "hi": np.array(30, np.int8)}))
    c.append(Case("relu_int8", 14, {"x": i8}, [node("Relu", ["x"])], ["y"]))
    c.append(Case("maxpool_uint8", 12, {"x": u8},
                  [node("MaxPool", ["x"], kernel_shape=[2, 2], pads=[0, 0, 1, 1])], ["y"]))
    c.append(Case("maxpool_int8", 12, {"x": rng.integers(-128, 127, (1, 2, 5, 5)).astype(np.int8)},
                  [node("MaxPool", ["x"], kernel_shape=[3, 3], strides=[2, 2])], ["y"]))
    c.append(Case("maxpool_indices", 12, {"x": pool_x},
                  [node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2], strides=[2, 2])],
                  ["y", "i"]))
    for dtype in (np.int32, np.int64):
        c.append(Case(f"add_{np.dtype(dtype).name}", 14,
                      {"a": rng.integers(-1000, 1000, (2, 3)).astype(dtype),
                       "b": rng.integers(-1000, 1000, (3,)).astype(dtype)},
                      [node("Add", ["a", "b"])], ["y"]))
        c.append(Case(f"mul_{np.dtype(dtype).name}", 14,
                      {"a": rng.integers(-1000, 1000, (2, 3)).astype(dtype),
                       "b": rng.integers(-1000, 1000, (2, 1)).astype(dtype)},
                      [node("Mul", ["a", "b"])], ["y"]))
    c.append(Case("concat_int64", 13, {"a": np.arange(6, dtype=np.int64).reshape(2, 3)},
                  [node("Concat", ["a", "k"], axis=0)], ["y"],
                  {"k": np.arange(3, dtype=np.int64).reshape(1, 3)}))
    c.append(Case("transpose_int8", 13, {"x": i8}, [node("Transpose", ["x"], perm=[2, 0, 1])],
                  ["y"]))
    c.append(Case("softmax_axis_0_rank2", 11, {"x": x34}, [node("Softmax", ["x"], axis=0)],
                  ["y"]))
    c.append(Case("softmax_large_values", 13, {"x": x34 * 1000}, [node("Softmax", ["x"])], ["y"]))
    c.append(Case("gemm_c_column", 7, {"a": a}, [node("Gemm", ["a", "b", "c"], transB=1)], ["y"],
                  {"b": b, "c": rand(3, 1)}))
    c.append(Case("pad_negative", 13, {"x": x2d}, [node("Pad", ["x", "pads"])], ["y"],
                  {"pads": np.array([-1, 1, 0, -2], np.int64)}))
    c.append(Case("slice_reverse_all", 13, {"x": x45}, [node("Slice", ["x", "s", "e", "a", "st"])],
                  ["y"], {"s": np.array([-1], np.int64),
                          "e": np.array([np.iinfo(np.int64).min], np.int64),
                          "a": np.array([1], np.int64), "st": np.array([-1], np.int64)}))
    c.append(Case("gather_scalar_index", 13, {"x": x45}, [node("Gather", ["x", "i"], axis=0)],
                  ["y"], {"i": np.array(2, np.int64)}))
    c.append(Case("unsqueeze_scalar", 13, {"x": np.array(1.5, np.float32)},
                  [node("Unsqueeze", ["x", "axes"])], ["y"], {"axes": np.array([0], np.int64)}))
    x1d = rand(2, 3, 9)
    c.append(Case("conv_1d_dilations", 13, {"x": x1d},
                  [node("Conv", ["x", "w"], dilations=[2], pads=[1, 2])], ["y"],
                  {"w": rand(2, 3, 3)}))
    c.append(Case("conv_3d", 13, {"x": rand(1, 2, 4, 5, 3)},
                  [node("Conv", ["x", "w", "b"], strides=[1, 2, 1], pads=[1, 0, 1, 1, 0, 1])],
                  ["y"], {"w": rand(3, 2, 3, 2, 3), "b": rand(3)}))
    c.append(Case("averagepool_1d", 19, {"x": x1d},
                  [node("AveragePool", ["x"], kernel_shape=[3], strides=[2], pads=[1, 1])], ["y"]))
    c.append(Case("maxpool_3d", 12, {"x": rand(1, 2, 4, 5, 3)},
                  [node("MaxPool", ["x"], kernel_shape=[2, 2, 2], pads=[0, 1, 0, 1, 0, 1])],
                  ["y"]))
    # Windows far larger than the input (padding on all sides): the kernels skip the padding.
    small = rand(1, 2, 5, 4)
    c.append(Case("maxpool_kernel_larger_than_input", 22, {"x": small},
                  [node("MaxPool", ["x"], kernel_shape=[9, 31], strides=[1, 3],
                        auto_pad="SAME_UPPER")], ["y"]))
    c.append(Case("averagepool_kernel_larger_than_input", 22, {"x": small},
                  [node("AveragePool", ["x"], kernel_shape=[7, 9], pads=[3, 4, 3, 4],
                        count_include_pad=1)], ["y"]))
    c.append(Case("averagepool_big_kernel_dilated", 22, {"x": small},
                  [node("AveragePool", ["x"], kernel_shape=[3, 7], dilations=[2, 2],
                        pads=[2, 6, 2, 6])], ["y"]))
    c.append(Case("maxpool_big_kernel_dilated_1d", 22, {"x": rand(1, 3, 6)},
                  [node("MaxPool", ["x"], kernel_shape=[12], dilations=[2], pads=[11, 11])],
                  ["y"]))
    c.append(Case("globalaveragepool_1d", 13, {"x": x1d}, [node("GlobalAveragePool", ["x"])],
                  ["y"]))
    c.append(Case("flatten_rank1", 13, {"x": rand(5)}, [node("Flatten", ["x"], axis=0)], ["y"]))

    # Symbolic dims: one model, several data sets of different batch (and image) sizes.
    cnn = [node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]), node("Relu", ["c"], ["r"]),
           node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
           node("GlobalAveragePool", ["p"], ["g"]), node("Flatten", ["g"], ["f"]),
           node("Gemm", ["f", "fw", "fb"], ["z"], transB=1), node("Softmax", ["z"], ["y"])]
    cnn_weights = {"w": rand(4, 2, 3, 3), "b": rand(4), "fw": rand(5, 4), "fb": rand(5)}
    for opset in (9, 13):
        c.append(Case("cnn_dynamic_batch", opset, {"x": rand(1, 2, 8, 8)}, cnn, ["y"], cnn_weights,
                      dims={"x": ["N", 2, 8, 8]}, more=[{"x": rand(3, 2, 8, 8)}]))
    c.append(Case("cnn_dynamic_image_size", 18, {"x": rand(1, 2, 8, 8)}, cnn, ["y"], cnn_weights,
                  dims={"x": ["N", 2, "H", "W"]},
                  more=[{"x": rand(2, 2, 6, 10)}, {"x": rand(1, 2, 13, 7)}]))
    # PyTorch's flatten: x.view(x.size(0), -1) becomes Shape->Gather->Unsqueeze->Concat->Reshape.
    flat = [node("Shape", ["x"], ["s"]), node("Gather", ["s", "zero"], ["n"], axis=0),
            node("Unsqueeze", ["n", "axes"], ["n1"]), node("Concat", ["n1", "minus1"], ["t"], axis=0),
            node("Reshape", ["x", "t"], ["v"]), node("MatMul", ["v", "m"], ["y"])]
    c.append(Case("pytorch_flatten_dynamic_batch", 13, {"x": rand(2, 4, 3, 3)}, flat, ["y"],
                  {"zero": np.array(0, np.int64), "axes": np.array([0], np.int64),
                   "minus1": np.array([-1], np.int64), "m": rand(36, 3)},
                  dims={"x": ["batch", 4, 3, 3]}, more=[{"x": rand(5, 4, 3, 3)}]))
    return c


def write_cases(all_cases, out):
    """Writes each case's model and data sets with the oracle's outputs (shared with
    make_zoo_cases.py)."""
    os.makedirs(out, exist_ok=True)
    oracles = {}
    for case in all_cases:
        model = case.model()
        folder = os.path.join(out, case.name)
        os.makedirs(folder, exist_ok=True)
        onnx.save(model, os.path.join(folder, "model.onnx"))
        for index, inputs in enumerate(case.sets):
            results, oracle = expected(model, case, inputs)
            oracles[oracle] = oracles.get(oracle, 0) + 1
            data = os.path.join(folder, f"test_data_set_{index}")
            os.makedirs(data, exist_ok=True)
            for k, (name, array) in enumerate(inputs.items()):
                onnx.save_tensor(numpy_helper.from_array(np.asarray(array), name),
                                 os.path.join(data, f"input_{k}.pb"))
            for k, (name, array) in enumerate(zip(case.outputs, results)):
                onnx.save_tensor(numpy_helper.from_array(np.asarray(array), name),
                                 os.path.join(data, f"output_{k}.pb"))
    print(f"{len(all_cases)} cases written to {out} (expected outputs of the data sets: " +
          ", ".join(f"{n} {k}" for k, n in sorted(oracles.items())) + ")")
    return 0


def main(out):
    return write_cases(cases(), out)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
