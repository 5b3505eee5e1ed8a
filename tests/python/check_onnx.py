"""Oracle for the [io] export test: runs onnx.checker (full check, with shape inference) on
ONNX files written by minfer. Usage: check_onnx.py MODEL... Exit status 0 = all valid."""
import sys

try:
    import onnx
except ImportError as e:  # the C++ test reports status 3 as "install ..."
    print(f"{e}: this test oracle needs python3 with onnx")
    sys.exit(3)


def main(paths):
    bad = 0
    for path in paths:
        try:
            onnx.checker.check_model(onnx.load(path), full_check=True)
        except Exception as e:  # checker and shape-inference errors have several types
            print(f"{path}: onnx.checker: {e}")
            bad += 1
    return 1 if bad or not paths else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
