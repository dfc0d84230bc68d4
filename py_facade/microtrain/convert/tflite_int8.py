"""Import a full-integer (int8) ``.tflite`` file: an int8 backbone frozen in the image and a
float part that trains on the device.

TensorFlow's converter with a representative dataset (``Optimize.DEFAULT`` and
``TFLITE_BUILTINS_INT8``) writes int8 activations (per-tensor scale and zero point), int8
weights (per-channel scales, zero point 0) and int32 biases, with QUANTIZE / DEQUANTIZE at
the float boundaries. This reader keeps the int8 ops as the core's int8 inference ops, with
the (multiplier, shift) pairs and clamp ranges TFLite's Prepare computes (int8_quant.py), so
the core computes LiteRT's reference kernels' bits. Where the float, trainable part begins
is the caller's choice:

* ``train_from=None, new_head=None``: the model's own head trains: the ops from the last one
  with weights (the final Dense) on run in float, their weights dequantized
  (``scale · (q - zero_point)``), after a DEQUANTIZE of the int8 activation they read;
* ``train_from="block_15"``: the float part begins at the first op whose output tensor is
  named after that layer (Keras names: ``.../block_15_expand/...``), so the last blocks
  train too;
* ``new_head=n``: the model is cut after its last spatial ([H, W, C]) activation and a new
  head is attached: mean over H and W, DEQUANTIZE (int8 mean first: 1/HW of the floats),
  Dense(n) (Glorot-uniform weights from ``head_seed``, zero bias) and Softmax;
* ``int8_input=True``: the model input is the int8 tensor the leading QUANTIZE writes (the
  caller quantizes, e.g. camera pixels - 128), so no float copy of the image is held.

The int8 part computes exactly LiteRT's BUILTIN_REF kernels (tests/convert/test_int8.py);
the float part computes what the core's float ops compute from the dequantized weights.
"""

import numpy as np

from .. import ops as _ops
from ..nn import image as _image
from . import int8_quant as _q
from .graph import ConversionError, Origin, Value, count
from .tflite_reader import _Reader, _TYPE_NAMES, _tensor_shape, _tensor_signature

_FLOAT32, _INT32, _INT64, _INT8 = 0, 2, 4, 9

SUPPORTED_INT8_OPS = ("QUANTIZE (float to int8), DEQUANTIZE, CONV_2D, DEPTHWISE_CONV_2D "
                      "(depth multiplier 1), FULLY_CONNECTED, ADD (same shapes), MAX_POOL_2D, "
                      "AVERAGE_POOL_2D, MEAN over H and W, RESHAPE, CONCATENATION (one "
                      "quantization for all inputs), PAD (zero point), with fused NONE, RELU, "
                      "RELU6")


def is_int8_model(data):
    """True when a .tflite file holds int8 activations (a full-integer model)."""
    from .tflite_reader import parse
    model = parse(data)
    for g in range(model.SubgraphsLength()):
        graph = model.Subgraphs(g)
        for t in range(graph.TensorsLength()):
            tensor = graph.Tensors(t)
            if tensor.Type() == _INT8 and tensor.Buffer() >= 0:
                return True
    return False


