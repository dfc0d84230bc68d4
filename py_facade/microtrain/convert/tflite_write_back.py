"""Trained weights back into the ``.tflite`` / ``.circle`` file a model was imported from.

* Where every trained weight fits the float32 buffer it came from and no other tensor reads
  that buffer, the bytes are patched in place: everything else in the file stays byte for
  byte (ops, names, metadata, signatures).
* Otherwise the file is rewritten through ``tflite_tree`` with the same operators, tensors
  and metadata, and: a weight whose buffer other tensors share (TensorFlow's converter
  stores equal constants once, e.g. zero biases) gets a buffer of its own; a weight that
  was int8 (a dynamic-range model's, also where it stayed frozen before ``train_from``) or
  float16 becomes a float32 tensor (the operators that dequantized it at run time are
  dropped); a bias the import created (a constant Add folded into a MatMul without one)
  becomes the operator's bias input.
* An int8 model (``tflite-int8``): the file's int8 operators the import kept are written as
  they are (their tensors, quantization and buffers byte for byte), and the image's float
  part as TFLite float operators (``tflite_writer.OpWriter``): a DEQUANTIZE of the int8
  activation, then the trained layers, in the image's order (with ``int8_after``, a float
  operator between int8 ones, its output quantized into the file's int8 tensor again; with
  ``int8_train``, the int8 weights and biases trained in place in the kept operators' own
  tensors). LiteRT runs it; its int8 tensors are the
  session's, bit for bit (BUILTIN_REF), its float head within float rounding.
"""

import numpy as np

from ..nn import image as _image
from . import tflite_tree as _tree
from .graph import BATCH, ConversionError
from .tflite_reader import buffer_span, parse
from .tflite_writer import IDENTIFIERS, OpWriter, _ints

_FLOAT32, _INT8 = 0, 9
_NUMPY = {0: "<f4", 2: "<i4", 4: "<i8", 9: "i1"}


def _placements(source, weights):
    """[(file tensor, the file op reading it, float32 array, what)] to write, and
    [(file op, array)] of biases the import created."""
    placements, created = [], []
    graph = parse(source.data).Subgraphs(0)
    for position, (origin, weight) in enumerate(zip(source.origins, weights)):
        if origin.frozen and not _int8_in_file(graph, origin):
            continue  # never trained (a MUL/SUB constant, a weight before train_from)
        array = origin.to_source(weight)
        if origin.key is None:
            if origin.node is None:
                raise ConversionError("weight %d has no place in the original file (the "
                                      "import created it): export a new file instead "
                                      "(source=None)" % position)
            created.append((origin.node, array))
        else:
            placements.append((origin.key, getattr(origin, "op", None), array,
                               "weight %d" % position))
    return placements, created


def _int8_in_file(graph, origin):
    """A weight the file holds as int8 (a dynamic-range model's, dequantized at import).
    Frozen or not, it is written as float32: LiteRT runs an operator with int8 weights and
    float activations with hybrid kernels, which quantize the activations on the fly, and
    would not compute the session's floats (on MLPerf Tiny's KWS cut before its Dense:
    0.02 apart, BUILTIN_REF)."""
    return isinstance(origin.key, (int, np.integer)) and \
        graph.Tensors(int(origin.key)).Type() == _INT8


def _fold_identities(source, graph):
    """[(file tensor, None, array, what)] setting each folded constant to its identity."""
    result = []
    for fold in source.folds:
        identity = 1.0 if fold["kind"] == "mul" else 0.0
        for key in fold["keys"]:
            tensor = graph.Tensors(key)
            shape = tuple(int(d) for d in np.atleast_1d(tensor.ShapeAsNumpy())) \
                if tensor.ShapeLength() else ()
            result.append((key, None, np.full(shape, identity, np.float32),
                           "the folded %s constant" % fold["kind"]))
    return result


