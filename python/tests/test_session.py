"""minfer.Session from Python: runs, arrays in and out, threads, models, int8, profile."""
import threading
from pathlib import Path

import numpy as np
import pytest

import minfer


def test_run_returns_numpy_outputs(resnet20, cifar_batch):
    out = resnet20.run({"input": cifar_batch})
    assert list(out) == ["logits"]
    logits = out["logits"]
    assert isinstance(logits, np.ndarray)
    assert logits.shape == (2, 10) and logits.dtype == np.float32
    assert np.isfinite(logits).all()
    # each image on its own gives the same answer as in the batch
    one = resnet20.run({"input": cifar_batch[1:2]})["logits"]
    np.testing.assert_allclose(one[0], logits[1], rtol=1e-5, atol=1e-5)


def test_session_metadata(resnet20):
    assert resnet20.input_names == ["input"]
    assert resnet20.output_names == ["logits"]
    assert resnet20.device == "cpu"
    assert resnet20.inputs == {"input": ("f32", (None, 3, 32, 32))}
    assert not resnet20.closed


def test_outputs_outlive_the_session(cifar_batch):
    s = minfer.Session("cifar-resnet20", threads=1)
    out = s.run({"input": cifar_batch})["logits"]
    expected = out.copy()
    s.close()
    del s
    np.testing.assert_array_equal(out, expected)  # the array owns its buffer


class DLPackOnly:
    """An array reachable only through DLPack (like a PyTorch tensor)."""

    def __init__(self, array):
        self._a = array

    def __dlpack__(self, **kwargs):
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_dlpack_in_and_out(resnet20, cifar_batch):
    expected = resnet20.run({"input": cifar_batch})["logits"]
    got = resnet20.run({"input": DLPackOnly(cifar_batch)})["logits"]
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(np.from_dlpack(got), expected)


def test_run_into_writes_callers_arrays(resnet20, cifar_batch):
    expected = resnet20.run({"input": cifar_batch})["logits"]
    out = np.full((2, 10), -1.0, dtype=np.float32)
    assert resnet20.run_into({"input": cifar_batch}, {"logits": out}) is None
    np.testing.assert_array_equal(out, expected)
    through_dlpack = np.zeros((2, 10), dtype=np.float32)
    resnet20.run_into({"input": cifar_batch}, {"logits": DLPackOnly(through_dlpack)})
    np.testing.assert_array_equal(through_dlpack, expected)


def test_run_into_rejects_wrong_outputs(resnet20, cifar_batch):
    def error_of(outputs):
        with pytest.raises(minfer.Error) as e:
            resnet20.run_into({"input": cifar_batch}, outputs)
        assert e.value.code == "InvalidArgument"
        return str(e.value)

    assert "output 'logits' is missing (expected f32[2,10])" in error_of({})
    assert "is f32[3,10], the model makes f32[2,10]" in error_of(
        {"logits": np.zeros((3, 10), np.float32)})
    assert "no output named 'probs'" in error_of(
        {"logits": np.zeros((2, 10), np.float32), "probs": np.zeros((2, 10), np.float32)})
    read_only = np.zeros((2, 10), np.float32)
    read_only.setflags(write=False)
    with pytest.raises(TypeError, match="output 'logits' must be a writable array"):
        resnet20.run_into({"input": cifar_batch}, {"logits": read_only})


def test_read_only_input(resnet20, cifar_batch):
    x = cifar_batch.copy()
    x.setflags(write=False)
    expected = resnet20.run({"input": cifar_batch})["logits"]
    np.testing.assert_array_equal(resnet20.run({"input": x})["logits"], expected)


