"""Write ``.tflite`` and ``.circle`` files from the core ops of a ``.mtm`` image.

``write_new`` builds a new file computing what an image computes. ``OpWriter`` adds an
image's ops to a file tree (``tflite_tree``): the whole image for a new file, or the float
part of an imported int8 model after the file's own int8 operators
(``tflite_write_back``). Circle shares TFLite's tables (see tflite_reader), so a ``.circle``
is the same flatbuffer with the identifier ``CIR0``. Activations get batch 1 in ``shape``
and -1 in ``shape_signature`` (LiteRT resizes them; onert trains batch-1 files with the
batch size given at compile).
"""

import numpy as np

from .. import ops as _ops
from ..nn import image as _image
from . import tflite_tree as _tree
from .graph import ConversionError
from .tflite_schema import schema as _tflite
from .tflite_tree import Table

IDENTIFIERS = {"tflite": b"TFL3", "circle": b"CIR0"}
_FLOAT32, _INT32, _INT8 = 0, 2, 9
_FUSED = {_image.FUSED_NONE: 0, _image.FUSED_RELU: 1, _image.FUSED_RELU6: 3}


def _ints(values):
    return np.asarray(list(values), dtype=np.int32)


class OpWriter:
    """Adds the ops of a parsed image to subgraph 0 of a file tree.

    Args:
        tree:       the tflite_tree Model
        parsed:     the image (nn.image.read_image)
        weights:    core tensor index -> float32 array, for every CONST f32 tensor
        tensor_of:  core tensor index -> the file's tensor already holding it
        names:      core tensor index -> the name a tensor made for it gets
        batch:      the batch dimension of ``shape_signature`` (-1: dynamic)
    """

    def __init__(self, tree, parsed, weights, tensor_of=None, names=None, batch=-1):
        self.tflite = _tflite()
        self.tree = tree
        self.graph = tree["Subgraphs"][0]
        self.parsed = parsed
        self.weights = weights
        self.tensor_of = dict(tensor_of or {})
        self.names = dict(names or {})
        self.batch = batch

    # ------------------------------------------------------------ tensors

    def add_tensor(self, shape, signature, tensor_type, payload, name, quant=None):
        fields = {"Shape": _ints(shape), "ShapeSignature": _ints(signature),
                  "Type": tensor_type, "Name": name.encode("utf-8"), "Buffer": 0}
        if payload is not None:
            fields["Buffer"] = _tree.add_buffer(self.tree, payload)
        if quant is not None:
            fields["Quantization"] = Table("QuantizationParameters", {
                "Scale": np.asarray(quant.scales, np.float32),
                "ZeroPoint": np.asarray(quant.zero_points, np.int64),
                "QuantizedDimension": int(quant.axis)})
        tensors = self.graph.fields.setdefault("Tensors", [])
        tensors.append(Table("Tensor", fields))
        return len(tensors) - 1

    def int_const(self, values, name):
        array = np.asarray(values, dtype="<i4")
        return self.add_tensor(array.shape, array.shape, _INT32, array.tobytes(), name)

    def tensor(self, index):
        """The file's tensor holding core tensor ``index`` (made on first use)."""
        if index in self.tensor_of:
            return self.tensor_of[index]
        spec = self.parsed.tensors[index]
        name = self.names.get(index, "t%d" % index)
        if spec.flags & _image.FLAG_CONST:
            if spec.dtype != _image.DTYPE_F32:
                raise ConversionError("tensor %d is an %s constant, which a new file does not "
                                      "hold (only an int8 model's own operators keep theirs)"
                                      % (index, "int8" if spec.dtype == _image.DTYPE_I8
                                         else "int32"))
            array = np.asarray(self.weights[index], dtype="<f4")
            made = self.add_tensor(spec.dims, spec.dims, _FLOAT32, array.tobytes(), name)
        else:
            tensor_type = _INT8 if spec.dtype == _image.DTYPE_I8 else _FLOAT32
            made = self.add_tensor((1,) + spec.dims, (self.batch,) + spec.dims, tensor_type,
                                   None, name, spec.quant)
        self.tensor_of[index] = made
        return made

    def opcode(self, builtin, version=1):
        codes = self.tree.fields.setdefault("OperatorCodes", [])
        for position, code in enumerate(codes):
            if max(code.get("BuiltinCode", 0), code.get("DeprecatedBuiltinCode", 0)) == builtin \
                    and code.get("Version", 1) == version and not code.get("CustomCode"):
                return position
        codes.append(Table("OperatorCode", {"DeprecatedBuiltinCode": min(builtin, 127),
                                            "BuiltinCode": builtin, "Version": version}))
        return len(codes) - 1

    # ------------------------------------------------------------ ops

    def _append(self, builtin, ins, outs, options=None, version=1):
        fields = {"OpcodeIndex": self.opcode(builtin, version), "Inputs": _ints(ins),
                  "Outputs": _ints(outs)}
        if options is not None:
            name, values = options
            fields["BuiltinOptionsType"] = getattr(self.tflite.BuiltinOptions, name)
            fields["BuiltinOptions"] = Table(name, values)
        self.graph.fields.setdefault("Operators", []).append(Table("Operator", fields))

    def add_op(self, index):
        """Append core op ``index`` of the image as TFLite operators."""
        B = self.tflite.BuiltinOperator
        op = self.parsed.ops[index]
        kind = op.op_type
        if kind in _ops.INFERENCE_ONLY and kind not in (_ops.QUANTIZE, _ops.DEQUANTIZE,
                                                        _ops.MEAN_S8):
            raise ConversionError("op %d (%s) has no TFLite writer: a new file holds the "
                                  "core's float ops (an int8 model imported from a .tflite "
                                  "exports through its session, keeping the file's int8 "
                                  "operators)" % (index, _ops.display_name(kind)))
        ins = [-1 if i is None else self.tensor(i) for i in op.inputs]
        if kind in (_ops.DENSE, _ops.CONV2D, _ops.DEPTHWISE_CONV2D):
            ins += [-1] * (3 - len(ins))
        outs = [self.tensor(o) for o in op.outputs]
        out_dims = self.parsed.tensors[op.outputs[0]].dims
        if kind == _ops.DENSE:
            self._append(B.FULLY_CONNECTED, ins, outs, ("FullyConnectedOptions", {}))
        elif kind in (_ops.CONV2D, _ops.DEPTHWISE_CONV2D):
            if ins[2] < 0:  # LiteRT's CONV_2D wants a bias: zeros, not a weight
                channels = out_dims[-1]
                ins[2] = self.add_tensor((channels,), (channels,), _FLOAT32,
                                         np.zeros(channels, "<f4").tobytes(),
                                         "zero_bias%d" % index)
            options = {"Padding": 0 if op.params[2] == _image.PADDING_SAME else 1,
                       "StrideH": op.params[1] & 0xFFFF, "StrideW": op.params[1] >> 16,
                       "DilationHFactor": 1, "DilationWFactor": 1,
                       "FusedActivationFunction": _FUSED[op.params[3]]}
            if kind == _ops.CONV2D:
                self._append(B.CONV_2D, ins, outs, ("Conv2DOptions", options))
            else:
                options["DepthMultiplier"] = 1
                self._append(B.DEPTHWISE_CONV_2D, ins, outs,
                             ("DepthwiseConv2DOptions", options))
        elif kind in (_ops.MAX_POOL2D, _ops.AVERAGE_POOL2D):
            if op.params[2] == _image.PADDING_EXPLICIT:
                raise ConversionError(
                    "op %d (%s) has explicit pads; TFLite's pools place SAME and VALID "
                    "windows only" % (index, _ops.name(kind)),
                    supported="pools with padding 'same' or 'valid' (export to .onnx "
                    "keeps explicit pads)")
            options = {"Padding": 0 if op.params[2] == _image.PADDING_SAME else 1,
                       "StrideH": op.params[1] & 0xFFFF, "StrideW": op.params[1] >> 16,
                       "FilterHeight": op.params[0] & 0xFFFF,
                       "FilterWidth": op.params[0] >> 16, "FusedActivationFunction": 0}
            code = B.MAX_POOL_2D if kind == _ops.MAX_POOL2D else B.AVERAGE_POOL_2D
            self._append(code, ins, outs, ("Pool2DOptions", options))
        elif kind in (_ops.GLOBAL_AVERAGE_POOL, _ops.MEAN_S8):
            axes = self.int_const([1, 2], "axes%d" % index)
            self._append(B.MEAN, ins + [axes], outs, ("ReducerOptions", {"KeepDims": False}),
                         2 if kind == _ops.MEAN_S8 else 1)
        elif kind == _ops.RESHAPE:
            shape = self.int_const([-1] + list(out_dims), "shape%d" % index)
            self._append(B.RESHAPE, ins + [shape], outs)
        elif kind == _ops.ADD:
            self._append(B.ADD, ins, outs, ("AddOptions", {"FusedActivationFunction": 0}))
        elif kind == _ops.CONCATENATION:
            self._append(B.CONCATENATION, ins, outs, (
                "ConcatenationOptions", {"Axis": len(out_dims), "FusedActivationFunction": 0}))
        elif kind == _ops.PAD:
            paddings = self.int_const([[0, 0], [op.params[0] & 0xFFFF, op.params[0] >> 16],
                                       [op.params[1] & 0xFFFF, op.params[1] >> 16], [0, 0]],
                                      "paddings%d" % index)
            self._append(B.PAD, ins + [paddings], outs)
        elif kind in (_ops.MUL, _ops.SUB):  # a constant operand broadcasts as in numpy
            name = "MulOptions" if kind == _ops.MUL else "SubOptions"
            self._append(B.MUL if kind == _ops.MUL else B.SUB, ins, outs,
                         (name, {"FusedActivationFunction": 0}))
        elif kind == _ops.TRANSPOSE:
            rank = len(self.parsed.tensors[op.inputs[0]].dims)
            perm = self.int_const([0] + [((op.params[0] >> (4 * k)) & 0xF) + 1
                                         for k in range(rank)], "perm%d" % index)
            self._append(B.TRANSPOSE, ins + [perm], outs)
        elif kind == _ops.SOFTMAX:
            self._append(B.SOFTMAX, ins, outs, ("SoftmaxOptions", {"Beta": 1.0}))
        elif kind == _ops.LEAKY_RELU:
            alpha = _image.f32_from_bits(op.params[0])
            self._append(B.LEAKY_RELU, ins, outs, ("LeakyReluOptions", {"Alpha": alpha}))
        elif kind in (_ops.RELU, _ops.RELU6, _ops.SIGMOID, _ops.TANH):
            code = {_ops.RELU: B.RELU, _ops.RELU6: B.RELU6, _ops.SIGMOID: B.LOGISTIC,
                    _ops.TANH: B.TANH}[kind]
            self._append(code, ins, outs)
        elif kind == _ops.DEQUANTIZE:  # int8 -> float32: TFLite's version 2
            self._append(B.DEQUANTIZE, ins, outs, version=2)
        elif kind == _ops.QUANTIZE:    # float32 -> int8: version 2
            self._append(B.QUANTIZE, ins, outs, version=2)
        else:
            raise ConversionError("op %d (%s) has no TFLite writer"
                                  % (index, _ops.display_name(kind)))


