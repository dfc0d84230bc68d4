"""A seeded mutation fuzz of the importers (the Python side of tests/fuzz): valid .tflite
(int8 and float) and .onnx fixtures are mutated, byte by byte and field by field, and each
mutant is converted. A conversion may succeed (and the core must load the image) or
raise a ConversionError that names the part of the file at fault; anything else is a
finding, printed with what reproduces it: an image the core refuses, a Python error
escaping (struct.error, TypeError, IndexError, KeyError, AttributeError, MemoryError,
RecursionError, a bare ValueError) or merely wrapped ("truncated or corrupt (struct.error:
...)"), a hang.

    python tests/convert/fuzz_importers.py SEED COUNT [FIXTURE ...]

prints one JSON object per fixture ({"fixture", "converted", "refused", "findings"}), then
{"peak_rss_kib"}, and runs under whatever limits its caller sets (test_fuzz_importers.py: an address-space cap
and a timeout; each mutant gets ``ALARM_SECONDS`` of SIGALRM).
"""

import json
import os
import re
import signal
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
DEFAULT_FIXTURES = ("keras/har_flatten_int8.tflite", "int8/digits_backbone_int8.tflite",
                    "tf_cnn_bn.tflite", "torch_cnn_bn.onnx", "torch_mlp_dynamo.onnx")
ALARM_SECONDS = 20
# numbers that sit on a boundary somewhere: sizes, indices, signs, int8, 16 and 32 bits
INTERESTING = (0, 1, -1, 2, 3, -5, 7, 127, 128, -128, 255, 256, 300, 65535, 65536,
               2 ** 31 - 1, -2 ** 31, 2 ** 32 - 1, 1 << 40, 20000)
FLOATS = (0.0, -0.0, 1.0, -1.0, float("nan"), float("inf"), -float("inf"), 1e-45, 3e38,
          0.5, 6.0)
ONNX_OPS = ("Relu", "Conv", "Gemm", "MatMul", "Add", "Mul", "Reshape", "Transpose",
            "Concat", "Slice", "Gather", "ConstantOfShape", "Range", "Expand", "Tile",
            "MaxPool", "AveragePool", "Softmax", "Flatten", "Squeeze", "Unsqueeze", "Pad",
            "BatchNormalization", "GlobalAveragePool", "Identity", "Shape", "Cast", "Loop",
            "If", "Where", "ReduceMean", "Sigmoid", "Clip", "Split", "Resize", "NonZero")


# A refusal must name the part of the file that is wrong: a Python error merely wrapped as
# "truncated or corrupt (struct.error: ...)" names none.
UNNAMED = re.compile(r"(truncated or corrupt|inconsistent or corrupt graph) \((\w*[Ee]rror)")


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang("no answer in %d s" % ALARM_SECONDS)


# ------------------------------------------------------------------ byte mutations


