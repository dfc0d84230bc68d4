"""Write ``.tflite`` and ``.circle`` files: trained weights back into the original file,
or a new file from any ``.mtm`` image.

Write-back patches the weight bytes in place (the flatbuffer's layout does not change:
the same shapes, the same sizes), so everything else in the file stays byte for byte.
A new file is built with the flatbuffers ``Builder`` and the builder functions of the
``tflite`` package's generated schema code; circle shares those tables (see
tflite_reader), so a ``.circle`` is the same flatbuffer with the identifier ``CIR0``.
Activations get batch 1 in ``shape`` and -1 in ``shape_signature`` (LiteRT resizes
them; onert trains batch-1 files with the batch size given at compile).
"""

import numpy as np

from .. import ops as _ops
from ..nn import image as _image
from .graph import ConversionError
from .tflite_reader import _tflite, buffer_span, parse

_IDENTIFIERS = {"tflite": b"TFL3", "circle": b"CIR0"}


def write_back(source, weights, fmt):
    """The original file's bytes with ``weights`` (mt_session_param order) in place of
    its float32 weights; folded MUL/ADD/SUB constants are set to their identity."""
    data = bytearray(source.data)
    model = parse(data)
    graph = model.Subgraphs(0)
    written = {}

    def put(tensor_index, array, what):
        tensor = graph.Tensors(tensor_index)
        start, size = buffer_span(model, data, tensor.Buffer())
        payload = np.ascontiguousarray(array, dtype="<f4").tobytes()
        if start is None or size != len(payload):
            raise ConversionError("cannot write %s into tensor %d: its buffer holds %d bytes, "
                                  "the weight %d" % (what, tensor_index, size, len(payload)))
        buffer = tensor.Buffer()
        if buffer in written and written[buffer] != payload:
            raise ConversionError("tensors share buffer %d but trained to different values; "
                                  "export a new file instead (source=None)" % buffer)
        written[buffer] = payload
        data[start:start + size] = payload

    for position, (origin, weight) in enumerate(zip(source.origins, weights)):
        if origin.frozen:
            continue  # a MUL/SUB constant: never trained, the file holds it as it was
        if origin.key is None:
            raise ConversionError("weight %d is a bias the conversion created (a folded "
                                  "constant); the original file has no place for it: export "
                                  "a new file instead (source=None)" % position)
        put(origin.key, origin.to_source(weight), "weight %d" % position)
    for fold in source.folds:
        identity = 1.0 if fold["kind"] == "mul" else 0.0
        for key in fold["keys"]:
            tensor = graph.Tensors(key)
            shape = tuple(int(d) for d in np.atleast_1d(tensor.ShapeAsNumpy())) \
                if tensor.ShapeLength() else ()
            put(key, np.full(shape, identity, np.float32), "the folded %s constant"
                % fold["kind"])
    return bytes(data)


