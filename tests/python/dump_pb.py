"""Oracle for the [io] TensorProto test: converts every test_data_set_0/*.pb of the ONNX node
tests under ROOT to .npy with onnx.numpy_helper, and lists them in OUT/index.tsv as
"<pb path>\t<ONNX type name>\t<npy path or ->" (- for types minfer does not read;
NOT_A_TENSOR for sequence/optional values).
Usage: dump_pb.py ROOT OUT."""
import functools
import glob
import os
import sys

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
except ImportError as e:  # the C++ test reports status 3 as "install ..."
    print(f"{e}: this test oracle needs python3 with numpy and onnx")
    sys.exit(3)

SUPPORTED = {"FLOAT", "FLOAT16", "INT8", "UINT8", "INT32", "INT64", "BOOL"}


@functools.lru_cache(maxsize=None)
def value_types(case):
    """Whether each graph input / output of a case's model is a tensor (not a sequence...)."""
    graph = onnx.load(os.path.join(case, "model.onnx"), load_external_data=False).graph
    inits = {t.name for t in graph.initializer}
    inputs = [v.type.HasField("tensor_type") for v in graph.input if v.name not in inits]
    return {"input": inputs, "output": [v.type.HasField("tensor_type") for v in graph.output]}


def is_tensor(pb):
    """Whether input_K.pb / output_K.pb holds a TensorProto."""
    kind, k = os.path.basename(pb)[:-3].split("_")
    return value_types(os.path.dirname(os.path.dirname(pb)))[kind][int(k)]


def main(root, out):
    rows = []
    for i, pb in enumerate(sorted(glob.glob(os.path.join(root, "*", "test_data_set_0", "*.pb")))):
        t = onnx.TensorProto()
        with open(pb, "rb") as f:
            t.ParseFromString(f.read())
        type_name = onnx.TensorProto.DataType.Name(t.data_type)
        npy = "-"
        if not is_tensor(pb):  # a SequenceProto or OptionalProto, not a TensorProto
            type_name = "NOT_A_TENSOR"
        elif type_name in SUPPORTED:
            npy = os.path.join(out, f"{i}.npy")
            np.save(npy, numpy_helper.to_array(t).copy(order="C"))  # keeps 0-d arrays 0-d
        rows.append(f"{pb}\t{type_name}\t{npy}\n")
    with open(os.path.join(out, "index.tsv"), "w") as f:
        f.writelines(rows)
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
