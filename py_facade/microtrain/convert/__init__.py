"""Bring your own model: import ``.tflite``, ``.circle`` and ``.onnx`` files (and PyTorch
modules through ONNX) into ``.mtm`` images, and export trained weights back.

    import microtrain
    model = microtrain.convert("model.tflite")        # or .circle, .onnx, bytes
    model.save("model.mtm")
    with microtrain.TrainSession(model.to_bytes()) as sess:
        ...
    microtrain.convert.export(image, sess.get_weights(), "trained.tflite", source=model.source)

What converts (docs/importers.md has the whole table): ONNX Gemm/MatMul, Conv (any pads,
through a PAD op), MaxPool/AveragePool, GlobalAveragePool/ReduceMean, Pad, Transpose,
BatchNormalization (folded), Relu/Clip/LeakyRelu/Sigmoid/Tanh/Softmax, Add/Sub/Mul of
activations, Add/Sub/Mul/Div by constants, Concat, Flatten/Reshape/(Un)Squeeze; TFLite
FULLY_CONNECTED, CONV_2D, DEPTHWISE_CONV_2D, the pools, MEAN (any axes), PAD/PADV2,
TRANSPOSE, the reshapes, the activations, ADD/SUB/MUL, CONCATENATION, from float32, float16,
dynamic-range (weights dequantized) and full-int8 files (``tflite_int8``: int8 layers frozen,
a float part that trains); constant subgraphs of both are evaluated. Imported .tflite layers
keep TensorFlow's names (``tflite_layers``). Images take the source runtime's layout (NCHW for ONNX; TRANSPOSE ops inside).
Anything else is a ConversionError naming the op, the attribute and what is supported.

Only the standard library and numpy are imported here: the parsers (``onnx``,
``flatbuffers`` + ``tflite``) load when a file of their format is read or written
(the ``convert`` extra: ``pip install '.[convert]'`` in microtrain's source tree; microtrain
is not on PyPI). This module is callable: ``microtrain.convert(x)``
is ``microtrain.convert.convert(x)``.
"""

import os
import struct
import sys
import types

from .. import _files
from .graph import CONTRADICTION_ERRORS, ConversionError, CorruptModel
from .model import ConvertedModel, SourceRecord

__all__ = ["convert", "load_model_bytes", "from_torch", "export", "ConvertedModel",
           "SourceRecord", "ConversionError", "CorruptModel", "detect_format", "FORMATS"]

FORMATS = ("tflite", "circle", "onnx")
# What a reader may raise on a file that contradicts itself where no check names the part
# first; the last resort, which the fuzz (tests/convert/fuzz_importers.py) never reaches.
_READER_ERRORS = CONTRADICTION_ERRORS + (struct.error,)
_EXTENSIONS = {".tflite": "tflite", ".circle": "circle", ".onnx": "onnx"}


def detect_format(data, path=None):
    """"tflite", "circle" or "onnx" from a file's bytes (its extension as a hint), or
    None for anything else (an .mtm image has the magic "MTM1")."""
    if bytes(data[:4]) == _image_magic():
        return None
    ident = bytes(data[4:8])
    if ident == b"TFL3":
        return "tflite"
    if ident == b"CIR0":
        return "circle"
    if path is not None:
        extension = os.path.splitext(str(path))[1].lower()
        if extension in _EXTENSIONS:
            return _EXTENSIONS[extension]
    if _looks_like_onnx(data):
        return "onnx"
    return None


# ModelProto's fields (onnx.proto) and their wire types: 0 varint, 2 length-delimited
_ONNX_FIELDS = {1: 0, 2: 2, 3: 2, 4: 2, 5: 0, 6: 2, 7: 2, 8: 2, 14: 2, 20: 2, 25: 2, 26: 2}
_SNIFFED_FIELDS = 4096


def _varint(data, position):
    """(value, next position) of the protobuf varint at ``position``, or (None, None)."""
    value = 0
    for shift in range(0, 70, 7):
        if position >= len(data):
            return None, None
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
    return None, None


