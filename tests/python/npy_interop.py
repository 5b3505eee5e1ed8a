"""Oracle for the [io] .npy test: numpy must read the files minfer wrote (minfer_<name>.npy)
and writes the same arrays (numpy_<name>.npy, in formats 1.0, 2.0 and 3.0) for minfer to read.
Usage: npy_interop.py DIR. Exit status 0 = all good."""
import sys

try:
    import numpy as np
except ImportError as e:  # the C++ test reports status 3 as "install ..."
    print(f"{e}: this test oracle needs python3 with numpy")
    sys.exit(3)


def expected():
    k = np.arange(24).reshape(2, 3, 4)
    return {
        "f4": (k * 0.5 - 3).astype("<f4"),
        "f2": (k * 0.5 - 3).astype("<f2"),
        "i1": (k - 12).astype("|i1"),
        "u1": (k * 10 % 256).astype("|u1"),
        "i4": (k * 100000 - 7).astype("<i4"),
        "i8": (k * 10**12).astype("<i8"),
        "b1": (k % 3 == 0),
        "scalar": np.array(2.5, dtype="<f4"),
        "empty": np.zeros((0, 3), dtype="<f4"),
    }


def main(folder):
    bad = []
    for name, want in expected().items():
        got = np.load(f"{folder}/minfer_{name}.npy")
        if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
            bad.append(f"minfer_{name}.npy: got {got.dtype}{got.shape}, want {want.dtype}{want.shape}")
        np.save(f"{folder}/numpy_{name}.npy", want)
    for version in [(2, 0), (3, 0)]:
        with open(f"{folder}/numpy_v{version[0]}.npy", "wb") as f:
            np.lib.format.write_array(f, expected()["i4"], version=version)
    if bad:
        print("\n".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