def write_back(source, weights, fmt, image=None):
    """The original file's bytes with ``weights`` (mt_session_param order) written back
    (see the module docstring); ``image`` (the session's .mtm image) for an int8 model."""
    if source.int8 is not None:  # an int8 model, or a float one with a new head
        return write_int8(source, weights, fmt, image)
    data = bytearray(source.data)
    model = parse(data)
    graph = model.Subgraphs(0)
    placements, created = _placements(source, weights)
    placements += _fold_identities(source, graph)
    values = {}  # file tensor -> [(payload, [file ops reading it with that value])]
    for key, op, array, _ in placements:
        payload = np.ascontiguousarray(array, dtype="<f4").tobytes()
        groups = values.setdefault(key, [])
        for known, ops in groups:
            if known == payload:
                ops.append(op)
                break
        else:
            groups.append((payload, [op]))
    readers = {}
    for g in range(model.SubgraphsLength()):
        sub = model.Subgraphs(g)
        for t in range(sub.TensorsLength()):
            readers.setdefault(sub.Tensors(t).Buffer(), set()).add((g, t))
    in_place = not created
    for key, groups in values.items():
        payload = groups[0][0]
        tensor = graph.Tensors(key)
        start, size = buffer_span(model, data, tensor.Buffer())
        shared = readers.get(tensor.Buffer(), set()) - {(0, key)}
        same = start is not None and bytes(data[start:start + size]) == payload
        others_agree = all(g == 0 and len(values.get(t, ())) == 1 and
                           values[t][0][0] == payload for g, t in shared)
        if len(groups) > 1 or tensor.Type() != _FLOAT32 or start is None or \
                size != len(payload) or (shared and not same and not others_agree):
            in_place = False
    if in_place:
        for key, groups in values.items():
            start, size = buffer_span(model, data, graph.Tensors(key).Buffer())
            data[start:start + size] = groups[0][0]
        return bytes(data)
    return _rewrite(source, values, created, fmt)


def _rewrite(source, values, created, fmt):
    """The file rewritten with each weight in a float32 buffer of its own where it cannot
    be patched in place (see the module docstring). A tensor that several operators read
    and that trained to different values stays with the first; the others get copies."""
    tree = _tree.read(source.data)
    graph = tree["Subgraphs"][0]
    tensors = graph["Tensors"]
    operators = graph.get("Operators", [])
    buffers_used = {}
    for sub in tree["Subgraphs"]:
        for tensor in sub.get("Tensors", []):
            buffer = tensor.get("Buffer", 0)
            buffers_used[buffer] = buffers_used.get(buffer, 0) + 1
    dropped = set()
    for key, groups in values.items():
        tensor = tensors[key]
        for position, (payload, ops) in enumerate(groups):
            if position:  # another value: a copy of the tensor for the ops that hold it
                copy = tensor.copy()
                copy["Name"] = tensor.get("Name", b"") + b"/%d" % position
                tensors.append(copy)
                for op in ops:
                    if op is None:
                        raise ConversionError("tensor %d receives two different values"
                                              % key)
                    inputs = [int(t) for t in operators[op]["Inputs"]]
                    operators[op]["Inputs"] = _ints(len(tensors) - 1 if t == key else t
                                                    for t in inputs)
                target = copy
            else:
                target = tensor
            buffer = target.get("Buffer", 0)
            data = tree["Buffers"][buffer].get("Data") if buffer else None
            exclusive = position == 0 and buffer and buffers_used.get(buffer) == 1 and \
                data is not None
            if target.get("Type", 0) == _FLOAT32 and exclusive and data.size == len(payload):
                tree["Buffers"][buffer]["Data"] = np.frombuffer(payload, np.uint8).copy()
                continue
            target["Buffer"] = _tree.add_buffer(tree, payload)
            target["Type"] = _FLOAT32
            target.fields.pop("Quantization", None)
            for index, op in enumerate(operators):  # a DEQUANTIZE that made the weight
                if key in [int(t) for t in op.get("Outputs", ())]:
                    dropped.add(index)
    for node, array in created:
        op = operators[node]
        inputs = [int(t) for t in op["Inputs"]]
        inputs += [-1] * (3 - len(inputs))
        if inputs[2] >= 0:
            raise ConversionError("file op %d already has a bias; the created one has no "
                                  "place" % node)
        name = "%s/bias" % _tree.tensor_name(tensors[int(op["Outputs"][0])])
        tensors.append(_tree.Table("Tensor", {
            "Shape": _ints(array.shape), "Type": _FLOAT32, "Name": name.encode("utf-8"),
            "Buffer": _tree.add_buffer(tree, np.ascontiguousarray(array, "<f4").tobytes())}))
        inputs[2] = len(tensors) - 1
        op["Inputs"] = _ints(inputs)
    graph["Operators"] = [op for index, op in enumerate(operators) if index not in dropped]
    _tree.prune(tree)
    return _tree.write(tree, IDENTIFIERS[fmt])


# ---------------------------------------------------------------------------- int8