def _looks_like_onnx(data):
    """Whether ``data`` reads as an ONNX ModelProto: every top-level field one the message
    has, with its wire type, each length inside the data, and a graph among them (its first
    4096 fields are read; a model has a dozen). Random bytes almost never pass."""
    data = memoryview(data)
    position, graph = 0, False
    for _ in range(_SNIFFED_FIELDS):
        if position == len(data):
            return graph
        key, position = _varint(data, position)
        if key is None or _ONNX_FIELDS.get(key >> 3) != key & 7:
            return False
        value, position = _varint(data, position)
        if value is None:
            return False
        if key & 7 == 2:
            position += value
            if position > len(data):
                return False
        graph = graph or key >> 3 == 7
    return graph


def _image_magic():
    from ..nn.image import MAGIC
    return MAGIC


def _read(path_or_bytes):
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return bytes(path_or_bytes), None
    path = os.fspath(path_or_bytes)
    return _files.read_file(path, "a model file"), path  # a regular file only


def convert(path_or_bytes, format=None, source_path=None, train_from=None, new_head=None,
            int8_input=False, head_seed=0, int8_after=False, int8_train=False,
            int8_master_weights=False, int8_head=False):
    """Import a model file into a ``ConvertedModel``.

    Args:
        path_or_bytes: a path to a .tflite, .circle or .onnx file, or its bytes
        format:        "tflite", "circle" or "onnx" to skip detection
        source_path:   where the bytes were read from: an ONNX model with external data
                       (``model.onnx`` + ``model.onnx.data``) finds it beside that path

    An int8 (full-integer quantized) .tflite keeps its int8 layers frozen as the core's
    int8 ops, bit for bit LiteRT's reference kernels, and a float part that trains
    (``convert.tflite_int8``). For .tflite files:
        train_from: an operator of the file, by index (``microtrain info`` lists them) or
                    layer name ("block_15", "dense_1"): an int8 model's float part begins
                    there (default: its own last layer with weights, its head); a float
                    model's weights before it stay constants, never trained
        new_head:   a number of classes: cut after the last [H, W, C] activation and
                    attach mean -> Dense(new_head) -> Softmax (weights from head_seed)
        int8_input: (int8 models) the model input is the int8 tensor of the leading
                    QUANTIZE (the caller quantizes), so no float copy of the input is held
        int8_after: (int8 models, with train_from) the operator train_from names alone
                    runs in float and trains; the int8 operators after it stay int8 and
                    frozen, the gradient passing through them to it (the core's int8
                    backward: docs/model_format.md, "Gradients through int8 ops")
        int8_train: (int8 models, with train_from) the operators from train_from on stay
                    int8 and their int8 weights and int32 biases train in place (1 byte a
                    weight in the arena, per-channel scales fixed; SGD with quantization-
                    aware scaling: docs/guides/int8.md, "Training int8 layers in place")
        int8_master_weights: (with int8_train) those int8 weights keep a float master copy
                    in the arena (4 bytes a weight more) that the update changes, the weight
                    its rounding, so steps under half a quantization step accumulate
        int8_head:  (int8 models, with new_head) the new head is an int8 FullyConnected
                    trained in place (QAS, SGD only) on the int8 mean's output: 1 byte a
                    weight in the arena instead of a float weight and its gradient, so it
                    trains under budgets its float weight does not fit (sparse_update,
                    docs/memory.md); its logits are int8 at scale 1/8 ([-16, 15.875])
    A dynamic-range ("hybrid") .tflite (int8 weights, float activations) imports as a float
    model, its weights dequantized (``model.source.notes`` says so).

    Raises ConversionError (a ValueError) naming the op, its index, the attribute and
    what is supported when the model holds anything the core cannot run exactly; an
    ONNX model whose external data cannot be read (given as bytes, or the data file
    missing) is refused the same way. A hostile or corrupt file is refused by name too,
    within a memory and time budget (docs/hostile_importers.md): constant folding past
    its budget, an ONNX graph that is not valid, a .tflite file that contradicts itself
    (CorruptModel). The image returned is one the core loads.
    """
    data, path = _read(path_or_bytes)
    path = path if path is not None else source_path
    fmt = format or detect_format(data, path)
    if fmt not in FORMATS:
        raise ConversionError("%s is not a .tflite, .circle or .onnx model"
                              % (path or "the data"), supported=", ".join(FORMATS))
    int8_options = train_from is not None or new_head is not None or int8_input or int8_after
    if int8_train and (train_from is None or int8_after):
        raise ConversionError("int8_train trains the int8 operators from train_from on in "
                              "place; it needs train_from, and not int8_after",
                              attribute="int8_train",
                              supported="convert(path, train_from=<op>, int8_train=True)")
    if int8_master_weights and not int8_train:
        raise ConversionError("int8_master_weights keeps float copies of the int8 weights "
                              "int8_train trains in place; it needs int8_train=True",
                              attribute="int8_master_weights",
                              supported="convert(path, train_from=<op>, int8_train=True, "
                              "int8_master_weights=True)")
    if int8_head and new_head is None:
        raise ConversionError("int8_head makes the new head int8, trained in place; it needs "
                              "new_head", attribute="int8_head",
                              supported="convert(path, new_head=N, int8_head=True)")
    if int8_after and (train_from is None or new_head is not None):
        raise ConversionError("int8_after keeps the operators after train_from int8; it "
                              "needs train_from and no new_head", attribute="int8_after",
                              supported="convert(path, train_from=<op>, int8_after=True)")
    kind = "float"
    if fmt == "tflite":
        from . import tflite_int8, tflite_reader
        kind = _readable(fmt, tflite_reader.model_kind, data)
        if kind == "int8":
            builder, inputs, outputs, extra = _readable(
                fmt, tflite_int8.read, data, fmt, train_from, new_head, int8_input, head_seed,
                details=True, int8_after=int8_after,
                int8_train="master" if int8_master_weights else int8_train, int8_head=int8_head)
            layouts = [[{"shape": builder.tensors[i].dims, "core_shape":
                         builder.tensors[i].dims, "transpose": None} for i in indices]
                       for indices in (builder.inputs, builder.outputs)]
            image = _image_of(builder)
            source = SourceRecord("tflite-int8", data, builder.param_origins(), builder.folds,
                                  inputs, outputs, layouts[0], layouts[1], builder.op_sources,
                                  builder.layers(), extra, extra.pop("notes"),
                                  _operators(builder))
            return ConvertedModel(image, source)
    if int8_after or int8_train or int8_head:
        name = "int8_after" if int8_after else ("int8_train" if int8_train else "int8_head")
        raise ConversionError("%s applies to int8 .tflite models; this is a %s %s "
                              "model" % (name, kind, fmt), attribute=name,
                              supported="a full-integer (int8) .tflite file")
    if fmt == "tflite" and (train_from is not None or new_head is not None):
        # a float (or dynamic-range) file: weights before train_from stay constants, a new
        # head replaces the model's after its last [H, W, C] activation
        from . import tflite_int8
        builder, inputs, outputs, extra = _readable(
            fmt, tflite_int8.read, data, fmt, train_from, new_head, int8_input, head_seed,
            details=True, float_model=True)
        layouts = [[{"shape": builder.tensors[i].dims, "core_shape": builder.tensors[i].dims,
                     "transpose": None} for i in indices]
                   for indices in (builder.inputs, builder.outputs)]
        image = _image_of(builder)
        notes = extra.pop("notes")
        source = SourceRecord(fmt, data, builder.param_origins(), builder.folds, inputs,
                              outputs, layouts[0], layouts[1], builder.op_sources,
                              builder.layers(), extra if new_head is not None else None,
                              notes, _operators(builder))
        return ConvertedModel(image, source)
    if int8_options:
        raise ConversionError("train_from, new_head and int8_input apply to .tflite models; "
                              "int8_input to int8 ones; this is a %s %s model" % (kind, fmt),
                              supported="a .tflite file")
    notes = []
    if fmt in ("tflite", "circle"):
        from . import tflite_reader
        builder, inputs, outputs, notes = _readable(fmt, tflite_reader.read, data, fmt,
                                                    details=True)
        input_layouts = [{"shape": builder.tensors[i].dims, "core_shape":
                          builder.tensors[i].dims, "transpose": None}
                         for i in builder.inputs]
        output_layouts = [{"shape": builder.tensors[i].dims, "core_shape":
                           builder.tensors[i].dims, "transpose": None}
                          for i in builder.outputs]
    else:
        from . import onnx_external, onnx_reader
        import onnx
        try:
            proto = onnx.load_model_from_string(data)
        except Exception as error:  # noqa: BLE001 - the protobuf parser's own message
            raise ConversionError("not a readable ONNX model (%s)" % error) from None
        if onnx_external.load(proto, path):
            data = proto.SerializeToString()  # export writes one self-contained file
        try:
            builder, inputs, outputs, input_layouts, output_layouts = onnx_reader.read(
                proto, len(data))
        except ConversionError:
            raise
        except _READER_ERRORS as error:  # the reader names the node where it can
            raise ConversionError("not a readable ONNX model: inconsistent or corrupt graph "
                                  "(%s: %s)" % (type(error).__name__, error)) from None
    image = _image_of(builder)
    source = SourceRecord(fmt, data, builder.param_origins(), builder.folds, inputs, outputs,
                          input_layouts, output_layouts, builder.op_sources, builder.layers(),
                          notes=notes, operators=_operators(builder))
    return ConvertedModel(image, source)


