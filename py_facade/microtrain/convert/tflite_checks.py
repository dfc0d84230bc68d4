"""A .tflite/.circle file checked whole before the readers follow it: every offset, length
and union inside the file (``tflite_tree.read`` reads every field of every table and names
the one that is not), then what the readers take for granted: tensor, buffer and
operator-code indices in range, shapes without negative dimensions, constant buffers
exactly as large as their tensors' shapes say, quantization parameters that agree with
each other. A failure is a ConversionError naming the part of the file that is wrong
("subgraph 0, operator 3 (ADD): input 1 is tensor -5 ...").

After ``verify(data)`` the readers' flatbuffers accessors read only bytes the check read,
so they cannot raise ``struct.error`` and friends on a corrupt file.
"""

import numpy as np

from . import tflite_tree
from .graph import ConversionError
from .tflite_schema import schema

# TensorType -> bytes per element (INT4: two per byte; strings, resources: unchecked)
_ITEM_BYTES = {0: 4, 1: 2, 2: 4, 3: 1, 4: 8, 6: 1, 7: 2, 8: 8, 9: 1, 10: 8, 11: 16, 12: 8,
               15: 4, 16: 2, 18: 2}
_INT4 = 17
MAX_RANK = 8  # TFLite's RESHAPE and friends take at most 8 dimensions (kernels: 4 to 6)

_verified = [None]  # the bytes last verified (convert reads a file with several readers)


def verify(data):
    """Check the file's bytes (see the module doc); a ConversionError names what is wrong."""
    data = bytes(data)
    if _verified[0] is not None and _verified[0] == data:
        return
    check(tflite_tree.read(data, writable=False), len(data))
    _verified[0] = data


def _ints(table, field):
    return [int(v) for v in np.asarray(table.get(field, np.zeros(0, np.int32))).ravel()]


def _tensor_label(graph_index, index, tensor):
    name = tflite_tree.tensor_name(tensor)
    return "subgraph %d, tensor %d%s" % (graph_index, index, " (%r)" % name if name else "")


def _check_indices(values, count, where, what, optional):
    low = -1 if optional else 0
    for position, value in enumerate(values):
        if not low <= value < count:
            raise ConversionError("%s: %s %d is tensor %d; a tensor index is 0..%d%s"
                                  % (where, what, position, value, count - 1,
                                     ", or -1 for an absent optional one" if optional else ""))


def _check_tensor(tensor, label, buffers, data_bytes):
    shape = _ints(tensor, "Shape")
    if len(shape) > MAX_RANK:
        raise ConversionError("%s: a shape of %d dimensions; TFLite's tensors have at most %d"
                              % (label, len(shape), MAX_RANK))
    if any(d < 0 for d in shape):
        raise ConversionError("%s: shape %r has a negative dimension" % (label, shape))
    signature = _ints(tensor, "ShapeSignature")
    if any(d < -1 for d in signature) or (signature and len(signature) != len(shape)):
        raise ConversionError("%s: shape signature %r does not fit shape %r"
                              % (label, signature, shape))
    buffer_index = int(tensor.get("Buffer", 0))
    if not 0 <= buffer_index < max(len(buffers), 1):
        raise ConversionError("%s: buffer %d, of %d" % (label, buffer_index, len(buffers)))
    buffer = buffers[buffer_index] if buffers else None
    held = _buffer_bytes(buffer, buffer_index, data_bytes)  # None: no data (an activation)
    item = _ITEM_BYTES.get(int(tensor.get("Type", 0)))
    count = 1
    for dim in shape:
        count *= dim
    needed = None if item is None else count * item
    if int(tensor.get("Type", 0)) == _INT4:
        needed = (count + 1) // 2
    if held is not None and needed is not None and held != needed:
        raise ConversionError("%s: shape %r of %d-byte elements needs %d bytes; its buffer "
                              "%d holds %d" % (label, shape, item or 1, needed, buffer_index,
                                               held))
    _check_quantization(tensor.get("Quantization"), shape, label)


