"""minfer against ONNX Runtime on the same ONNX file (written by minfer.export)."""
import numpy as np
import pytest

import minfer

ort = pytest.importorskip("onnxruntime")


@pytest.mark.parametrize("model", ["resnet18", "cifar-resnet20"])
def test_matches_onnxruntime(tmp_path, model):
    path = minfer.export(model, tmp_path / f"{model}.onnx", opt_level=0)
    size = 224 if model == "resnet18" else 32
    x = np.random.default_rng(1).standard_normal((1, 3, size, size), dtype=np.float32)

    session = minfer.Session(path, threads=2)
    name = session.input_names[0]
    ours = session.run({name: x})[session.output_names[0]]

    oracle = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    theirs = oracle.run(None, {name: x})[0]

    assert ours.shape == theirs.shape and ours.dtype == np.float32
    scale = float(np.abs(theirs).max())
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4 * max(scale, 1.0))
    assert np.argmax(ours) == np.argmax(theirs)


def test_builtin_and_exported_file_agree(tmp_path, resnet20, cifar_batch):
    # The built-in model and its own ONNX export at opt-level 0 are one network.
    path = minfer.export("cifar-resnet20", tmp_path / "r20.onnx")
    with minfer.Session(path, threads=2) as from_file:
        a = from_file.run({"input": cifar_batch})["logits"]
    b = resnet20.run({"input": cifar_batch})["logits"]
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