def write_int8(source, weights, fmt, image):
    """An imported int8 model: the file's kept int8 operators, then the image's float part
    (see the module docstring)."""
    if fmt != "tflite":
        raise ConversionError("an int8 model exports as .tflite (its int8 operators are the "
                              "file's), not .%s" % fmt)
    info = source.int8
    tree = _tree.read(source.data)
    if len(tree["Subgraphs"]) != 1:
        raise ConversionError("the file has %d subgraphs" % len(tree["Subgraphs"]))
    graph = tree["Subgraphs"][0]
    tensors = graph["Tensors"]
    operators = graph.get("Operators", [])
    kept = list(info["kept_ops"])
    for index in kept:  # constants the import computed (TensorFlow's shape arithmetic)
        for t in operators[index].get("Inputs", ()):
            t = int(t)
            if t >= 0 and t in info["constants"] and not _has_data(tree, tensors[t]):
                array = np.asarray(info["constants"][t])
                if array.dtype.kind in "iu":  # the import's stand-in for the batch size
                    if np.any((array % BATCH == 0) & (array != 0) & (array != BATCH)):
                        raise ConversionError("tensor %d, computed at import, is a multiple "
                                              "of the batch size" % t)
                    array = np.where(array == BATCH, -1, array)
                dtype = _NUMPY.get(tensors[t].get("Type", 0))
                if dtype is None:
                    raise ConversionError("tensor %d, computed at import, has a type export "
                                          "does not write" % t)
                tensors[t]["Buffer"] = _tree.add_buffer(tree, array.astype(dtype).tobytes())
    graph["Operators"] = []
    parsed = _image.read_image(image)
    # int8 layers trained in place (int8_train): their trained int8 weights and int32 biases,
    # from the image, into buffers of their own (the file's may be shared), in the file's
    # axes order; quantization and everything else as the file has it
    for core, (t, perm) in sorted(info.get("trained_in_place", {}).items()):
        array = np.asarray(parsed.tensor_data(core))
        if perm is not None:
            array = array.transpose(np.argsort(perm))
        dtype = _NUMPY[tensors[t].get("Type", 0)]
        tensors[t]["Buffer"] = _tree.add_buffer(tree, np.ascontiguousarray(array).astype(dtype).tobytes())
    writer = OpWriter(tree, parsed, dict(zip(parsed.const_f32_tensors(), weights)),
                      tensor_of=info["core_to_source"],
                      names=_float_names(source, parsed, tensors),
                      batch=_batch(graph, tensors))
    # the image's order: a kept operator as the file has it (at its first core op), a float
    # op as TFLite's; a QUANTIZE that turns a float op's output back into the file's int8
    # tensor (int8_after: the float op between int8 ones) writes that very tensor
    kept_set, written = set(kept), set()
    requantized = {parsed.ops[k].outputs[0] for k in range(len(parsed.ops))} & \
        set(info.get("requantized", ()))
    for index, node in enumerate(info["op_nodes"]):
        if parsed.ops[index].outputs[0] in requantized or node is None or node not in kept_set:
            writer.add_op(index)
        elif node not in written:
            graph["Operators"].append(operators[node])
            written.add(node)
    outputs = [writer.tensor(o) for o in parsed.outputs]
    graph["Outputs"] = _ints(outputs)
    for signature in tree.get("SignatureDefs", []):
        if signature.get("SubgraphIndex", 0) != 0:
            continue
        entries = signature.get("Outputs", [])
        if len(entries) != len(outputs):
            entries = [_tree.Table("TensorMap", {"Name": name.encode("utf-8")})
                       for name in source.output_names]
        for entry, tensor in zip(entries, outputs):
            entry["TensorIndex"] = tensor
        signature["Outputs"] = entries
    _tree.prune(tree)
    return _tree.write(tree, IDENTIFIERS[fmt])


def _has_data(tree, tensor):
    data = tree["Buffers"][tensor.get("Buffer", 0)].get("Data")
    return data is not None and data.size > 0


def _batch(graph, tensors):
    """-1 when the file's inputs take any batch, else 1."""
    for t in graph.get("Inputs", ()):
        signature = tensors[int(t)].get("ShapeSignature")
        if signature is not None and len(signature) and int(signature[0]) == -1:
            return -1
    return 1


def _float_names(source, parsed, tensors):
    """Names of the tensors the float part writes: the file's name for a weight, the file
    op's output name for its last core op's output (with the core op's kind before it)."""
    info = source.int8
    names = {}
    for position, index in enumerate(parsed.const_f32_tensors()):
        origin = source.origins[position]
        if origin.key is not None:
            names[index] = _tree.tensor_name(tensors[origin.key]) + "/float"
        else:
            names[index] = "new_head/%s" % ("weights" if len(origin.shape) == 2 else "bias")
    nodes = info["op_nodes"]
    operators = source.operators or []
    for index, (op, node) in enumerate(zip(parsed.ops, nodes)):
        last = index + 1 == len(nodes) or nodes[index + 1] != node
        if node is None:
            base = "new_head"
        else:
            base = operators[node]["aliases"][-1] if operators and \
                operators[node]["aliases"] else "op%d" % node
        names[op.outputs[0]] = base if last and node is not None else \
            "%s/%d" % (base, index)
    return names