class Int8Reader(_Reader):
    def __init__(self, data, fmt, train_from=None, new_head=None, int8_input=False,
                 head_seed=0, float_part=True):
        _Reader.__init__(self, data, fmt)
        self.float_part = float_part
        self.train_from = train_from
        self.new_head = new_head
        self.int8_input = int8_input
        self.head_seed = head_seed
        self.quant = {}        # core index of an int8 activation -> (scale, zero point)
        self.dequantized = {}  # core index of an int8 activation -> its float Value
        self.float_start = self._float_start()
        self.cut_after = self._cut_after() if new_head else None

    # ------------------------------------------------------------ the plan of the import

    def _op_name(self, index):
        op = self.graph.Operators(index)
        code = self.model.OperatorCodes(op.OpcodeIndex())
        builtin = max(int(code.BuiltinCode()), int(code.DeprecatedBuiltinCode()))
        return self.op_names.get(builtin, "builtin %d" % builtin)

    def _output_names(self, index):
        op = self.graph.Operators(index)
        return [self.tensor_name(int(t)) for t in op.OutputsAsNumpy()]

    def _float_start(self):
        ops = self.graph.OperatorsLength()
        if not self.float_part:
            return ops  # every op as the file has it (inference, and the bit-exactness tests)
        if self.train_from is not None:
            wanted = str(self.train_from)
            for index in range(ops):
                for name in self._output_names(index):
                    for piece in name.split(";"):
                        for part in piece.split("/"):
                            if part == wanted or part.startswith(wanted + "_"):
                                return index
            raise ConversionError("no op's output is named after layer %r" % wanted,
                                  attribute="train_from",
                                  supported="a layer name of the source model (Keras: "
                                  "'block_15', 'Conv_1', ...)")
        if self.new_head:
            return ops  # only the new head is float
        for index in reversed(range(ops)):
            if self._op_name(index) in ("FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D"):
                return index
        raise ConversionError("the model has no op with weights to train")

    def _cut_after(self):
        """The last op writing a spatial [1, H, W, C] activation: the backbone's end."""
        last = None
        for index in range(self.graph.OperatorsLength()):
            op = self.graph.Operators(index)
            shape = _tensor_shape(self.tensor(int(op.OutputsAsNumpy()[0])))
            if len(shape) == 4 and self._op_name(index) not in ("SHAPE", "QUANTIZE",
                                                                "DEQUANTIZE"):
                last = index
        if last is None:
            raise ConversionError("the model has no spatial [H, W, C] activation to attach "
                                  "a new head to", attribute="new_head")
        return last

    # ------------------------------------------------------------ tensors

    def const_array(self, index):
        tensor = self.tensor(index)
        if tensor.Type() == _INT8:
            from .tflite_reader import buffer_span
            start, size = buffer_span(self.model, self.data, tensor.Buffer())
            if start is None:
                return None
            array = np.frombuffer(self.data, dtype=np.int8, count=size, offset=start)
            return array.reshape(_tensor_shape(tensor)).copy()
        return _Reader.const_array(self, index)

    def tensor_quant(self, index, label):
        """(scales float32[], zero points int64[], axis) of a tflite tensor."""
        q = self.tensor(index).Quantization()
        scales = q.ScaleAsNumpy() if q is not None else 0
        if q is None or isinstance(scales, int) or len(scales) == 0:
            raise ConversionError("tensor %r has no quantization parameters"
                                  % self.tensor_name(index), op=label)
        zero_points = q.ZeroPointAsNumpy()
        zero_points = np.zeros(len(scales), np.int64) if isinstance(zero_points, int) \
            else np.asarray(zero_points, np.int64)
        return (np.asarray(scales, np.float32), zero_points, int(q.QuantizedDimension()))

    def activation_quant(self, index, label):
        scales, zero_points, _ = self.tensor_quant(index, label)
        if len(scales) != 1:
            raise ConversionError("activation %r is quantized per channel"
                                  % self.tensor_name(index), op=label,
                                  supported="per-tensor activations")
        return float(scales[0]), int(zero_points[0])

    def int8_output(self, core_index, tflite_index, label):
        """Make core tensor ``core_index`` the int8 image of tflite tensor ``tflite_index``."""
        scale, zero_point = self.activation_quant(tflite_index, label)
        spec = self.builder.tensors[core_index]
        spec.dtype = _image.DTYPE_I8
        spec.quant = _image.Quantization([scale], [zero_point])
        self.quant[core_index] = (scale, zero_point)

    def add_const(self, array, dtype, quant=None):
        spec = _image.TensorSpec(np.shape(array), flags=_image.FLAG_CONST, dtype=dtype,
                                 data=np.ascontiguousarray(array), quant=quant)
        return self.builder._add(spec)

    def is_int8(self, value):
        return value is not None and not value.is_const and value.index in self.quant

    def as_float(self, value, label):
        """A float Value for an int8 activation (one DEQUANTIZE per tensor)."""
        if not self.is_int8(value):
            return value
        if value.index not in self.dequantized:
            scale, zero_point = self.quant[value.index]
            index = self.builder.op(_ops.DEQUANTIZE, [value.index], value.core_shape, label,
                                    (_image.f32_bits(scale), zero_point & 0xFFFFFFFF))
            self.dequantized[value.index] = Value(value.shape, index=index,
                                                  core_shape=value.core_shape,
                                                  producer=len(self.builder.ops) - 1)
        return self.dequantized[value.index]

    def float_const(self, tflite_index, value, label):
        """The float weight of an int8 / int32 constant: scale · (q - zero point)."""
        if value is None or not value.is_const or value.const.dtype == np.float32:
            return value
        scales, zero_points, axis = self.tensor_quant(tflite_index, label)
        result = Value(value.const.shape, const=_q.dequantize(value.const, scales, zero_points,
                                                              axis))
        result.const_key = tflite_index
        return result

    # ------------------------------------------------------------ import

    def run(self):
        for t in self.graph.InputsAsNumpy():
            t = int(t)
            tensor = self.tensor(t)
            if tensor.Type() not in (_FLOAT32, _INT8):
                raise ConversionError("input %r has dtype %s" % (self.tensor_name(t),
                                      _TYPE_NAMES.get(tensor.Type(), tensor.Type())),
                                      supported="float32 or int8 inputs")
            signature = _tensor_signature(tensor)
            if any(d < 1 for d in signature[1:]):
                raise ConversionError("input %r has shape %r: only the batch dimension may "
                                      "be dynamic" % (self.tensor_name(t), signature))
            shape = tuple(_tensor_shape(tensor)[1:])
            value = self.builder.add_input(shape, shape)
            if tensor.Type() == _INT8:
                self.int8_output(value.index, t, "input")
            self.values[t] = value
        last = self.graph.OperatorsLength() - 1 if self.cut_after is None else self.cut_after
        for index in range(last + 1):
            self.operator(index)
        if self.new_head:
            op = self.graph.Operators(self.cut_after)
            self.builder.mark_output(self.attach_head(self.values[int(op.OutputsAsNumpy()[0])]))
        else:
            for t in self.graph.OutputsAsNumpy():
                value = self.values.get(int(t))
                if value is None:
                    raise ConversionError("output %r is never written"
                                          % self.tensor_name(int(t)))
                self.builder.mark_output(self.as_float(value, "output"))
        return self.builder

    def operator(self, index):
        op = self.graph.Operators(index)
        name = self._op_name(index)
        label = "%s op %d (%s)" % (self.fmt, index, name)
        self.builder.source_node = index
        inputs = [int(t) for t in op.InputsAsNumpy()] if op.InputsLength() else []
        outputs = [int(t) for t in op.OutputsAsNumpy()]
        for t in outputs:
            if self.tensor(t).Type() not in (_FLOAT32, _INT32, _INT64, _INT8):
                raise ConversionError("output %r has dtype %s" % (
                    self.tensor_name(t), _TYPE_NAMES.get(self.tensor(t).Type(),
                                                         self.tensor(t).Type())),
                    op=label, supported="int8, float32 (int32/int64 shape arithmetic)")
        values = [self.value(t, label) for t in inputs]
        if all(v is None or v.is_const for v in values) and name != "SHAPE":
            folded = self.fold(name, op, values, label)
            for t, array in zip(outputs, folded):
                self.set_output(t, Value(np.shape(array), const=np.asarray(array)))
            return
        if name in ("SHAPE", "STRIDED_SLICE", "PACK"):
            result = getattr(self, "op_" + name)(op, values, inputs, outputs, label)
        elif index >= self.float_start:
            result = self.float_op(name, op, values, inputs, outputs, label)
        else:
            handler = getattr(self, "q_" + name, None)
            if handler is None:
                raise ConversionError("op %s is not supported in the int8 part" % name,
                                      op=label, supported=SUPPORTED_INT8_OPS)
            result = handler(op, values, inputs, outputs, label)
        self.set_output(outputs[0], result)
        if not result.is_const:
            expected = self.sample_shape(outputs[0], label)
            if count(expected) != count(result.core_shape):
                raise ConversionError("computed sample shape %r, the file declares %r"
                                      % (result.core_shape, expected), op=label)

    # ------------------------------------------------------------ the float part

    def float_op(self, name, op, values, inputs, outputs, label):
        """An op of the float part: int8 activations are dequantized, int8 weights and int32
        biases become float weights, and the float reader's handler emits the core op."""
        if name == "QUANTIZE":   # the float part stays float
            return self.as_float(values[0], label)
        if name == "DEQUANTIZE":
            return self.as_float(values[0], label)
        values = [self.as_float(v, label) if v is not None and not v.is_const
                  else self.float_const(t, v, label) for v, t in zip(values, inputs)]
        handler = getattr(self, "op_" + name, None)
        if handler is None:
            from .tflite_reader import SUPPORTED_OPS
            raise ConversionError("op %s is not supported in the float part" % name, op=label,
                                  supported=SUPPORTED_OPS)
        return handler(op, values, inputs, outputs, label)

    def attach_head(self, features):
        """mean over H and W -> DEQUANTIZE -> Dense(new_head) -> Softmax."""
        label = "new head"
        self.builder.source_node = None
        if len(features.core_shape) != 3:
            raise ConversionError("the backbone ends with %r, not [H, W, C]"
                                  % (features.core_shape,), attribute="new_head")
        channels = features.core_shape[2]
        if self.is_int8(features):
            scale, zero_point = self.quant[features.index]
            multiplier, shift = _q.mean_requant(scale, scale)
            index = self.builder.op(_ops.MEAN_S8, [features.index], (channels,), label,
                                    (_q.byte(zero_point) | _q.byte(zero_point) << 8,
                                     multiplier, shift & 0xFFFFFFFF))
            self.builder.tensors[index].dtype = _image.DTYPE_I8
            self.builder.tensors[index].quant = _image.Quantization([scale], [zero_point])
            self.quant[index] = (scale, zero_point)
            pooled = self.as_float(Value((channels,), index=index), label)
        else:
            index = self.builder.op(_ops.GLOBAL_AVERAGE_POOL, [features.index], (channels,),
                                    label)
            pooled = Value((channels,), index=index)
        units = int(self.new_head)
        rng = np.random.default_rng(self.head_seed)
        limit = np.sqrt(6.0 / (channels + units))
        weight = rng.uniform(-limit, limit, (units, channels)).astype(np.float32)
        w = self.builder.add_weight(weight, Origin(None, weight.shape))
        b = self.builder.add_weight(np.zeros(units, np.float32), Origin(None, (units,)))
        logits = self.builder.op(_ops.DENSE, [pooled.index, w, b], (units,), label)
        out = self.builder.op(_ops.SOFTMAX, [logits], (units,), label)
        return Value((units,), index=out)

    # ------------------------------------------------------------ the int8 part

    def _q_input(self, value, label):
        if not self.is_int8(value):
            raise ConversionError("the input is not an int8 activation", op=label,
                                  supported="int8 inputs in the int8 part")
        return value

    def _q_out(self, op_type, inputs, out_index, label, params, shape=None):
        shape = self.sample_shape(out_index, label) if shape is None else shape
        index = self.builder.op(op_type, inputs, shape, label, params)
        self.int8_output(index, out_index, label)
        return Value(shape, index=index, producer=len(self.builder.ops) - 1)

    def _weight(self, tflite_index, value, label, axis, channels):
        if value is None or not value.is_const or value.const.dtype != np.int8:
            raise ConversionError("the filter must be an int8 constant", op=label)
        scales, zero_points, q_axis = self.tensor_quant(tflite_index, label)
        if np.any(zero_points != 0):
            raise ConversionError("the filter's zero points are not 0", op=label,
                                  supported="symmetric int8 weights")
        if len(scales) > 1 and (q_axis != axis or len(scales) != channels):
            raise ConversionError("the filter is quantized along axis %d" % q_axis, op=label)
        quant = _image.Quantization(scales, np.zeros(len(scales), np.int64), axis)
        return self.add_const(value.const, _image.DTYPE_I8, quant), scales

    def _bias(self, tflite_index, value, label, channels):
        if value is None:
            return None
        if not value.is_const or value.const.dtype != np.int32 or \
                value.const.shape != (channels,):
            raise ConversionError("the bias must be an int32 constant [%d]" % channels,
                                  op=label)
        scales, _, _ = self.tensor_quant(tflite_index, label)
        quant = _image.Quantization(scales, np.zeros(len(scales), np.int64), 0)
        return self.add_const(value.const, _image.DTYPE_I32, quant)

    def _clamp(self, fused, out_index, label):
        scale, zero_point = self.activation_quant(out_index, label)
        if fused not in (0, 1, 3):
            raise ConversionError("fused activation %d is not supported" % fused, op=label,
                                  supported="NONE, RELU, RELU6")
        return _q.activation_range(fused, scale, zero_point)

    def _conv(self, op, values, inputs, outputs, label, depthwise):
        x = self._spatial_input(self._q_input(values[0], label), label)
        options = self.options(op, "DepthwiseConv2DOptions" if depthwise else "Conv2DOptions")
        strides, padding = self._conv_common(options, label)
        w = values[1]
        if w is None or not w.is_const or w.const.ndim != 4:
            raise ConversionError("the filter must be a constant 4-D array", op=label)
        channels = w.const.shape[3] if depthwise else w.const.shape[0]
        if depthwise and (w.const.shape[0] != 1 or w.const.shape[3] != x.core_shape[2] or
                          options.DepthMultiplier() not in (0, 1)):
            raise ConversionError("depth multiplier other than 1", op=label,
                                  attribute="depth_multiplier", supported="1")
        if not depthwise and w.const.shape[3] != x.core_shape[2]:
            raise ConversionError("grouped convolution", op=label, supported="groups 1")
        weight, w_scales = self._weight(inputs[1], w, label, 3 if depthwise else 0, channels)
        bias = self._bias(inputs[2], values[2], label, channels) if len(values) > 2 else None
        sx, zx = self.quant[x.index]
        sy, zy = self.activation_quant(outputs[0], label)
        rq = self.add_const(_q.conv_requant(sx, w_scales, sy, channels), _image.DTYPE_I32)
        lo, hi = self._clamp(options.FusedActivationFunction(), outputs[0], label)
        params = (_q.packed_conv_params(zx, zy, lo, hi),) + \
            _image.spatial_params(None, strides, padding)[1:3] + (0,)
        op_type = _ops.DEPTHWISE_CONV2D_S8 if depthwise else _ops.CONV2D_S8
        return self._q_out(op_type, [x.index, weight, bias, rq], outputs[0], label, params)

    def q_CONV_2D(self, op, values, inputs, outputs, label):
        return self._conv(op, values, inputs, outputs, label, False)

    def q_DEPTHWISE_CONV_2D(self, op, values, inputs, outputs, label):
        return self._conv(op, values, inputs, outputs, label, True)

    def q_FULLY_CONNECTED(self, op, values, inputs, outputs, label):
        x = self._q_input(values[0], label)
        options = self.options(op, "FullyConnectedOptions")
        w = values[1]
        if w is None or not w.is_const or w.const.ndim != 2:
            raise ConversionError("the weight must be a constant [units, in]", op=label)
        units, features = w.const.shape
        if count(x.core_shape) != features:
            raise ConversionError("input has %d features, the weight %d"
                                  % (count(x.core_shape), features), op=label)
        weight, w_scales = self._weight(inputs[1], w, label, 0, units)
        bias = self._bias(inputs[2], values[2], label, units) \
            if len(values) > 2 and values[2] is not None else None
        sx, zx = self.quant[x.index]
        sy, zy = self.activation_quant(outputs[0], label)
        try:
            rq = _q.dense_scales(sx, w_scales, sy, units)
        except ValueError as error:
            raise ConversionError(str(error), op=label, supported="above 0 and below 2^20")
        rq = self.add_const(rq, _image.DTYPE_I32)
        lo, hi = self._clamp(options.FusedActivationFunction(), outputs[0], label)
        params = (_q.packed_conv_params(zx, zy, lo, hi),)
        return self._q_out(_ops.DENSE_S8, [x.index, weight, bias, rq], outputs[0], label,
                           params, shape=(units,))

    def q_ADD(self, op, values, inputs, outputs, label):
        a, b = self._q_input(values[0], label), self._q_input(values[1], label)
        if a.core_shape != b.core_shape:
            raise ConversionError("operands of shapes %r and %r" % (a.core_shape, b.core_shape),
                                  op=label, supported="the same shape (no broadcasting)")
        sa, za = self.quant[a.index]
        sb, zb = self.quant[b.index]
        sy, zy = self.activation_quant(outputs[0], label)
        rq = self.add_const(_q.add_requant(sa, sb, sy), _image.DTYPE_I32)
        fused = self.options(op, "AddOptions").FusedActivationFunction()
        lo, hi = self._clamp(fused, outputs[0], label)
        params = (_q.byte(za) | _q.byte(zb) << 8 | _q.byte(zy) << 16,
                  _q.byte(lo) | _q.byte(hi) << 8)
        return self._q_out(_ops.ADD_S8, [a.index, b.index, rq], outputs[0], label, params,
                           shape=a.core_shape)

    def _same_quant(self, value, out_index, label):
        if self.quant[value.index] != self.activation_quant(out_index, label):
            raise ConversionError("input and output are quantized differently", op=label,
                                  supported="the same scale and zero point")

    def _q_pool(self, op_type, op, values, outputs, label):
        x = self._spatial_input(self._q_input(values[0], label), label)
        options = self.options(op, "Pool2DOptions")
        if options.FusedActivationFunction() != 0:
            raise ConversionError("a fused activation on an int8 pool", op=label,
                                  supported="NONE")
        self._same_quant(x, outputs[0], label)
        strides, padding = self._conv_common(options, label, dilations=False)
        params = _image.spatial_params((options.FilterHeight(), options.FilterWidth()),
                                       strides, padding)
        return self._q_out(op_type, [x.index], outputs[0], label, params)

    def q_MAX_POOL_2D(self, op, values, inputs, outputs, label):
        return self._q_pool(_ops.MAX_POOL2D_S8, op, values, outputs, label)

    def q_AVERAGE_POOL_2D(self, op, values, inputs, outputs, label):
        return self._q_pool(_ops.AVERAGE_POOL2D_S8, op, values, outputs, label)

    def q_MEAN(self, op, values, inputs, outputs, label):
        x = self._spatial_input(self._q_input(values[0], label), label)
        axes = values[1]
        if axes is None or not axes.is_const or \
                sorted(int(a) % 4 for a in np.asarray(axes.const).ravel()) != [1, 2]:
            raise ConversionError("mean over other axes than H and W", op=label,
                                  attribute="axes", supported="[1, 2]")
        sx, zx = self.quant[x.index]
        sy, zy = self.activation_quant(outputs[0], label)
        multiplier, shift = _q.mean_requant(sx, sy)
        params = (_q.byte(zx) | _q.byte(zy) << 8, multiplier, shift & 0xFFFFFFFF)
        return self._q_out(_ops.MEAN_S8, [x.index], outputs[0], label, params)

    def _q_reshape(self, values, outputs, label):
        x = self._q_input(values[0], label)
        self._same_quant(x, outputs[0], label)
        declared = self.sample_shape(outputs[0], label)
        if count(declared) != count(x.core_shape) or not 1 <= len(declared) <= 4:
            raise ConversionError("reshape to %r" % (declared,), op=label)
        if tuple(declared) == tuple(x.core_shape):
            return x
        return self._q_out(_ops.RESHAPE_S8, [x.index], outputs[0], label, ())

    def q_RESHAPE(self, op, values, inputs, outputs, label):
        return self._q_reshape(values, outputs, label)

    def q_SQUEEZE(self, op, values, inputs, outputs, label):
        return self._q_reshape(values, outputs, label)

    def q_EXPAND_DIMS(self, op, values, inputs, outputs, label):
        return self._q_reshape(values, outputs, label)

    def q_CONCATENATION(self, op, values, inputs, outputs, label):
        xs = [self._q_input(v, label) for v in values]
        options = self.options(op, "ConcatenationOptions")
        out_shape = self.sample_shape(outputs[0], label)
        if options.Axis() not in (-1, len(out_shape)) or not 2 <= len(xs) <= 4:
            raise ConversionError("concatenation of %d inputs along axis %d"
                                  % (len(xs), options.Axis()), op=label,
                                  supported="2 to 4 inputs along the last axis")
        if options.FusedActivationFunction() != 0:
            raise ConversionError("a fused activation on an int8 concatenation", op=label)
        for x in xs:
            self._same_quant(x, outputs[0], label)
        return self._q_out(_ops.CONCATENATION_S8, [x.index for x in xs], outputs[0], label, ())

    def q_PAD(self, op, values, inputs, outputs, label):
        x = self._spatial_input(self._q_input(values[0], label), label)
        pads = values[1]
        if pads is None or not pads.is_const or np.shape(pads.const) != (4, 2):
            raise ConversionError("the paddings must be a constant [4, 2]", op=label)
        pads = np.asarray(pads.const, np.int64)
        if np.any(pads[0] != 0) or np.any(pads < 0) or np.any(pads > 0xFFFF):
            raise ConversionError("paddings %r" % pads.tolist(), op=label,
                                  supported="0..65535 on H, W and C, none on the batch")
        self._same_quant(x, outputs[0], label)
        _, zy = self.quant[x.index]
        params = tuple(int(pads[d][0]) | int(pads[d][1]) << 16 for d in (1, 2, 3)) + \
            (_q.byte(zy),)
        return self._q_out(_ops.PAD_S8, [x.index], outputs[0], label, params)

    def q_QUANTIZE(self, op, values, inputs, outputs, label):
        x = values[0]
        if self.is_int8(x):
            raise ConversionError("requantization of an int8 tensor", op=label,
                                  supported="QUANTIZE of a float tensor")
        if self.int8_input and x.index in self.builder.inputs:
            spec = self.builder.tensors[x.index]
            if spec.dtype != _image.DTYPE_F32:
                raise ConversionError("input already int8", op=label)
            self.int8_output(x.index, outputs[0], label)
            return x
        scale, zero_point = self.activation_quant(outputs[0], label)
        params = (_image.f32_bits(scale), zero_point & 0xFFFFFFFF)
        return self._q_out(_ops.QUANTIZE, [x.index], outputs[0], label, params,
                           shape=x.core_shape)

    def q_DEQUANTIZE(self, op, values, inputs, outputs, label):
        return self.as_float(self._q_input(values[0], label), label)


def read(data, fmt="tflite", train_from=None, new_head=None, int8_input=False, head_seed=0,
         float_part=True):
    """(Builder, input names, output names) of an int8 .tflite file (see the module doc).
    ``float_part=False`` keeps every op as the file has it (nothing trains: the model as
    LiteRT runs it)."""
    if new_head is not None and (int(new_head) != new_head or int(new_head) < 2):
        raise ConversionError("new_head is a number of classes >= 2, got %r" % (new_head,),
                              attribute="new_head")
    reader = Int8Reader(data, fmt, train_from, new_head, int8_input, head_seed, float_part)
    builder = reader.run()
    graph = reader.graph
    input_names = [reader.tensor_name(int(t)) for t in graph.InputsAsNumpy()]
    output_names = [reader.tensor_name(int(t)) for t in graph.OutputsAsNumpy()] \
        if not new_head else ["new_head"]
    return builder, input_names, output_names