def mutate_bytes(data, rng):
    data = bytearray(data)
    kind = int(rng.integers(0, 5))
    if kind == 0:  # flip bits
        for _ in range(int(rng.integers(1, 5))):
            data[int(rng.integers(0, len(data)))] ^= 1 << int(rng.integers(0, 8))
    elif kind == 1:  # a 32-bit word on a boundary value
        position = int(rng.integers(0, max(len(data) // 4, 1))) * 4
        value = INTERESTING[int(rng.integers(0, len(INTERESTING)))] & 0xFFFFFFFF
        data[position:position + 4] = value.to_bytes(4, "little")
    elif kind == 2:  # truncate
        del data[int(rng.integers(0, len(data))):]
    elif kind == 3:  # delete a span
        start = int(rng.integers(0, len(data)))
        del data[start:start + int(rng.integers(1, 64))]
    else:  # copy a span over another
        start, target = (int(x) for x in rng.integers(0, len(data), 2))
        span = bytes(data[start:start + int(rng.integers(1, 64))])
        data[target:target + len(span)] = span
    return bytes(data)


# ------------------------------------------------------------------ .tflite fields


def _tables(table, found):
    found.append(table)
    for value in table.fields.values():
        if hasattr(value, "fields"):
            _tables(value, found)
        elif isinstance(value, list):
            for item in value:
                if hasattr(item, "fields"):
                    _tables(item, found)
    return found


def mutate_tflite_field(data, rng):
    """One number of the file's tree (a tensor's shape, an index, a stride, a scale) on a
    boundary value, written back as a valid flatbuffer."""
    from microtrain.convert import tflite_tree
    tree = tflite_tree.read(data, writable=False)
    tables = _tables(tree, [])
    for _ in range(20):
        table = tables[int(rng.integers(0, len(tables)))]
        names = [n for n, v in table.fields.items()
                 if isinstance(v, (int, float, np.ndarray)) and not isinstance(v, bool)
                 and n != "Data"]
        if names:
            break
    else:
        return mutate_bytes(data, rng)
    name = names[int(rng.integers(0, len(names)))]
    value = table.fields[name]
    if isinstance(value, np.ndarray):
        array = value.copy()
        if array.size == 0 or rng.random() < 0.2:  # grow or shrink the vector
            array = np.resize(array, max(array.size + int(rng.integers(-2, 3)), 0))
        if array.size:
            position = int(rng.integers(0, array.size))
            if array.dtype.kind == "f":
                array[position] = FLOATS[int(rng.integers(0, len(FLOATS)))]
            else:
                info = np.iinfo(array.dtype)
                number = INTERESTING[int(rng.integers(0, len(INTERESTING)))]
                array[position] = min(max(number, info.min), info.max)
        table.fields[name] = array
    elif isinstance(value, float):
        table.fields[name] = FLOATS[int(rng.integers(0, len(FLOATS)))]
    else:
        number = INTERESTING[int(rng.integers(0, len(INTERESTING)))]
        table.fields[name] = max(min(number, 2 ** 31 - 1), -2 ** 31) if value >= 0 or \
            number < 0 else number
    try:
        return tflite_tree.write(tree, bytes(data[4:8]))
    except Exception:  # noqa: BLE001 - a value the field's type cannot hold: bytes instead
        return mutate_bytes(data, rng)


# ------------------------------------------------------------------ .onnx fields


def _graphs(graph, found):
    found.append(graph)
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("g"):
                _graphs(attribute.g, found)
    return found


def mutate_onnx_field(data, rng):
    """One part of the ModelProto changed: an attribute, a node's input, op type or place,
    an initializer's dims or data, a graph input's shape, an output listed twice."""
    import onnx
    from onnx import helper
    model = onnx.load_model_from_string(data)
    graphs = _graphs(model.graph, [])
    graph = graphs[int(rng.integers(0, len(graphs)))]
    kind = int(rng.integers(0, 9))
    nodes = graph.node
    node = nodes[int(rng.integers(0, len(nodes)))] if len(nodes) else None
    number = INTERESTING[int(rng.integers(0, len(INTERESTING)))]
    if kind == 0 and node is not None and len(node.attribute):
        attribute = node.attribute[int(rng.integers(0, len(node.attribute)))]
        if len(attribute.ints):
            attribute.ints[int(rng.integers(0, len(attribute.ints)))] = max(
                min(number, 2 ** 63 - 1), -2 ** 63)
        elif attribute.HasField("i"):
            attribute.i = number
        elif attribute.HasField("f"):
            attribute.f = FLOATS[int(rng.integers(0, len(FLOATS)))]
        elif attribute.HasField("t"):
            attribute.t.dims.append(number & 0xFFFF)
        else:
            attribute.s = b"SAME_UPPER"
    elif kind == 1 and node is not None and len(node.input):
        names = [n for g in graphs for n in [o for x in g.node for o in x.output]] + [""]
        node.input[int(rng.integers(0, len(node.input)))] = \
            names[int(rng.integers(0, len(names)))]
    elif kind == 2 and node is not None:
        node.op_type = ONNX_OPS[int(rng.integers(0, len(ONNX_OPS)))]
    elif kind == 3 and len(nodes) > 1:  # move a node (order) or drop one
        position = int(rng.integers(0, len(nodes)))
        moved = onnx.NodeProto()
        moved.CopyFrom(nodes[position])
        del nodes[position]
        if rng.random() < 0.7:
            nodes.insert(int(rng.integers(0, len(nodes) + 1)), moved)
    elif kind == 4 and len(graph.initializer):
        tensor = graph.initializer[int(rng.integers(0, len(graph.initializer)))]
        if len(tensor.dims) and rng.random() < 0.6:
            tensor.dims[int(rng.integers(0, len(tensor.dims)))] = number
        elif tensor.raw_data:
            tensor.raw_data = tensor.raw_data[:int(rng.integers(0, len(tensor.raw_data)))]
        else:
            tensor.data_type = int(rng.integers(0, 17))
    elif kind == 5 and len(graph.input):
        shape = graph.input[0].type.tensor_type.shape
        if len(shape.dim):
            shape.dim[int(rng.integers(0, len(shape.dim)))].dim_value = number
    elif kind == 6 and len(graph.output):
        graph.output.append(graph.output[0])
    elif kind == 7 and node is not None:  # a second writer of a name
        copy = helper.make_node("Identity", [node.input[0] if len(node.input) else ""],
                                [node.output[0]] if len(node.output) else ["x"])
        graph.node.append(copy)
    else:
        model.opset_import[0].version = int(rng.integers(1, 25))
    return model.SerializeToString()


# ------------------------------------------------------------------ the loop


def run(fixture, seed, count):
    import microtrain.convert as convert
    from microtrain.backend import loader
    from microtrain.convert import ConversionError
    backend = loader.load()
    with open(os.path.join(FIXTURES, fixture), "rb") as handle:
        original = handle.read()
    fmt = fixture.rsplit(".", 1)[1]
    field_mutation = mutate_onnx_field if fmt == "onnx" else mutate_tflite_field
    rng = np.random.default_rng([seed, sum(fixture.encode())])
    outcome = {"fixture": fixture, "converted": 0, "refused": 0, "findings": []}
    for trial in range(count):
        data = original
        try:
            for _ in range(int(rng.integers(1, 3))):
                data = field_mutation(data, rng) if rng.random() < 0.5 else \
                    mutate_bytes(data, rng)
        except Exception:  # noqa: BLE001 - a mutant the mutator itself cannot parse
            data = mutate_bytes(original, rng)
        signal.alarm(ALARM_SECONDS)
        try:
            with np.errstate(all="ignore"):
                image = convert(data, format=fmt).to_bytes()
            backend.describe(image)  # the image loads in the core
            outcome["converted"] += 1
        except ConversionError as error:
            if UNNAMED.search(str(error)) is None:
                outcome["refused"] += 1
            else:
                finding(outcome, trial, data, "unnamed part: %s" % error)
        except BaseException as error:  # noqa: BLE001 - the finding
            if isinstance(error, KeyboardInterrupt):
                raise
            finding(outcome, trial, data, "%s: %s" % (type(error).__name__, error))
        finally:
            signal.alarm(0)
    return outcome


def finding(outcome, trial, data, text):
    outcome["findings"].append({"trial": trial, "error": text[:400],
                                "data": data.hex() if len(data) < 20000 else None})


def main(argv):
    seed, count = int(argv[0]), int(argv[1])
    signal.signal(signal.SIGALRM, _alarm)
    for fixture in argv[2:] or DEFAULT_FIXTURES:
        print(json.dumps(run(fixture, seed, count)), flush=True)
    import resource
    print(json.dumps({"peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))


if __name__ == "__main__":
    main(sys.argv[1:])