def test_concurrent_runs_from_threads(resnet20):
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((1, 3, 32, 32), dtype=np.float32) for _ in range(4)]
    expected = [resnet20.run({"input": x})["logits"] for x in xs]
    results = [None] * len(xs)

    def work(i):
        for _ in range(3):
            results[i] = resnet20.run({"input": xs[i]})["logits"]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(xs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got, want in zip(results, expected):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_models_lists_the_builtins():
    names = [m["name"] for m in minfer.models()]
    assert "resnet18" in names and "resnet50" in names and "cifar-resnet20" in names
    r20 = next(m for m in minfer.models() if m["name"] == "cifar-resnet20")
    assert r20["num_classes"] == 10 and r20["input_size"] == (32, 32)


def test_quantize_then_run_int8(tmp_path):
    rng = np.random.default_rng(5)
    calib = [rng.standard_normal((1, 3, 32, 32), dtype=np.float32) for _ in range(16)]
    path = minfer.quantize("cifar-resnet20", tmp_path / "r20.int8.onnx", calibration=calib,
                           method="minmax", threads=2)
    x = np.concatenate(calib[:4])
    fp32 = minfer.Session("cifar-resnet20", threads=2).run({"input": x})["logits"]
    with minfer.Session(path, precision="int8", threads=2) as s:
        int8 = s.run({"input": x})["logits"]
    assert int8.shape == fp32.shape
    # int8 follows fp32 closely on the inputs it was calibrated on
    err = np.abs(int8 - fp32).max() / np.abs(fp32).max()
    assert err < 0.1, err


def test_profile_covers_the_run(cifar_batch):
    # One thread: no OpenMP barrier for a busy machine to stall between the steps.
    with minfer.Session("cifar-resnet20", threads=1) as s:
        p = s.profile({"input": cifar_batch}, runs=11, warmup=2)
    assert p["runs"] == 11 and p["steps"]
    total = sum(s["ms"] for s in p["steps"])
    assert total == pytest.approx(p["steps_ms"])
    # Per-step medians add up to about the median run; loosely, since on a shared machine
    # another process may stall any step of a run (the medians leave such stalls out).
    assert 0.25 * p["run_ms"] <= total <= 1.5 * p["run_ms"]
    # Means keep those stalls: they add up to the mean run, less the time between steps.
    means = sum(s["mean_ms"] for s in p["steps"])
    assert means == pytest.approx(p["steps_mean_ms"])
    assert 0.8 * p["run_mean_ms"] <= means <= 1.01 * p["run_mean_ms"]
    assert p["peak"]["gflops"] > 0 and p["peak"]["gbps"] > 0 and p["peak"]["method"]
    convs = [s for s in p["steps"] if s["op"] == "FusedConv"]
    assert convs and all(s["flops"] > 0 and s["fused"].startswith("Conv") for s in convs)
    assert any("Relu" in s["fused"] for s in convs) and any("Add" in s["fused"] for s in convs)
    first = convs[0]
    # 3x3 conv, 3 -> 16 channels, 32x32 output, batch 2: 2 * (2*16*32*32) * (3*3*3) MACs
    assert first["flops"] >= 2 * (2 * 16 * 32 * 32) * 27
    assert first["output_shapes"] == [[2, 16, 32, 32]]
    assert all(s["roofline_pct"] >= 0 for s in p["steps"])


DATA = Path(__file__).resolve().parents[2] / "data"


def test_real_weights_and_images_fp32_and_int8(tmp_path):
    # The shipped CIFAR-10 ResNet-20 (real weights) on the 20 shipped pictures, whose file
    # names end in their label: fp32 classifies most correctly, and the int8 model that
    # minfer.quantize makes from those pictures agrees with it on nearly all.
    weights = str(DATA / "models" / "resnet20.safetensors")
    pictures = sorted((DATA / "images" / "cifar10-png").glob("*.png"))
    assert len(pictures) == 20
    labels = [int(p.stem.rsplit("_", 1)[1]) for p in pictures]
    x = np.concatenate([minfer.load_image(p, "cifar-resnet20") for p in pictures])
    assert x.shape == (20, 3, 32, 32) and x.dtype == np.float32

    fp32 = minfer.Session("cifar-resnet20", weights=weights, threads=2).run({"input": x})
    fp32_pred = fp32["logits"].argmax(1)
    assert (fp32_pred == labels).sum() >= 16
    assert minfer.cifar10_classes()[labels[0]] == "cat"

    path = minfer.quantize("cifar-resnet20", tmp_path / "r20.int8.onnx",
                           calibration=[DATA / "images" / "cifar10-png"], weights=weights,
                           threads=2)
    with minfer.Session(path, precision="int8", threads=2) as s:
        int8_pred = s.run({"input": x})["logits"].argmax(1)
    assert (int8_pred == fp32_pred).sum() >= 18
