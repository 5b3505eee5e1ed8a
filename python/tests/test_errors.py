"""Bad input from Python raises minfer.Error (or TypeError) with a clear message."""
import numpy as np
import pytest

import minfer


def raises(code, match):
    return pytest.raises(minfer.Error, match=match)


def check_code(excinfo, code):
    assert excinfo.value.code == code
    assert excinfo.value.message == str(excinfo.value)


def test_error_is_a_runtime_error():
    assert issubclass(minfer.Error, RuntimeError)


def test_wrong_dtype(resnet20):
    with pytest.raises(minfer.Error, match="'input' is f64|element type float64|float64") as e:
        resnet20.run({"input": np.zeros((1, 3, 32, 32), dtype=np.float64)})
    check_code(e, "InvalidArgument")


def test_wrong_dtype_int(resnet20):
    with pytest.raises(minfer.Error, match="input 'input' is i64, the model expects f32") as e:
        resnet20.run({"input": np.zeros((1, 3, 32, 32), dtype=np.int64)})
    check_code(e, "InvalidArgument")


def test_wrong_shape(resnet20):
    with pytest.raises(minfer.Error, match=r"shape \[1,3,28,28\], the model expects") as e:
        resnet20.run({"input": np.zeros((1, 3, 28, 28), dtype=np.float32)})
    check_code(e, "InvalidArgument")


def test_wrong_rank(resnet20):
    with pytest.raises(minfer.Error, match="the model expects") as e:
        resnet20.run({"input": np.zeros((3, 32, 32), dtype=np.float32)})
    check_code(e, "InvalidArgument")


def test_non_contiguous(resnet20):
    x = np.zeros((1, 32, 32, 3), dtype=np.float32).transpose(0, 3, 1, 2)
    with pytest.raises(minfer.Error, match="not C-contiguous.*ascontiguousarray") as e:
        resnet20.run({"input": x})
    check_code(e, "InvalidArgument")
    # the advice works
    assert resnet20.run({"input": np.ascontiguousarray(x)})["logits"].shape == (1, 10)


def test_unknown_input_name(resnet20):
    x = np.zeros((1, 3, 32, 32), dtype=np.float32)
    with pytest.raises(minfer.Error, match="no input named 'image' \\(inputs: input\\)") as e:
        resnet20.run({"input": x, "image": x})
    check_code(e, "InvalidArgument")


def test_missing_input(resnet20):
    with pytest.raises(minfer.Error, match="input 'input' is missing") as e:
        resnet20.run({})
    check_code(e, "InvalidArgument")


def test_not_an_array(resnet20):
    with pytest.raises(TypeError, match="input 'input' must be an array"):
        resnet20.run({"input": [[1.0, 2.0]]})
    with pytest.raises(TypeError, match="names must be str"):
        resnet20.run({0: np.zeros((1, 3, 32, 32), dtype=np.float32)})


def test_closed_session():
    s = minfer.Session("cifar-resnet20", threads=1)
    s.close()
    assert s.closed
    with pytest.raises(minfer.Error, match="closed; create a new minfer.Session") as e:
        s.run({"input": np.zeros((1, 3, 32, 32), dtype=np.float32)})
    check_code(e, "InvalidArgument")
    with pytest.raises(minfer.Error, match="closed"):
        s.input_names
    s.close()  # closing twice is fine


def test_session_closed_by_with_block():
    with minfer.Session("cifar-resnet20", threads=1) as s:
        pass
    with pytest.raises(minfer.Error, match="closed"):
        s.run({"input": np.zeros((1, 3, 32, 32), dtype=np.float32)})


def test_unknown_model():
    with pytest.raises(minfer.Error, match="neither an ONNX file nor a built-in model") as e:
        minfer.Session("no-such-model.onnx")
    check_code(e, "InvalidArgument")


def test_malformed_onnx_file(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"this is not a protobuf")
    with pytest.raises(minfer.Error, match="bad.onnx") as e:
        minfer.Session(bad)
    check_code(e, "InvalidModel")


def test_bad_options():
    with pytest.raises(minfer.Error, match="device must be 'cpu', 'cuda' or 'cuda:N'"):
        minfer.Session("cifar-resnet20", device="gpu")
    with pytest.raises(minfer.Error, match="precision must be 'fp32', 'int8' or 'fp16'"):
        minfer.Session("cifar-resnet20", precision="bf16")
    with pytest.raises(minfer.Error, match="fp16 runs on CUDA only") as e:
        minfer.Session("cifar-resnet20", precision="fp16")
    check_code(e, "Unsupported")
    with pytest.raises(minfer.Error, match="optimization level must be 0..3"):
        minfer.Session("cifar-resnet20", opt_level=7)
    with pytest.raises(minfer.Error, match="not quantized") as e:
        minfer.Session("cifar-resnet20", precision="int8")
    check_code(e, "InvalidArgument")


@pytest.mark.skipif(minfer.cuda_available(), reason="a GPU is present")
def test_cuda_without_a_gpu():
    with pytest.raises(minfer.Error) as e:
        minfer.Session("cifar-resnet20", device="cuda")
    check_code(e, "Device")
