"""Hand-built quantized ``.tflite`` graphs: every scale, zero point and weight chosen by the
test, so that a requantization meets the rounding cases it is meant to meet (exact ties,
negative sums, products near a tie). TensorFlow's converter chooses scales from data and
cannot be told to; this writes the flatbuffer directly with the ``tflite`` package's
generated builder functions (as py_facade/microtrain/convert/tflite_writer.py does).

    g = Graph()
    x = g.tensor((1, 4), INT8, scale=0.5, zero_point=3)
    w = g.tensor((2, 4), INT8, data=weights, scale=0.25)
    y = g.tensor((1, 2), INT8, scale=1.0, zero_point=-1)
    g.op("FULLY_CONNECTED", [x, w, -1], [y], ("FullyConnectedOptions", {}))
    data = g.finish([x], [y])
"""

import flatbuffers
import numpy as np
import tflite

FLOAT32, INT32, INT8 = 0, 2, 9
_DTYPES = {FLOAT32: "<f4", INT32: "<i4", INT8: "i1"}


class Graph:
    def __init__(self):
        self.buffers = [b""]   # buffer 0: empty, as converters write
        self.tensors = []      # (shape, type, buffer, scales, zero points, axis)
        self.operators = []    # (builtin code, inputs, outputs, options)

    def tensor(self, shape, dtype, data=None, scale=None, zero_point=0, axis=0):
        """A tensor (a constant when ``data`` is given); ``scale`` a number or one per
        channel along ``axis`` (zero points 0 then, as TFLite's per-channel weights)."""
        buffer = 0
        if data is not None:
            array = np.asarray(data, dtype=_DTYPES[dtype]).reshape(shape)
            self.buffers.append(array.tobytes())
            buffer = len(self.buffers) - 1
        scales = None if scale is None else [float(s) for s in np.atleast_1d(scale)]
        zero_points = None if scale is None else \
            [int(z) for z in np.broadcast_to(np.atleast_1d(zero_point), (len(scales),))]
        self.tensors.append((list(shape), dtype, buffer, scales, zero_points, axis))
        return len(self.tensors) - 1

    def op(self, name, inputs, outputs, options=None):
        """An operator: tflite.BuiltinOperator ``name``; options (table name, {field: value})."""
        self.operators.append((getattr(tflite.BuiltinOperator, name), list(inputs),
                               list(outputs), options))

    def _int_vector(self, b, values, width=4):
        b.StartVector(width, len(values), width)
        for value in reversed(values):
            (b.PrependInt32 if width == 4 else b.PrependInt64)(int(value))
        return b.EndVector()

    def _float_vector(self, b, values):
        b.StartVector(4, len(values), 4)
        for value in reversed(values):
            b.PrependFloat32(float(value))
        return b.EndVector()

    def _table_vector(self, b, offsets):
        b.StartVector(4, len(offsets), 4)
        for offset in reversed(offsets):
            b.PrependUOffsetTRelative(offset)
        return b.EndVector()

    def finish(self, inputs, outputs):
        t, b = tflite, flatbuffers.Builder(1024)
        buffer_offsets = []
        for payload in self.buffers:
            data = None
            if payload:
                b.StartVector(1, len(payload), 16)
                b.head -= len(payload)
                b.Bytes[b.head:b.head + len(payload)] = payload
                data = b.EndVector()
            t.BufferStart(b)
            if data is not None:
                t.BufferAddData(b, data)
            buffer_offsets.append(t.BufferEnd(b))
        tensor_offsets = []
        for index, (shape, dtype, buffer, scales, zero_points, axis) in enumerate(self.tensors):
            quant = None
            if scales is not None:
                scale_offset = self._float_vector(b, scales)
                zero_offset = self._int_vector(b, zero_points, 8)
                t.QuantizationParametersStart(b)
                t.QuantizationParametersAddScale(b, scale_offset)
                t.QuantizationParametersAddZeroPoint(b, zero_offset)
                t.QuantizationParametersAddQuantizedDimension(b, axis)
                quant = t.QuantizationParametersEnd(b)
            name = b.CreateString("t%d" % index)
            shape_offset = self._int_vector(b, shape)
            t.TensorStart(b)
            t.TensorAddShape(b, shape_offset)
            t.TensorAddType(b, dtype)
            t.TensorAddBuffer(b, buffer)
            t.TensorAddName(b, name)
            if quant is not None:
                t.TensorAddQuantization(b, quant)
            tensor_offsets.append(t.TensorEnd(b))
        codes = sorted({code for code, _, _, _ in self.operators})
        operator_offsets = []
        for code, ins, outs, options in self.operators:
            options_type, options_offset = 0, None
            if options is not None:
                table, fields = options
                getattr(t, table + "Start")(b)
                for field, value in fields.items():
                    getattr(t, table + "Add" + field)(b, value)
                options_type, options_offset = getattr(t.BuiltinOptions, table), \
                    getattr(t, table + "End")(b)
            in_offset, out_offset = self._int_vector(b, ins), self._int_vector(b, outs)
            t.OperatorStart(b)
            t.OperatorAddOpcodeIndex(b, codes.index(code))
            t.OperatorAddInputs(b, in_offset)
            t.OperatorAddOutputs(b, out_offset)
            if options_offset is not None:
                t.OperatorAddBuiltinOptionsType(b, options_type)
                t.OperatorAddBuiltinOptions(b, options_offset)
            operator_offsets.append(t.OperatorEnd(b))
        graph_inputs, graph_outputs = self._int_vector(b, inputs), self._int_vector(b, outputs)
        tensors = self._table_vector(b, tensor_offsets)
        operators = self._table_vector(b, operator_offsets)
        name = b.CreateString("main")
        t.SubGraphStart(b)
        t.SubGraphAddTensors(b, tensors)
        t.SubGraphAddInputs(b, graph_inputs)
        t.SubGraphAddOutputs(b, graph_outputs)
        t.SubGraphAddOperators(b, operators)
        t.SubGraphAddName(b, name)
        subgraph = t.SubGraphEnd(b)
        code_offsets = []
        for code in codes:
            t.OperatorCodeStart(b)
            t.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
            t.OperatorCodeAddBuiltinCode(b, code)
            t.OperatorCodeAddVersion(b, 1)
            code_offsets.append(t.OperatorCodeEnd(b))
        opcodes = self._table_vector(b, code_offsets)
        subgraphs = self._table_vector(b, [subgraph])
        buffers = self._table_vector(b, buffer_offsets)
        t.ModelStart(b)
        t.ModelAddVersion(b, 3)
        t.ModelAddOperatorCodes(b, opcodes)
        t.ModelAddSubgraphs(b, subgraphs)
        t.ModelAddBuffers(b, buffers)
        b.Finish(t.ModelEnd(b), file_identifier=b"TFL3")
        return bytes(b.Output())


def run_reference(data, inputs):
    """The graph's outputs under LiteRT's reference kernels (BUILTIN_REF), inputs as given
    (batch included)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    interpreter = Interpreter(model_content=bytes(data),
                              experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    details = interpreter.get_input_details()
    for detail, value in zip(details, inputs):
        interpreter.resize_tensor_input(detail["index"], np.shape(value))
    interpreter.allocate_tensors()
    for detail, value in zip(details, inputs):
        interpreter.set_tensor(detail["index"], np.asarray(value, detail["dtype"]))
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]