class _Writer:
    def __init__(self, parsed, weights):
        import flatbuffers
        self.tflite = _tflite()
        self.b = flatbuffers.Builder(1024)
        self.parsed = parsed
        self.weights = weights          # core tensor index -> float32 array
        self.buffers = [b""]            # buffer 0: empty, as converters write
        self.tensors = []               # (shape, signature, type, buffer, name)
        self.tensor_of = {}
        self.opcodes = []
        self.operators = []             # (opcode index, inputs, outputs, options)

    def add_tensor(self, shape, signature, tensor_type, payload, name):
        buffer = 0
        if payload is not None:
            self.buffers.append(payload)
            buffer = len(self.buffers) - 1
        self.tensors.append((list(shape), list(signature), tensor_type, buffer, name))
        return len(self.tensors) - 1

    def int_const(self, values, name):
        array = np.asarray(values, dtype="<i4")
        return self.add_tensor(array.shape, array.shape, 2, array.tobytes(), name)

    def opcode(self, builtin):
        if builtin not in self.opcodes:
            self.opcodes.append(builtin)
        return self.opcodes.index(builtin)

    def build_tensors(self):
        for t in self.parsed.tensors:
            name = "t%d" % t.index
            if t.flags & _image.FLAG_CONST:
                array = np.asarray(self.weights[t.index], dtype="<f4")
                self.tensor_of[t.index] = self.add_tensor(t.dims, t.dims, 0, array.tobytes(),
                                                          name)
            else:
                self.tensor_of[t.index] = self.add_tensor((1,) + t.dims, (-1,) + t.dims, 0,
                                                          None, name)

    def build_ops(self):
        tfl = self.tflite
        B = tfl.BuiltinOperator
        fused = {_image.FUSED_NONE: 0, _image.FUSED_RELU: 1, _image.FUSED_RELU6: 3}
        for index, op in enumerate(self.parsed.ops):
            ins = [-1 if i is None else self.tensor_of[i] for i in op.inputs]
            ins += [-1] * (3 - len(ins)) if op.op_type in (_ops.DENSE, _ops.CONV2D,
                                                            _ops.DEPTHWISE_CONV2D) else []
            outs = [self.tensor_of[o] for o in op.outputs]
            out_dims = self.parsed.tensors[op.outputs[0]].dims
            kind = op.op_type
            if kind == _ops.DENSE:
                self.operators.append((B.FULLY_CONNECTED, ins, outs,
                                       ("FullyConnectedOptions", {})))
            elif kind in (_ops.CONV2D, _ops.DEPTHWISE_CONV2D):
                if ins[2] < 0:  # LiteRT's CONV_2D wants a bias: zeros, not a weight
                    channels = self.parsed.tensors[op.outputs[0]].dims[-1]
                    ins[2] = self.add_tensor((channels,), (channels,), 0,
                                             np.zeros(channels, "<f4").tobytes(),
                                             "zero_bias%d" % index)
                sh, sw = op.params[1] & 0xFFFF, op.params[1] >> 16
                options = {"Padding": 0 if op.params[2] == _image.PADDING_SAME else 1,
                           "StrideH": sh, "StrideW": sw, "DilationHFactor": 1,
                           "DilationWFactor": 1,
                           "FusedActivationFunction": fused[op.params[3]]}
                if kind == _ops.CONV2D:
                    self.operators.append((B.CONV_2D, ins, outs, ("Conv2DOptions", options)))
                else:
                    options["DepthMultiplier"] = 1
                    self.operators.append((B.DEPTHWISE_CONV_2D, ins, outs,
                                           ("DepthwiseConv2DOptions", options)))
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
                self.operators.append((code, ins, outs, ("Pool2DOptions", options)))
            elif kind == _ops.GLOBAL_AVERAGE_POOL:
                axes = self.int_const([1, 2], "axes%d" % index)
                self.operators.append((B.MEAN, ins + [axes], outs,
                                       ("ReducerOptions", {"KeepDims": False})))
            elif kind == _ops.RESHAPE:
                shape = self.int_const([-1] + list(out_dims), "shape%d" % index)
                self.operators.append((B.RESHAPE, ins + [shape], outs, None))
            elif kind == _ops.ADD:
                self.operators.append((B.ADD, ins, outs, ("AddOptions",
                                                          {"FusedActivationFunction": 0})))
            elif kind == _ops.CONCATENATION:
                self.operators.append((B.CONCATENATION, ins, outs, (
                    "ConcatenationOptions", {"Axis": len(out_dims),
                                             "FusedActivationFunction": 0})))
            elif kind == _ops.PAD:
                paddings = self.int_const([[0, 0], [op.params[0] & 0xFFFF, op.params[0] >> 16],
                                           [op.params[1] & 0xFFFF, op.params[1] >> 16],
                                           [0, 0]], "paddings%d" % index)
                self.operators.append((B.PAD, ins + [paddings], outs, None))
            elif kind in (_ops.MUL, _ops.SUB):  # a constant operand broadcasts as in numpy
                if kind == _ops.MUL:
                    self.operators.append((B.MUL, ins, outs, ("MulOptions",
                                                              {"FusedActivationFunction": 0})))
                else:
                    self.operators.append((B.SUB, ins, outs, ("SubOptions",
                                                              {"FusedActivationFunction": 0})))
            elif kind == _ops.TRANSPOSE:
                rank = len(self.parsed.tensors[op.inputs[0]].dims)
                perm = self.int_const([0] + [((op.params[0] >> (4 * k)) & 0xF) + 1
                                             for k in range(rank)], "perm%d" % index)
                self.operators.append((B.TRANSPOSE, ins + [perm], outs, None))
            elif kind == _ops.SOFTMAX:
                self.operators.append((B.SOFTMAX, ins, outs, ("SoftmaxOptions",
                                                              {"Beta": 1.0})))
            elif kind == _ops.LEAKY_RELU:
                alpha = _image.f32_from_bits(op.params[0])
                self.operators.append((B.LEAKY_RELU, ins, outs, ("LeakyReluOptions",
                                                                 {"Alpha": alpha})))
            elif kind in (_ops.RELU, _ops.RELU6, _ops.SIGMOID, _ops.TANH):
                code = {_ops.RELU: B.RELU, _ops.RELU6: B.RELU6, _ops.SIGMOID: B.LOGISTIC,
                        _ops.TANH: B.TANH}[kind]
                self.operators.append((code, ins, outs, None))
            else:
                raise ConversionError("op %d (%s) has no TFLite writer" % (index,
                                                                           _ops.name(kind)))

    # ------------------------------------------------------------ serialisation

    def _int_vector(self, values):
        self.b.StartVector(4, len(values), 4)
        for value in reversed(values):
            self.b.PrependInt32(int(value))
        return self.b.EndVector()

    def _table_vector(self, offsets):
        self.b.StartVector(4, len(offsets), 4)
        for offset in reversed(offsets):
            self.b.PrependUOffsetTRelative(offset)
        return self.b.EndVector()

    def _options(self, spec):
        tfl = self.tflite
        name, fields = spec
        getattr(tfl, name + "Start")(self.b)
        for field, value in fields.items():
            getattr(tfl, name + "Add" + field)(self.b, value)
        return getattr(tfl.BuiltinOptions, name), getattr(tfl, name + "End")(self.b)

    def finish(self, fmt):
        tfl, b = self.tflite, self.b
        buffer_offsets = []
        for payload in self.buffers:
            data = None
            if payload:
                b.StartVector(1, len(payload), 16)  # schema: force_align 16
                b.head -= len(payload)
                b.Bytes[b.head:b.head + len(payload)] = payload
                data = b.EndVector()
            tfl.BufferStart(b)
            if data is not None:
                tfl.BufferAddData(b, data)
            buffer_offsets.append(tfl.BufferEnd(b))
        tensor_offsets = []
        for shape, signature, tensor_type, buffer, name in self.tensors:
            name_offset = b.CreateString(name)
            shape_offset = self._int_vector(shape)
            signature_offset = self._int_vector(signature)
            tfl.TensorStart(b)
            tfl.TensorAddShape(b, shape_offset)
            tfl.TensorAddType(b, tensor_type)
            tfl.TensorAddBuffer(b, buffer)
            tfl.TensorAddName(b, name_offset)
            tfl.TensorAddShapeSignature(b, signature_offset)
            tensor_offsets.append(tfl.TensorEnd(b))
        operator_offsets = []
        for code, ins, outs, options in self.operators:
            options_type, options_offset = (0, None) if options is None else \
                self._options(options)
            in_offset, out_offset = self._int_vector(ins), self._int_vector(outs)
            tfl.OperatorStart(b)
            tfl.OperatorAddOpcodeIndex(b, self.opcode(code))
            tfl.OperatorAddInputs(b, in_offset)
            tfl.OperatorAddOutputs(b, out_offset)
            if options_offset is not None:
                tfl.OperatorAddBuiltinOptionsType(b, options_type)
                tfl.OperatorAddBuiltinOptions(b, options_offset)
            operator_offsets.append(tfl.OperatorEnd(b))
        graph_inputs = self._int_vector([self.tensor_of[i] for i in self.parsed.inputs])
        graph_outputs = self._int_vector([self.tensor_of[i] for i in self.parsed.outputs])
        tensors = self._table_vector(tensor_offsets)
        operators = self._table_vector(operator_offsets)
        name = b.CreateString("main")
        tfl.SubGraphStart(b)
        tfl.SubGraphAddTensors(b, tensors)
        tfl.SubGraphAddInputs(b, graph_inputs)
        tfl.SubGraphAddOutputs(b, graph_outputs)
        tfl.SubGraphAddOperators(b, operators)
        tfl.SubGraphAddName(b, name)
        subgraph = tfl.SubGraphEnd(b)
        opcode_offsets = []
        for code in self.opcodes:
            tfl.OperatorCodeStart(b)
            tfl.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
            tfl.OperatorCodeAddBuiltinCode(b, code)
            tfl.OperatorCodeAddVersion(b, 1)
            opcode_offsets.append(tfl.OperatorCodeEnd(b))
        opcodes = self._table_vector(opcode_offsets)
        subgraphs = self._table_vector([subgraph])
        buffers = self._table_vector(buffer_offsets)
        description = b.CreateString("microtrain")
        tfl.ModelStart(b)
        tfl.ModelAddVersion(b, 3 if fmt == "tflite" else 0)
        tfl.ModelAddOperatorCodes(b, opcodes)
        tfl.ModelAddSubgraphs(b, subgraphs)
        tfl.ModelAddDescription(b, description)
        tfl.ModelAddBuffers(b, buffers)
        b.Finish(tfl.ModelEnd(b), file_identifier=_IDENTIFIERS[fmt])
        return bytes(b.Output())


def write_new(image, weights, fmt):
    """A new .tflite/.circle file computing what the .mtm ``image`` computes with
    ``weights`` (mt_session_param order)."""
    parsed = _image.read_image(image)
    by_tensor = dict(zip(parsed.const_f32_tensors(), weights))
    writer = _Writer(parsed, by_tensor)
    writer.build_tensors()
    writer.build_ops()
    return writer.finish(fmt)