def empty_model(fmt):
    """The tree of a file with one empty subgraph (and buffer 0, empty, as converters
    write it)."""
    graph = Table("SubGraph", {"Tensors": [], "Operators": [], "Name": b"main"})
    return Table("Model", {"Version": 3 if fmt == "tflite" else 0, "OperatorCodes": [],
                           "Subgraphs": [graph], "Description": b"microtrain",
                           "Buffers": [Table("Buffer", {})]})


def write_new(image, weights, fmt):
    """A new .tflite/.circle file computing what the .mtm ``image`` computes with
    ``weights`` (mt_session_param order)."""
    parsed = _image.read_image(image)
    tree = empty_model(fmt)
    writer = OpWriter(tree, parsed, dict(zip(parsed.const_f32_tensors(), weights)))
    for spec in parsed.tensors:  # the tensors in the image's order (int8 ops' constants
        if not spec.flags & _image.FLAG_CONST or spec.dtype == _image.DTYPE_F32:  # refused
            writer.tensor(spec.index)                                             # by add_op)
    for index in range(len(parsed.ops)):
        writer.add_op(index)
    graph = tree["Subgraphs"][0]
    graph["Inputs"] = _ints(writer.tensor(i) for i in parsed.inputs)
    graph["Outputs"] = _ints(writer.tensor(i) for i in parsed.outputs)
    return _tree.write(tree, IDENTIFIERS[fmt])

