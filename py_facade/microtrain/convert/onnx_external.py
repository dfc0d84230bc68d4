"""ONNX models that keep tensors in external data files (``model.onnx`` +
``model.onnx.data``): read from the directory of the .onnx file, as ``onnx.load`` does,
after checking what each tensor may read. onnx itself refuses a location outside that
directory, a symbolic link, a device or a FIFO, and an offset or length past the file's
end; here each tensor must also fit the core (at most MT_MAX_ELEMENTS elements of a known
type), and its read is bounded by its own size: a ``length`` the file leaves out is set
to the tensor's bytes, so a small model never reads a whole, huge file.
"""

import os

import numpy as np

from .graph import MAX_ELEMENTS, ConversionError


def _tensors(graph):
    """Every TensorProto of a graph and its subgraphs: initializers and attributes."""
    for tensor in graph.initializer:
        yield tensor
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("t"):
                yield attribute.t
            for tensor in attribute.tensors:
                yield tensor
            if attribute.HasField("g"):
                for tensor in _tensors(attribute.g):
                    yield tensor
            for subgraph in attribute.graphs:
                for tensor in _tensors(subgraph):
                    yield tensor


def _bounded(tensor, helper):
    """Set the tensor's external ``length`` to its bytes (refusing one that says otherwise
    or a tensor the core could not hold)."""
    from onnx import helper as onnx_helper
    count = 1
    for dim in tensor.dims:
        count *= int(dim)
    try:
        itemsize = np.dtype(onnx_helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
    except (KeyError, TypeError, ValueError):
        itemsize = 0
    if count < 0 or count > MAX_ELEMENTS or itemsize == 0 or \
            np.dtype(onnx_helper.tensor_dtype_to_np_dtype(tensor.data_type)).kind in "OSU":
        raise ConversionError("external tensor %r has dims %r of type %d: not a tensor the "
                              "core could hold (at most %d elements of a number type)"
                              % (tensor.name, list(tensor.dims), tensor.data_type,
                                 MAX_ELEMENTS))
    size = count * itemsize
    try:
        info = helper.ExternalDataInfo(tensor)
    except ValueError as error:
        raise ConversionError("external tensor %r: %s" % (tensor.name, error)) from None
    if info.length is not None and info.length != size:
        raise ConversionError("external tensor %r says it has %d bytes; dims %r of type %d "
                              "make %d" % (tensor.name, info.length, list(tensor.dims),
                                           tensor.data_type, size))
    for entry in tensor.external_data:
        if entry.key == "length":
            entry.value = str(size)
            break
    else:
        entry = tensor.external_data.add()
        entry.key, entry.value = "length", str(size)


def load(proto, path):
    """Read the tensors ``proto`` keeps in external data files from the directory of
    ``path``; True when there were any, a ConversionError when they cannot be read."""
    from onnx import external_data_helper as helper
    external = [t for t in _tensors(proto.graph) if helper.uses_external_data(t)]
    if not external:
        return False
    shown = ", ".join(repr(t.name) for t in external[:3]) + (", ..." if len(external) > 3
                                                              else "")
    if path is None:
        raise ConversionError("the model keeps %d tensors (%s) in external data files; give "
                              "the path of the .onnx file so they are read from beside it"
                              % (len(external), shown))
    for tensor in external:
        _bounded(tensor, helper)
    directory = os.path.dirname(os.path.abspath(os.fspath(path)))
    try:
        helper.load_external_data_for_model(proto, directory)
    except Exception as error:  # noqa: BLE001 - onnx's own message says which file
        raise ConversionError("cannot read the external data of %s (tensors %s) from %s: "
                              "%s: %s" % (path, shown, directory, type(error).__name__,
                                          error)) from None
    return True