def _buffer_bytes(buffer, index, data_bytes):
    """Bytes of a buffer's data, None when it holds none (as tflite_reader.buffer_span
    reads it); data past the flatbuffer (Offset/Size) must lie in the file."""
    if buffer is None:
        return None
    offset, size = int(buffer.get("Offset", 0)), int(buffer.get("Size", 0))
    if offset > 1:
        if offset + size > data_bytes:
            raise ConversionError("buffer %d: bytes %d..%d lie past the file's %d"
                                  % (index, offset, offset + size, data_bytes))
        return size
    held = int(np.asarray(buffer.get("Data", np.zeros(0, np.uint8))).size)
    return held or None


def _check_quantization(quant, shape, label):
    if quant is None:
        return
    scales = np.asarray(quant.get("Scale", np.zeros(0, np.float32))).ravel()
    zero_points = np.asarray(quant.get("ZeroPoint", np.zeros(0, np.int64))).ravel()
    if zero_points.size not in (0, scales.size):
        raise ConversionError("%s: %d scales but %d zero points" % (label, scales.size,
                                                                  zero_points.size))
    axis = int(quant.get("QuantizedDimension", 0))
    if scales.size > 1 and (not 0 <= axis < len(shape) or shape[axis] != scales.size):
        raise ConversionError("%s: %d scales along axis %d of shape %r" % (
            label, scales.size, axis, shape))


def _op_name(code):
    builtin = max(int(code.get("BuiltinCode", 0)), int(code.get("DeprecatedBuiltinCode", 0)))
    names = {v: k for k, v in vars(schema().BuiltinOperator).items() if not k.startswith("_")}
    return names.get(builtin, "builtin %d" % builtin)


def check(tree, data_bytes):
    """The index and size checks of the module doc on a tree ``tflite_tree.read`` gave."""
    buffers = tree.get("Buffers", [])
    codes = tree.get("OperatorCodes", [])
    graphs = tree.get("Subgraphs", [])
    if not graphs:
        raise ConversionError("the file has no subgraph")
    for position, metadata in enumerate(tree.get("Metadata", [])):
        if not 0 <= int(metadata.get("Buffer", 0)) < max(len(buffers), 1):
            raise ConversionError("metadata %d names buffer %d, of %d"
                                  % (position, int(metadata.get("Buffer", 0)), len(buffers)))
    for g, graph in enumerate(graphs):
        tensors = graph.get("Tensors", [])
        for index, tensor in enumerate(tensors):
            _check_tensor(tensor, _tensor_label(g, index, tensor), buffers, data_bytes)
        where = "subgraph %d" % g
        _check_indices(_ints(graph, "Inputs"), len(tensors), where, "input", False)
        _check_indices(_ints(graph, "Outputs"), len(tensors), where, "output", False)
        if not _ints(graph, "Outputs"):
            raise ConversionError("%s has no output" % where)
        for o, op in enumerate(graph.get("Operators", [])):
            code = int(op.get("OpcodeIndex", 0))
            where = "subgraph %d, operator %d" % (g, o)
            if not 0 <= code < len(codes):
                raise ConversionError("%s: operator code %d, of %d" % (where, code, len(codes)))
            where += " (%s)" % _op_name(codes[code])
            _check_indices(_ints(op, "Inputs"), len(tensors), where, "input", True)
            _check_indices(_ints(op, "Outputs"), len(tensors), where, "output", False)
            if not _ints(op, "Outputs"):
                raise ConversionError("%s has no output" % where)
            _check_indices(_ints(op, "Intermediates"), len(tensors), where, "intermediate",
                           True)
    for s, signature in enumerate(tree.get("SignatureDefs", [])):
        graph_index = int(signature.get("SubgraphIndex", 0))
        if not 0 <= graph_index < len(graphs):
            raise ConversionError("signature %d names subgraph %d, of %d"
                                  % (s, graph_index, len(graphs)))
        count = len(graphs[graph_index].get("Tensors", []))
        for name in ("Inputs", "Outputs"):
            _check_indices([int(m.get("TensorIndex", 0)) for m in signature.get(name, [])],
                           count, "signature %d" % s, name.lower()[:-1], False)
