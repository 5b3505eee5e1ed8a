"""Oracle for the [conformance] shape test: compares the shapes and element types minfer's
Graph::infer_shapes gave every value of some ONNX models with onnx.shape_inference's.

Usage: check_shapes.py TSV. Each TSV line: model path, value name, ONNX element type number,
"1" if minfer knows the shape else "0", dims joined by "," ("?" = symbolic).
ONNX runs with data propagation (so Shape->Reshape chains resolve as minfer's do). Rules, per
value that both name: the element types agree; the ranks agree where both know them; no dim
is static in both with different values. A dim minfer leaves symbolic where ONNX has a number
is a disagreement too, except for values shaped by run-time data (a node whose non-first
input is an integer graph input, e.g. Reshape's target shape fed at run time: ONNX then
takes the number from the model's declared output). A number where ONNX has a symbol is
allowed (minfer folds more than ONNX's inference; the runs check those values).
Exit status: 0 = all agree, 1 = a disagreement (listed), 3 = onnx missing."""
import collections
import sys

try:
    import onnx
except ImportError as e:  # the C++ test reports status 3 as "install ..."
    print(f"{e}: this test oracle needs python3 with onnx")
    sys.exit(3)


def onnx_values(path):
    """name -> (elem_type, dims or None when the rank is unknown); dims hold ints or None."""
    model = onnx.shape_inference.infer_shapes(onnx.load(path), data_prop=True)
    graph = model.graph
    inits = {t.name for t in graph.initializer}
    int_inputs = {i.name for i in graph.input if i.name not in inits and
                  i.type.tensor_type.elem_type in (onnx.TensorProto.INT64, onnx.TensorProto.INT32)}
    data_shaped = {o for n in graph.node if any(i in int_inputs for i in n.input[1:])
                   for o in n.output}
    values = {}
    for info in list(graph.input) + list(graph.value_info) + list(graph.output):
        if not info.type.HasField("tensor_type"):
            continue
        tt = info.type.tensor_type
        dims = None
        if tt.HasField("shape"):
            dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim]
        values[info.name] = (tt.elem_type, dims)
    for init in graph.initializer:
        values[init.name] = (init.data_type, list(init.dims))
    return values, data_shaped


def main(tsv):
    minfer = collections.defaultdict(dict)
    with open(tsv) as f:
        for line in f:
            path, name, elem, known, dims = line.rstrip("\n").split("\t")
            shape = [None if d == "?" else int(d) for d in dims.split(",")] if dims else []
            minfer[path][name] = (int(elem), known == "1", shape)
    compared = static = data_shaped_count = 0
    problems = []
    for path, values in sorted(minfer.items()):
        theirs, data_shaped = onnx_values(path)
        for name, (elem, known, shape) in sorted(values.items()):
            if name not in theirs:
                continue  # a value minfer's importer made (e.g. legacy Softmax helpers)
            their_elem, their_dims = theirs[name]
            compared += 1
            where = f"{path}: value '{name}'"
            if their_elem and elem != their_elem:
                problems.append(f"{where}: element type {elem}, onnx says {their_elem}")
            if their_dims is None:
                continue  # ONNX does not know the rank either
            static += all(d is not None for d in their_dims)
            if name in data_shaped:
                data_shaped_count += 1
                if not known or all(d is None for d in shape):
                    continue
            if not known:
                problems.append(f"{where}: minfer has no shape, onnx infers {their_dims}")
            elif len(shape) != len(their_dims):
                problems.append(f"{where}: minfer infers rank {len(shape)} {shape}, "
                                f"onnx {their_dims}")
            elif any(t is not None and m != t for m, t in zip(shape, their_dims)):
                problems.append(f"{where}: minfer infers {shape}, onnx {their_dims}")
    print(f"check_shapes: {len(minfer)} models, {compared} values compared "
          f"({static} with a static shape in onnx, {data_shaped_count} shaped by run-time data), "
          f"{len(problems)} disagreements")
    for p in problems[:40]:
        print("  " + p)
    return 1 if problems or compared == 0 else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