def _readable(fmt, function, *args, **kwargs):
    """``function(*args, **kwargs)``: the readers check the whole file first
    (tflite_checks) and refuse what contradicts itself by name; anything else they raise
    still becomes a ConversionError (MemoryError and RecursionError are not caught: the
    budgets exist so that they cannot happen)."""
    try:
        return function(*args, **kwargs)
    except ConversionError:
        raise
    except _READER_ERRORS as error:
        raise ConversionError("not a readable .%s model: truncated or corrupt (%s: %s)"
                              % (fmt, type(error).__name__, error)) from None


def _image_of(builder):
    """The builder's .mtm image, checked by the core as a session would check it: a
    conversion gives an image that loads, or refuses with the reason. The importers refuse
    what they know the core cannot hold (shapes, params, quantization: graph.py); this
    catches the rest, naming the source op of the core op at fault."""
    image = builder.image()
    try:
        from ..backend import loader
        backend = loader.load()
    except (ImportError, OSError):  # no core library beside the package: nothing to ask
        return image
    from ..errors import MicrotrainError
    try:
        backend.describe(image)
    except MicrotrainError as error:
        op = error.op_index if error.op_index is not None else -1
        source = builder.op_sources[op] if 0 <= op < len(builder.op_sources) else None
        raise ConversionError("the core refuses the image this conversion wrote (%s)%s; "
                              "please report the model: the importer should have refused "
                              "it by name" % (error.message, "" if source is None else
                                              ", converted from %s" % source)) from None
    return image


