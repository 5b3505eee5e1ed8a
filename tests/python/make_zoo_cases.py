"""Writes ONNX backend-test-style cases (OUT/<case>/model.onnx + test_data_set_0/*.pb) for the
ops the classic ONNX model-zoo CNNs (AlexNet, GoogLeNet/Inception, DenseNet, SqueezeNet, VGG,
ZFNet; opset 9 era) need beyond the ResNet set, in the patterns those graphs use: LRN after a
convolution, Dropout before Gemm, Sum and Concat of branches, ConstantOfShape making a shape or
a weight; plus one case per op form, at opset 9 and at the opsets where the op changed.

The expected outputs come from ONNX Runtime (the same Case machinery as make_opset_cases.py).
Used by the [conformance][zoo] test; by hand: make_zoo_cases.py OUT && minfer conformance OUT.
Exit status: 0 = written, 3 = numpy/onnx/onnxruntime missing."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_opset_cases import Case, node, rand, write_cases  # noqa: E402  (exits 3 if missing)

import numpy as np  # noqa: E402
from onnx import numpy_helper  # noqa: E402

rng = np.random.default_rng(11)


def i64(*values):
    return np.array(values, np.int64)


def value(array):
    """A tensor attribute (ConstantOfShape's value)."""
    return numpy_helper.from_array(np.asarray(array))


def cases():
    c = []
    img = rand(1, 3, 12, 12)
    w1, b1 = rand(8, 3, 3, 3, lo=-0.5, hi=0.5), rand(8)

    # AlexNet/GoogLeNet/ZFNet: Conv -> Relu -> LRN -> MaxPool.
    for opset, size in ((9, 5), (13, 3)):
        c.append(Case(f"zoo_conv_lrn_size{size}", opset, {"x": img},
                      [node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                       node("Relu", ["c"], ["r"]),
                       node("LRN", ["r"], ["n"], size=size, alpha=1e-4, beta=0.75, bias=1.0),
                       node("MaxPool", ["n"], ["y"], kernel_shape=[3, 3], strides=[2, 2])],
                      ["y"], {"w": w1, "b": b1}))
    # LRN on its own: a window wider than the channels, a strong alpha (so that the
    # normalization matters), a batch of 3. (ONNX Runtime refuses even sizes and non-4-D inputs.)
    c.append(Case("lrn_wide_window", 9, {"x": rand(2, 6, 4, 5)},
                  [node("LRN", ["x"], size=7, alpha=0.5, beta=0.6, bias=2.0)], ["y"]))
    c.append(Case("lrn_batch", 13, {"x": rand(3, 5, 2, 7)},
                  [node("LRN", ["x"], size=3, alpha=0.2)], ["y"]))

    # AlexNet/VGG classifier: Flatten -> Gemm -> Relu -> Dropout -> Gemm.
    feat = rand(2, 4, 3, 3)
    fc = {"w1": rand(16, 36, lo=-0.3, hi=0.3), "b1": rand(16), "w2": rand(5, 16), "b2": rand(5)}
    for opset in (7, 9, 10, 12, 13, 22):
        c.append(Case("zoo_dropout_before_gemm", opset, {"x": feat},
                      [node("Flatten", ["x"], ["f"]),
                       node("Gemm", ["f", "w1", "b1"], ["g"], transB=1),
                       node("Relu", ["g"], ["r"]),
                       node("Dropout", ["r"], ["d"], **({"ratio": 0.5} if opset < 12 else {})),
                       node("Gemm", ["d", "w2", "b2"], ["y"], transB=1)], ["y"], fc))
    # The mask output: all true from opset 12 (with the ratio and training_mode inputs); before,
    # ONNX Runtime writes zeros where the ONNX reference writes ones, so minfer refuses a mask
    # that is read and drops one that is not.
    x34 = rand(3, 4)
    for opset in (9, 10):
        c.append(Case("dropout_unread_mask", opset, {"x": x34},
                      [node("Dropout", ["x"], ["d", "m"], ratio=0.2), node("Relu", ["d"], ["y"])],
                      ["y"]))
    for opset in (12, 13):
        c.append(Case("dropout_ratio_training_mode", opset, {"x": x34},
                      [node("Dropout", ["x", "r", "t"], ["y", "m"])], ["y", "m"],
                      {"r": np.array(0.3, np.float32), "t": np.array(False)}))
    c.append(Case("dropout_ratio_only", 13, {"x": x34}, [node("Dropout", ["x", "r"])], ["y"],
                  {"r": np.array(0.1, np.float32)}))

    # DenseNet/Inception-style branches: three convolutions of one input, summed; then the
    # same branches concatenated (GoogLeNet's inception module: 1x1, 3x3, pool -> 1x1).
    br = {"wa": rand(4, 3, 1, 1), "wb": rand(4, 3, 3, 3, lo=-0.4, hi=0.4), "wc": rand(4, 3, 1, 1)}
    branches = [node("Conv", ["x", "wa"], ["a"]),
                node("Conv", ["x", "wb"], ["b"], pads=[1, 1, 1, 1]),
                node("MaxPool", ["x"], ["p"], kernel_shape=[3, 3], strides=[1, 1],
                     pads=[1, 1, 1, 1]),
                node("Conv", ["p", "wc"], ["c"])]
    for opset in (9, 13):
        c.append(Case("zoo_sum_of_branches", opset, {"x": img},
                      branches + [node("Sum", ["a", "b", "c"], ["s"]), node("Relu", ["s"], ["y"])],
                      ["y"], br))
        c.append(Case("zoo_concat_of_branches", opset, {"x": img},
                      branches + [node("Concat", ["a", "b", "c"], ["y"], axis=1)], ["y"], br))
    c.append(Case("zoo_mean_of_branches", 13, {"x": img},
                  branches + [node("Mean", ["a", "b", "c"], ["y"])], ["y"], br))
    # Sum/Mean forms: one input, broadcasting (8+), the older opset 7.
    c.append(Case("sum_one_input", 9, {"a": x34}, [node("Sum", ["a"])], ["y"]))
    for op in ("Sum", "Mean"):
        for opset in (8, 13):
            c.append(Case(f"{op.lower()}_broadcast", opset,
                          {"a": rand(2, 3, 4), "b": rand(3, 1), "c": rand(4)},
                          [node(op, ["a", "b", "c"])], ["y"]))
        c.append(Case(f"{op.lower()}_same_shape", 7, {"a": x34, "b": rand(3, 4)},
                      [node(op, ["a", "b"])], ["y"]))

    # ConstantOfShape: an all-ones tensor of x's shape as a weight (x * ones + bias), a constant
    # shape feeding Reshape, an int64 fill, a scalar, the default (float zeros).
    c.append(Case("zoo_constant_of_shape_weight", 9, {"x": img},
                  [node("Shape", ["x"], ["s"]),
                   node("ConstantOfShape", ["s"], ["ones"],
                        value=value(np.array([1.5], np.float32))),
                   node("Mul", ["x", "ones"], ["m"]), node("Add", ["m", "x"], ["y"])], ["y"]))
    c.append(Case("zoo_constant_of_shape_reshape", 9, {"x": rand(2, 3, 4)},
                  [node("ConstantOfShape", ["k"], ["minus1"], value=value(np.array([-1], np.int64))),
                   node("Concat", ["two", "minus1"], ["shape"], axis=0),
                   node("Reshape", ["x", "shape"], ["y"])], ["y"],
                  {"k": i64(1), "two": i64(2)}))
    c.append(Case("constant_of_shape_default", 9, {"s": i64(2, 3)},
                  [node("ConstantOfShape", ["s"])], ["y"]))
    c.append(Case("constant_of_shape_int32", 20, {"s": i64(4)},
                  [node("ConstantOfShape", ["s"], value=value(np.array([7], np.int32)))], ["y"]))
    c.append(Case("constant_of_shape_scalar", 13, {"s": np.zeros((0,), np.int64)},
                  [node("ConstantOfShape", ["s"], value=value(np.array([2.5], np.float32)))], ["y"]))

    # Range: integer and float, negative step, as an index for Gather.
    c.append(Case("range_int64", 11, {"a": np.array(10, np.int64), "b": np.array(-2, np.int64),
                                      "d": np.array(-3, np.int64)},
                  [node("Range", ["a", "b", "d"])], ["y"]))
    # (A float Range of run-time inputs has a data-dependent length: minfer refuses it.)
    c.append(Case("range_float", 11, {"x": rand(4)},
                  [node("Range", ["a", "b", "d"], ["r"]), node("Add", ["x", "r"], ["y"])], ["y"],
                  {"a": np.array(0.5, np.float32), "b": np.array(3.2, np.float32),
                   "d": np.array(0.7, np.float32)}))
    c.append(Case("range_gather", 13, {"x": rand(6, 3)},
                  [node("Range", ["a", "b", "d"], ["i"]), node("Gather", ["x", "i"], axis=0)],
                  ["y"], {"a": np.array(1, np.int64), "b": np.array(6, np.int64),
                          "d": np.array(2, np.int64)}))

    # Float math: Sqrt, Tanh, Erf (6/13), HardSigmoid (6/22), HardSwish (14/22), Gelu (20), Pow
    # (7: same types; 12+: an integer exponent; 13/15 as is).
    x = rand(2, 3, 4, lo=-4, hi=4)
    c.append(Case("sqrt", 9, {"x": np.abs(x) + 0.01}, [node("Sqrt", ["x"])], ["y"]))
    c.append(Case("sqrt", 13, {"x": np.abs(x)}, [node("Sqrt", ["x"])], ["y"]))
    for opset in (9, 13):
        c.append(Case("tanh", opset, {"x": x}, [node("Tanh", ["x"])], ["y"]))
        c.append(Case("erf", opset, {"x": x}, [node("Erf", ["x"])], ["y"]))
    for opset in (9, 22):
        c.append(Case("hardsigmoid_default", opset, {"x": x}, [node("HardSigmoid", ["x"])], ["y"]))
        c.append(Case("hardsigmoid_alpha_beta", opset, {"x": x},
                      [node("HardSigmoid", ["x"], alpha=0.3, beta=0.4)], ["y"]))
    for opset in (14, 22):
        c.append(Case("hardswish", opset, {"x": x}, [node("HardSwish", ["x"])], ["y"]))
    c.append(Case("gelu", 20, {"x": x}, [node("Gelu", ["x"])], ["y"]))
    c.append(Case("gelu_tanh", 20, {"x": x}, [node("Gelu", ["x"], approximate="tanh")], ["y"]))
    base = rand(3, 4, lo=0.1, hi=3)
    c.append(Case("pow_broadcast", 7, {"a": base, "b": rand(4, lo=-2, hi=2)},
                  [node("Pow", ["a", "b"])], ["y"]))
    for opset in (12, 13, 15):
        c.append(Case("pow_int_exponent", opset, {"a": rand(3, 4)},
                      [node("Pow", ["a", "e"])], ["y"], {"e": np.array(3, np.int64)}))
    c.append(Case("pow_square", 13, {"a": rand(3, 4)}, [node("Pow", ["a", "e"])], ["y"],
                  {"e": np.array(2.0, np.float32)}))
    c.append(Case("pow_int64", 15, {"a": rng.integers(-5, 5, (2, 3)).astype(np.int64),
                                    "b": rng.integers(0, 4, (3,)).astype(np.int64)},
                  [node("Pow", ["a", "b"])], ["y"]))

    # Squeeze/Split: axes and split as attributes before 13, inputs after; Split's
    # num_outputs (18).
    sq = rand(1, 3, 1, 4)
    c.append(Case("squeeze_attr", 9, {"x": sq}, [node("Squeeze", ["x"], axes=[0, 2])], ["y"]))
    c.append(Case("squeeze_attr_negative", 11, {"x": sq}, [node("Squeeze", ["x"], axes=[-2])],
                  ["y"]))
    c.append(Case("squeeze_all", 9, {"x": sq}, [node("Squeeze", ["x"])], ["y"]))
    for opset in (13, 21):
        c.append(Case("squeeze_input", opset, {"x": sq}, [node("Squeeze", ["x", "axes"])], ["y"],
                      {"axes": i64(0, -2)}))
        c.append(Case("squeeze_no_axes", opset, {"x": sq}, [node("Squeeze", ["x"])], ["y"]))
    sp = rand(2, 6, 3)
    c.append(Case("split_equal", 9, {"x": sp},
                  [node("Split", ["x"], ["a", "b", "c"], axis=1)], ["a", "b", "c"]))
    c.append(Case("split_attr", 11, {"x": sp},
                  [node("Split", ["x"], ["a", "b"], axis=-2, split=[2, 4])], ["a", "b"]))
    for opset in (13, 18):
        c.append(Case("split_input", opset, {"x": sp},
                      [node("Split", ["x", "s"], ["a", "b", "c"], axis=1)], ["a", "b", "c"],
                      {"s": i64(1, 0, 5)}))
    c.append(Case("split_equal_default_axis", 13, {"x": rand(4, 3)},
                  [node("Split", ["x"], ["a", "b"])], ["a", "b"]))
    c.append(Case("split_num_outputs_uneven", 18, {"x": rand(2, 7)},
                  [node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3)],
                  ["a", "b", "c"]))
    # SqueezeNet/Inception-style: Split then per-branch convolution, then Concat.
    c.append(Case("zoo_split_conv_concat", 13, {"x": rand(1, 4, 6, 6)},
                  [node("Split", ["x"], ["p", "q"], axis=1),
                   node("Conv", ["p", "wp"], ["cp"], pads=[1, 1, 1, 1]),
                   node("Conv", ["q", "wq"], ["cq"]),
                   node("Concat", ["cp", "cq"], ["y"], axis=1)], ["y"],
                  {"wp": rand(3, 2, 3, 3, lo=-0.5, hi=0.5), "wq": rand(2, 2, 1, 1)}))

    # Expand (8, 13) and Tile (6, 13): broadcasting up, a 1 in Expand's shape keeping the dim,
    # a shape from Shape (the mask/position patterns of transformer exports).
    for opset in (8, 13):
        c.append(Case("expand", opset, {"x": rand(3, 1)}, [node("Expand", ["x", "s"])], ["y"],
                      {"s": i64(2, 1, 4)}))
        c.append(Case("tile", opset if opset > 8 else 7, {"x": rand(2, 3)},
                      [node("Tile", ["x", "r"])], ["y"], {"r": i64(2, 3)}))
    c.append(Case("expand_shape_of", 13, {"x": rand(4), "z": rand(2, 3, 4)},
                  [node("Shape", ["z"], ["s"]), node("Expand", ["x", "s"], ["e"]),
                   node("Add", ["e", "z"], ["y"])], ["y"]))
    c.append(Case("tile_int64", 13, {"x": rng.integers(0, 9, (2, 1, 2)).astype(np.int64)},
                  [node("Tile", ["x", "r"])], ["y"], {"r": i64(1, 3, 2)}))
    return c


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(write_cases(cases(), sys.argv[1]))
