"""The int8 part of an int8 ``.tflite`` import: each TFLite int8 op as the core's int8 op,
with the (multiplier, shift) pairs and clamps TFLite's Prepare computes (int8_quant.py), so
the core computes LiteRT's reference kernels' bits (a mixin of ``tflite_int8.Int8Reader``,
as ``tflite_ops`` is of the float reader).
"""

import numpy as np

from .. import ops as _ops
from ..nn import image as _image
from . import int8_quant as _q
from .graph import ConversionError, Value, count

SUPPORTED_INT8_OPS = ("QUANTIZE (float to int8), DEQUANTIZE, CONV_2D, DEPTHWISE_CONV_2D "
                      "(depth multiplier 1), FULLY_CONNECTED, ADD (same shapes), MAX_POOL_2D, "
                      "AVERAGE_POOL_2D, MEAN over H and W, RESHAPE, CONCATENATION (one "
                      "quantization for all inputs), PAD (zero point), with fused NONE, RELU, "
                      "RELU6")


class Int8Unsupported(ConversionError):
    """An operator of the int8 part that the core's int8 ops cannot run as LiteRT does
    (``index``: the file's operator): the float part may begin there instead."""

    def __init__(self, error, index):
        ConversionError.__init__(self, str(error))
        self.reason = str(error)
        self.index = index


class Int8Ops:
    """The ``q_<OP>`` handlers: int8 activations in, int8 activations out."""

    def _q_input(self, value, label):
        if not self.is_int8(value):
            what = "a constant" if value is not None and value.is_const else \
                "a float activation"
            raise ConversionError("the input is %s, not an int8 activation" % what, op=label,
                                  supported="int8 activations in the int8 part (the float "
                                  "part, from train_from on, takes float ones)")
        return value

    def _q_out(self, op_type, inputs, out_index, label, params, shape=None):
        shape = self.sample_shape(out_index, label) if shape is None else shape
        index = self.builder.op(op_type, inputs, shape, label, params)
        self.int8_output(index, out_index, label)
        return Value(shape, index=index, producer=len(self.builder.ops) - 1)

    def _weight(self, tflite_index, value, label, axis, channels, perm=None):
        """The int8 filter (quantized along ``axis`` of the file's array; ``perm``: the
        axes of the core's array, whose quantized axis is then 0)."""
        if value is None or not value.is_const or value.const.dtype != np.int8:
            raise ConversionError("the filter must be an int8 constant", op=label)
        scales, zero_points, q_axis = self.tensor_quant(tflite_index, label)
        if np.any(zero_points != 0):
            raise ConversionError("the filter's zero points are not 0", op=label,
                                  supported="symmetric int8 weights")
        if len(scales) > 1 and (q_axis != axis or len(scales) != channels):
            raise ConversionError("the filter is quantized along axis %d" % q_axis, op=label)
        array = value.const if perm is None else np.ascontiguousarray(
            value.const.transpose(perm))
        quant = _image.Quantization(scales, np.zeros(len(scales), np.int64),
                                    axis if perm is None else 0)
        index = self.add_const(array, _image.DTYPE_I8, quant, self.trains_in_place)
        if self.trains_in_place:  # export writes the trained values into the file's tensor
            self.trained_in_place[index] = (int(tflite_index), perm)
        return index, scales

    def _bias(self, tflite_index, value, label, channels):
        if value is None:
            return None
        if not value.is_const or value.const.dtype != np.int32 or \
                value.const.shape != (channels,):
            raise ConversionError("the bias must be an int32 constant [%d]" % channels,
                                  op=label)
        scales, zero_points, _ = self.tensor_quant(tflite_index, label)  # zero points 0
        quant = _image.Quantization(scales, zero_points, 0)
        index = self.add_const(value.const, _image.DTYPE_I32, quant, self.trains_in_place)
        if self.trains_in_place:
            self.trained_in_place[index] = (int(tflite_index), None)
        return index

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
        perm = None
        if depthwise and x.core_shape[2] == 1 and w.const.shape[0] == 1 and channels > 1:
            # one input channel times a depth multiplier M is a CONV_2D of M filters: the
            # same sums and per-channel requantization, so the same bits
            depthwise, perm = False, (3, 1, 2, 0)
        elif depthwise and (w.const.shape[0] != 1 or w.const.shape[3] != x.core_shape[2] or
                            options.DepthMultiplier() not in (0, 1)):
            raise ConversionError("depth multiplier other than 1", op=label,
                                  attribute="depth_multiplier",
                                  supported="1, or any with one input channel")
        elif not depthwise and w.const.shape[3] != x.core_shape[2]:
            raise ConversionError("grouped convolution", op=label, supported="groups 1")
        weight, w_scales = self._weight(inputs[1], w, label, 3 if depthwise or perm else 0,
                                        channels, perm)
        bias = self._bias(inputs[2], values[2], label, channels) if len(values) > 2 else None
        sx, zx = self.quant[x.index]
        sy, zy = self.activation_quant(outputs[0], label)
        rq = self.add_const(_q.conv_requant(sx, w_scales, sy, channels), _image.DTYPE_I32)
        lo, hi = self._clamp(options.FusedActivationFunction(), outputs[0], label)
        params = (_q.packed_conv_params(zx, zy, lo, hi),) + \
            _image.spatial_params(None, strides, padding)[1:3] + (0,)
        op_type = _ops.DEPTHWISE_CONV2D_S8 if depthwise else _ops.CONV2D_S8
        shape = self.spatial_shape(x, w.const.shape[1:3], strides, padding, channels,
                                   outputs[0], label)
        return self._q_out(op_type, [x.index, weight, bias, rq], outputs[0], label, params,
                           shape=shape)

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
        kernel = (options.FilterHeight(), options.FilterWidth())
        shape = self.spatial_shape(x, kernel, strides, padding, x.core_shape[2], outputs[0],
                                   label)
        params = _image.spatial_params(kernel, strides, padding)
        return self._q_out(op_type, [x.index], outputs[0], label, params, shape=shape)

    def q_MAX_POOL_2D(self, op, values, inputs, outputs, label):
        return self._q_pool(_ops.MAX_POOL2D_S8, op, values, outputs, label)

    def q_AVERAGE_POOL_2D(self, op, values, inputs, outputs, label):
        return self._q_pool(_ops.AVERAGE_POOL2D_S8, op, values, outputs, label)

    def q_MEAN(self, op, values, inputs, outputs, label):
        x = self._q_input(values[0], label)
        axes = values[1]
        rank = len(x.core_shape) + 1
        wanted = None if axes is None or not axes.is_const else \
            sorted(int(a) % rank for a in np.asarray(axes.const).ravel())
        if rank != 4 or wanted != [1, 2]:
            raise ConversionError("an int8 mean over axes %s of a %r sample" % (
                wanted, list(x.core_shape)), op=label, attribute="axes",
                supported="axes [1, 2] of [H, W, C], as LiteRT's int8 kernel for that case "
                "(others round differently)")
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