def _operators(builder):
    """The file's operators as the reader named them (TFLite), or None."""
    keys = sorted(key for key in builder.layer_info if isinstance(key, int))
    return [builder.layer_info[key] for key in keys] or None


def load_model_bytes(path):
    """(.mtm bytes, SourceRecord) for a .tflite/.circle/.onnx file: what ``TrainSession``
    needs to open a foreign model and export it back."""
    model = convert(path)
    return model.to_bytes(), model.source


def from_torch(module, example_input, dynamo=False, opset_version=None, **export_kwargs):
    """Convert a ``torch.nn.Module`` through ``torch.onnx.export`` (torch is optional: it
    is imported here). ``example_input`` is a tensor or a tuple of them (batch first).
    The module is exported in eval mode (BatchNorm statistics, no Dropout) and put back
    in the mode it was in. ``dynamo=True`` uses the torch.export-based exporter (needs
    onnxscript); the default is the TorchScript one."""
    import io
    import torch
    example = example_input if isinstance(example_input, tuple) else (example_input,)
    buffer = io.BytesIO()
    was_training = module.training
    module.eval()
    try:
        kwargs = dict(export_kwargs)
        if opset_version is not None:
            kwargs["opset_version"] = opset_version
        with torch.no_grad():
            torch.onnx.export(module, example, buffer, dynamo=dynamo, **kwargs)
    finally:
        module.train(was_training)
    return convert(buffer.getvalue(), format="onnx")


def export(model_image_bytes, weights, path, format=None, source=None):
    """Write a .tflite/.circle/.onnx file (see ``microtrain.convert.exporter.export``)."""
    from . import exporter
    return exporter.export(model_image_bytes, weights, path, format=format, source=source)


class _CallableModule(types.ModuleType):
    """``microtrain.convert(path)`` calls ``convert``: the package is the function too."""

    def __call__(self, *args, **kwargs):
        return convert(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
