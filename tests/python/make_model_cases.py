"""Writes ONNX backend-test-style cases (OUT/<case>/model.onnx + test_data_set_0/*.pb) for the
ops the torchvision sweep's models need beyond the model-zoo set: Resize (segmentation heads:
nearest, linear, cubic and the coordinate modes, scales or sizes, opsets 11, 13, 18, 19),
LayerNormalization (17: ViT, Swin, ConvNeXt, BERT at opset 17) and the patterns those
exports use (sizes from Shape, LayerNorm over the last dims, its decomposed form at opset 13,
Gelu as Erf at opset 13).

The expected outputs come from ONNX Runtime (the Case machinery of make_opset_cases.py).
Used by the [conformance][models] test; by hand: make_model_cases.py OUT && minfer conformance OUT.
Exit status: 0 = written, 3 = numpy/onnx/onnxruntime missing."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_opset_cases import Case, node, rand, write_cases  # noqa: E402  (exits 3 if missing)

import numpy as np  # noqa: E402

rng = np.random.default_rng(23)


def i64(*values):
    return np.array(values, np.int64)


def f32(*values):
    return np.array(values, np.float32)


EMPTY = np.zeros((0,), np.float32)


def resize_cases():
    c = []
    img = rand(1, 2, 4, 5)
    # Every mode and coordinate transformation, upscaling by scales (2 x 1.5) at opset 13.
    coords = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"]
    for mode in ("nearest", "linear", "cubic"):
        for coord in coords:
            c.append(Case(f"resize_{mode}_{coord}_up", 13, {"x": img},
                          [node("Resize", ["x", "", "s"], mode=mode,
                                coordinate_transformation_mode=coord)], ["y"],
                          {"s": f32(1, 1, 2, 1.5)}))
    # tf_half_pixel_for_nn: nearest only, deprecated from opset 13.
    c.append(Case("resize_nearest_tf_half_pixel_for_nn", 11, {"x": img},
                  [node("Resize", ["x", "roi", "s"], mode="nearest",
                        coordinate_transformation_mode="tf_half_pixel_for_nn")], ["y"],
                  {"roi": EMPTY, "s": f32(1, 1, 2, 1.5)}))
    # Downscaling (3/4 and 1/2), where the modes differ most; by sizes.
    big = rand(1, 3, 8, 6)
    for mode in ("nearest", "linear", "cubic"):
        for coord in coords:
            c.append(Case(f"resize_{mode}_{coord}_down_sizes", 13, {"x": big},
                          [node("Resize", ["x", "", "", "z"], mode=mode,
                                coordinate_transformation_mode=coord)], ["y"],
                          {"z": i64(1, 3, 6, 3)}))
    # Nearest rounding modes, with scales that put source coordinates on .5.
    for nm in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"):
        c.append(Case(f"resize_nearest_mode_{nm}", 13, {"x": rand(1, 1, 4, 4)},
                      [node("Resize", ["x", "", "s"], mode="nearest", nearest_mode=nm,
                            coordinate_transformation_mode="asymmetric")], ["y"],
                      {"s": f32(1, 1, 0.5, 3)}))
        c.append(Case(f"resize_nearest_half_pixel_{nm}", 13, {"x": rand(1, 1, 3, 5)},
                      [node("Resize", ["x", "", "", "z"], mode="nearest", nearest_mode=nm)],
                      ["y"], {"z": i64(1, 1, 5, 2)}))
    # Cubic's other coefficient and exclude_outside.
    c.append(Case("resize_cubic_a_exclude_outside", 13, {"x": img},
                  [node("Resize", ["x", "", "s"], mode="cubic", cubic_coeff_a=-0.5,
                        exclude_outside=1)], ["y"], {"s": f32(1, 1, 1.75, 0.6)}))
    # Opset 11: roi is required (an empty tensor), scales empty when sizes are given.
    c.append(Case("resize_linear_empty_roi_scales", 11, {"x": img},
                  [node("Resize", ["x", "roi", "s", "z"], mode="linear",
                        coordinate_transformation_mode="align_corners")], ["y"],
                  {"roi": EMPTY, "s": EMPTY, "z": i64(1, 2, 7, 9)}))
    c.append(Case("resize_nearest_scales", 11, {"x": img},
                  [node("Resize", ["x", "roi", "s"], mode="nearest")], ["y"],
                  {"roi": EMPTY, "s": f32(1, 1, 2, 2)}))
    # Torch's F.interpolate(size=...) pattern: sizes from Shape(x)[:2] and a constant tail.
    c.append(Case("resize_sizes_from_shape", 13, {"x": img},
                  [node("Shape", ["x"], ["sh"]),
                   node("Slice", ["sh", "b", "e"], ["nc"]),
                   node("Concat", ["nc", "hw"], ["z"], axis=0),
                   node("Resize", ["x", "", "", "z"], ["y"], mode="linear",
                        coordinate_transformation_mode="pytorch_half_pixel")], ["y"],
                  {"b": i64(0), "e": i64(2), "hw": i64(16, 16)}))
    # Opset 18: axes; 19: half_pixel_symmetric.
    c.append(Case("resize_axes", 18, {"x": img},
                  [node("Resize", ["x", "", "s"], mode="linear", axes=[3, 2])], ["y"],
                  {"s": f32(2, 0.5)}))
    c.append(Case("resize_half_pixel_symmetric", 19, {"x": img},
                  [node("Resize", ["x", "", "", "z"], mode="linear",
                        coordinate_transformation_mode="half_pixel_symmetric")], ["y"],
                  {"z": i64(1, 2, 6, 3)}))
    # 3-D and 5-D inputs; an integer-sized 1-D resize along the last dim.
    c.append(Case("resize_linear_3d", 13, {"x": rand(2, 3, 5)},
                  [node("Resize", ["x", "", "s"], mode="linear")], ["y"], {"s": f32(1, 1, 2.2)}))
    c.append(Case("resize_nearest_5d", 13, {"x": rand(1, 2, 2, 3, 2)},
                  [node("Resize", ["x", "", "s"], mode="nearest")], ["y"],
                  {"s": f32(1, 1, 2, 1, 3)}))
    return c


def layer_norm_cases():
    c = []
    x = rand(2, 5, 8)
    for axis in (-1, 1, 2):
        norm = x.shape[axis:]
        c.append(Case(f"layer_norm_axis{axis}".replace("-", "m"), 17, {"x": x},
                      [node("LayerNormalization", ["x", "g", "b"], axis=axis, epsilon=1e-6)],
                      ["y"], {"g": rand(*norm), "b": rand(*norm)}))
    c.append(Case("layer_norm_no_bias", 17, {"x": x},
                  [node("LayerNormalization", ["x", "g"])], ["y"], {"g": rand(8)}))
    # Scale broadcast over the normalized dims; Mean and InvStdDev outputs.
    c.append(Case("layer_norm_broadcast_scale_stats", 17, {"x": x},
                  [node("LayerNormalization", ["x", "g", "b"], ["y", "m", "s"], axis=1)],
                  ["y", "m", "s"], {"g": rand(1, 8), "b": rand(8)}))
    # ConvNeXt's channels-last norm: Transpose -> LayerNorm -> Transpose.
    c.append(Case("layer_norm_channels_last", 17, {"x": rand(1, 6, 3, 3)},
                  [node("Transpose", ["x"], ["t"], perm=[0, 2, 3, 1]),
                   node("LayerNormalization", ["t", "g", "b"], ["n"]),
                   node("Transpose", ["n"], ["y"], perm=[0, 3, 1, 2])], ["y"],
                  {"g": rand(6), "b": rand(6)}))
    # The decomposed form (torch's export at opset < 17), which minfer fuses back.
    d = 16
    c.append(Case("layer_norm_decomposed", 13, {"x": rand(2, 7, d, lo=-3, hi=5)},
                  [node("ReduceMean", ["x"], ["mu"], axes=[-1]),
                   node("Sub", ["x", "mu"], ["xc"]),
                   node("Pow", ["xc", "two"], ["sq"]),
                   node("ReduceMean", ["sq"], ["var"], axes=[-1]),
                   node("Add", ["var", "eps"], ["ve"]),
                   node("Sqrt", ["ve"], ["sd"]),
                   node("Div", ["xc", "sd"], ["nx"]),
                   node("Mul", ["nx", "g"], ["sc"]),
                   node("Add", ["sc", "b"], ["y"])], ["y"],
                  {"two": f32(2.0), "eps": f32(1e-5), "g": rand(d), "b": rand(d)}))
    # Gelu as torch exports it below opset 20: x * 0.5 * (1 + erf(x / sqrt(2))).
    c.append(Case("gelu_decomposed", 13, {"x": rand(3, 10, lo=-4, hi=4)},
                  [node("Div", ["x", "r2"], ["xd"]), node("Erf", ["xd"], ["e"]),
                   node("Add", ["e", "one"], ["e1"]), node("Mul", ["x", "e1"], ["m"]),
                   node("Mul", ["m", "half"], ["y"])], ["y"],
                  {"r2": f32(1.4142135381698608), "one": f32(1.0), "half": f32(0.5)}))
    return c


def swin_cases():
    """Mod, Not, ScatterND: the window shift and attention-mask arithmetic of Swin exports."""
    c = []
    a = rng.integers(-9, 9, (3, 4)).astype(np.int64)
    b = np.array([3, -4, 5, -2], np.int64)
    c.append(Case("mod_int64_python_sign", 13, {"a": a, "b": b}, [node("Mod", ["a", "b"])],
                  ["y"]))
    c.append(Case("mod_int32_fmod", 13, {"a": a.astype(np.int32), "b": b.astype(np.int32)},
                  [node("Mod", ["a", "b"], fmod=1)], ["y"]))
    c.append(Case("mod_float_fmod", 10, {"a": rand(3, 4, lo=-5, hi=5), "b": f32(1.5)},
                  [node("Mod", ["a", "b"], fmod=1)], ["y"]))
    # Swin: (H - shift) % window from Shape, a mask != 0 test as Not(Equal).
    c.append(Case("swin_shift_mod_shape", 13, {"x": rand(1, 7, 5, 2)},
                  [node("Shape", ["x"], ["s"]), node("Gather", ["s", "one"], ["h"], axis=0),
                   node("Mod", ["h", "win"], ["m"]), node("Sub", ["h", "m"], ["y"])], ["y"],
                  {"one": np.array(1, np.int64), "win": np.array(4, np.int64)}))
    c.append(Case("not_equal_mask", 13, {"x": rng.integers(0, 3, (2, 5)).astype(np.float32)},
                  [node("Equal", ["x", "z"], ["e"]), node("Not", ["e"], ["n"]),
                   node("Where", ["n", "neg", "z"], ["y"])], ["y"],
                  {"z": f32(0.0), "neg": f32(-100.0)}))
    data = rand(4, 5, 3)
    c.append(Case("scatter_nd_slices", 13, {"data": data},
                  [node("ScatterND", ["data", "i", "u"])], ["y"],
                  {"i": np.array([[2, 1], [0, 4], [-1, 0]], np.int64), "u": rand(3, 3)}))
    c.append(Case("scatter_nd_rows", 11, {"data": data},
                  [node("ScatterND", ["data", "i", "u"])], ["y"],
                  {"i": np.array([[3], [1]], np.int64), "u": rand(2, 5, 3)}))
    c.append(Case("scatter_nd_int64_elements", 13,
                  {"data": rng.integers(0, 9, (3, 4)).astype(np.int64)},
                  [node("ScatterND", ["data", "i", "u"])], ["y"],
                  {"i": np.array([[[0, 0], [2, 3]]], np.int64), "u": np.array([[7, 8]], np.int64)}))
    for red in ("add", "mul"):
        c.append(Case(f"scatter_nd_{red}", 16, {"data": data},
                      [node("ScatterND", ["data", "i", "u"], reduction=red)], ["y"],
                      {"i": np.array([[1, 2], [1, 2], [3, 0]], np.int64), "u": rand(3, 3)}))
    for red in ("max", "min"):
        c.append(Case(f"scatter_nd_{red}", 18, {"data": data},
                      [node("ScatterND", ["data", "i", "u"], reduction=red)], ["y"],
                      {"i": np.array([[0, 1], [2, 2]], np.int64), "u": rand(2, 3)}))
    # Swin's attention dropout: training_mode true with a ratio of 0 keeps every element.
    c.append(Case("dropout_training_ratio_zero", 13, {"x": rand(2, 3, 4)},
                  [node("Softmax", ["x"], ["s"]), node("Dropout", ["s", "r", "t"], ["d", "m"]),
                   node("MatMul", ["d", "w"], ["y"])], ["y"],
                  {"r": np.array(0.0, np.float32), "t": np.array(True), "w": rand(4, 2)}))
    c.append(Case("dropout_training_ratio_zero_mask", 13, {"x": rand(2, 3)},
                  [node("Dropout", ["x", "r", "t"], ["y", "m"])], ["y", "m"],
                  {"r": np.array(0.0, np.float32), "t": np.array(True)}))
    # Slice assignment as torch exports it: ConstantOfShape zeros, then ScatterND of a block.
    c.append(Case("swin_mask_slice_assign", 13, {"x": rand(4, 4)},
                  [node("ConstantOfShape", ["shape"], ["z"]),
                   node("ScatterND", ["z", "i", "u"], ["m"]), node("Add", ["x", "m"], ["y"])],
                  ["y"], {"shape": i64(4, 4), "i": np.array([[[2], [3]]], np.int64),
                          "u": np.full((1, 2, 4), 3.0, np.float32)}))
    return c


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(write_cases(resize_cases() + layer_norm_cases() + swin_cases(), sys.argv[1]))
