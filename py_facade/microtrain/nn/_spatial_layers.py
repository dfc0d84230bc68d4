"""Spatial layers over NHWC samples: Conv2D, DepthwiseConv2D and the pools (re-exported by
``microtrain.layers``). Kernels, strides and padding follow TFLite (docs/model_format.md)."""

import numpy as np

from . import image as _image
from .. import ops as _ops
from ._base import (Layer, _Weighted, _as_float32_array, _check_fused_activation,
                          _is_positive_int)


def _pair(value, what):
    """An int or a pair of ints, each >= 1, as a (height, width) tuple."""
    if _is_positive_int(value):
        return (int(value), int(value))
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(_is_positive_int(v)
                                                                    for v in value):
        return (int(value[0]), int(value[1]))
    raise ValueError("%s must be a positive integer or a pair of them, got %r" % (what, value))


def _check_padding(padding, layer):
    name = padding.lower() if isinstance(padding, str) else padding
    if name not in _image.PADDINGS:
        raise ValueError("%s padding must be 'valid' or 'same', got %r" % (layer, padding))
    return name


def _check_pool_padding(padding, layer):
    """A pool's padding: "valid", "same", or explicit pads (PyTorch's ``padding=``, ONNX's
    ``pads``) as an int (every side), (rows, columns) (before and after alike) or
    ((top, bottom), (left, right)), each 0..255: padded positions never win a maximum and
    never count in an average."""
    if isinstance(padding, str):
        return _check_padding(padding, layer)
    def ok(value):
        return not isinstance(value, bool) and isinstance(value, (int, np.integer)) and \
            0 <= value <= _image.MAX_POOL_PAD
    pads = None
    if ok(padding):
        pads = ((padding, padding), (padding, padding))
    elif isinstance(padding, (tuple, list)) and len(padding) == 2:
        if all(ok(p) for p in padding):
            pads = ((padding[0], padding[0]), (padding[1], padding[1]))
        elif all(isinstance(pair, (tuple, list)) and len(pair) == 2 and all(ok(p) for p in pair)
                 for pair in padding):
            pads = tuple(tuple(pair) for pair in padding)
    if pads is None:
        raise ValueError("%s padding must be 'valid', 'same', an int, (rows, columns) or "
                         "((top, bottom), (left, right)) of integers 0..%d, got %r"
                         % (layer, _image.MAX_POOL_PAD, padding))
    return tuple((int(a), int(b)) for a, b in pads)


def _check_image_shape(input_shape, layer):
    if len(input_shape) != 3:
        raise ValueError("%s takes one sample of shape (H, W, C) (NHWC without the batch), "
                         "got %r" % (layer, tuple(input_shape)))
    return tuple(input_shape)


def _spatial_output(input_shape, kernel, strides, padding, layer):
    height, width, _ = _check_image_shape(input_shape, layer)
    if not isinstance(padding, str):  # a pool's explicit pads
        for size, k, s, pads, axis in zip((height, width), kernel, strides, padding,
                                          ("rows", "columns")):
            why = _image.padding_only_window(size, k, s, pads[0], pads[1])
            if why is not None:
                raise ValueError("%s: pads %r of the %d %s with a %d window at stride %d: %s; "
                                 "every window must hold an input element"
                                 % (layer, pads, size, axis, k, s, why))
        return tuple(_image.spatial_output_size(size, k, s, pads) for size, k, s, pads in
                     zip((height, width), kernel, strides, padding))
    code = _image.PADDINGS[padding]
    out_h = _image.spatial_output_size(height, kernel[0], strides[0], code)
    out_w = _image.spatial_output_size(width, kernel[1], strides[1], code)
    if out_h < 1 or out_w < 1:
        raise ValueError("%s: a %dx%d window does not fit a %dx%d input with padding 'valid'"
                         % (layer, kernel[0], kernel[1], height, width))
    return out_h, out_w


class _Convolution(_Weighted):
    """What Conv2D and DepthwiseConv2D share: kernel, strides, padding, fused activation."""

    NAME = None
    OP_TYPE = None

    def _configure(self, kernel_size, strides, padding, activation, use_bias, bias):
        self.kernel_size = _pair(kernel_size, "%s kernel_size" % self.NAME)
        self.strides = _pair(strides, "%s strides" % self.NAME)
        self.padding = _check_padding(padding, self.NAME)
        self.activation = _check_fused_activation(activation, self.NAME)
        self.use_bias = bool(use_bias)
        if bias is not None and not self.use_bias:
            raise ValueError("%s got a bias but use_bias=False" % self.NAME)
        self.bias = None if bias is None else _as_float32_array(bias, "%s bias" % self.NAME)
        if self.bias is not None and self.bias.ndim != 1:
            raise ValueError("%s bias must be 1-D, got shape %r" % (self.NAME, self.bias.shape))

    def _spatial(self, input_shape):
        return _spatial_output(input_shape, self.kernel_size, self.strides, self.padding,
                               self.NAME)

    def _check_given(self, given, expected, what):
        if given is not None and given.shape != expected:
            raise ValueError("%s %s must have shape %r, got %r"
                             % (self.NAME, what, list(expected), list(given.shape)))
        return given

    def _draw(self, given, shape, fan_in, bias_count, rng):
        """(weight, bias): the given ones, the rest drawn uniform in +-1/sqrt(fan_in)
        (torch's default for Conv2d, whose fan_in is in_ch/groups * kh * kw)."""
        bound = 1.0 / np.sqrt(fan_in)
        weight = self._check_given(given, shape, "weight")
        if weight is None:
            weight = rng.uniform(-bound, bound, size=shape).astype(np.float32)
        bias = self._check_given(self.bias, (bias_count,), "bias")
        return weight, self._initial_bias(bias, bias_count, bound, rng)

    def _emit_ops(self, builder, input_tensor, input_shape, weight_tensor, bias_tensor):
        output = builder.add_activation(self.output_shape(input_shape))
        params = _image.spatial_params(None, self.strides, _image.PADDINGS[self.padding],
                                       _image.FUSED_ACTIVATIONS[self.activation])
        builder.add_op(self.OP_TYPE, [input_tensor, weight_tensor, bias_tensor], [output],
                       params)
        return output


class Conv2D(_Convolution):
    """2-D convolution over NHWC samples (TFLite CONV2D), dilation 1.

    Args:
        filters:     output channels OC
        kernel_size: KH = KW, or (KH, KW)
        strides:     S, or (SH, SW)
        padding:     "valid" (no padding) or "same" (TFLite: O = ceil(I / S), the odd
                     padding element after)
        activation:  None, "relu" or "relu6", fused into the op
        weight:      optional initial weight [OC, KH, KW, C] (OHWI)
        bias:        optional initial bias [OC]
        use_bias:    False omits the bias tensor

    Missing weights are drawn like torch.nn.Conv2d's, uniform in +-1/sqrt(KH*KW*C),
    weight first, from the model's numpy Generator.
    """

    NAME = "Conv2D"
    OP_TYPE = _ops.CONV2D

    def __init__(self, filters, kernel_size, strides=1, padding="valid", activation=None,
                 weight=None, bias=None, use_bias=True):
        if not _is_positive_int(filters):
            raise ValueError("Conv2D filters must be a positive integer, got %r" % (filters,))
        self.filters = int(filters)
        self._configure(kernel_size, strides, padding, activation, use_bias, bias)
        self.weight = None if weight is None else _as_float32_array(weight, "Conv2D weight")
        if self.weight is not None and (self.weight.ndim != 4 or
                                        self.weight.shape[:3] != (self.filters,) +
                                        self.kernel_size):
            raise ValueError("Conv2D weight must have shape [filters=%d, kh=%d, kw=%d, in_ch], "
                             "got %r" % ((self.filters,) + self.kernel_size +
                                         (list(self.weight.shape),)))
        self._check_given(self.bias, (self.filters,), "bias")

    def output_shape(self, input_shape):
        return self._spatial(input_shape) + (self.filters,)

    def _initial(self, input_shape, rng):
        kh, kw = self.kernel_size
        channels = input_shape[2]
        return self._draw(self.weight, (self.filters, kh, kw, channels), kh * kw * channels,
                          self.filters, rng)

    def __repr__(self):
        return "Conv2D(%d, %r, strides=%r, padding=%r, activation=%r)" % (
            self.filters, self.kernel_size, self.strides, self.padding, self.activation)


class DepthwiseConv2D(_Convolution):
    """Depthwise 2-D convolution, depth multiplier 1 (torch: Conv2d with groups=C).

    Args: as Conv2D without ``filters``; ``weight`` is [1, KH, KW, C], ``bias`` [C].
    Missing weights are drawn uniform in +-1/sqrt(KH*KW).
    """

    NAME = "DepthwiseConv2D"
    OP_TYPE = _ops.DEPTHWISE_CONV2D
    CHANNEL_AXIS = 3

    def __init__(self, kernel_size, strides=1, padding="valid", activation=None, weight=None,
                 bias=None, use_bias=True):
        self._configure(kernel_size, strides, padding, activation, use_bias, bias)
        self.weight = None if weight is None else _as_float32_array(weight,
                                                                    "DepthwiseConv2D weight")
        if self.weight is not None and (self.weight.ndim != 4 or
                                        self.weight.shape[:3] != (1,) + self.kernel_size):
            raise ValueError("DepthwiseConv2D weight must have shape [1, kh=%d, kw=%d, C], "
                             "got %r" % (self.kernel_size + (list(self.weight.shape),)))

    def output_shape(self, input_shape):
        return self._spatial(input_shape) + (input_shape[2],)

    def _initial(self, input_shape, rng):
        kh, kw = self.kernel_size
        channels = input_shape[2]
        return self._draw(self.weight, (1, kh, kw, channels), kh * kw, channels, rng)

    def __repr__(self):
        return "DepthwiseConv2D(%r, strides=%r, padding=%r, activation=%r)" % (
            self.kernel_size, self.strides, self.padding, self.activation)


class _Pool(Layer):
    NAME = None
    OP_TYPE = None

    def __init__(self, pool_size, strides=None, padding="valid"):
        self.pool_size = _pair(pool_size, "%s pool_size" % self.NAME)
        self.strides = self.pool_size if strides is None else _pair(strides, "%s strides"
                                                                    % self.NAME)
        self.padding = _check_pool_padding(padding, self.NAME)

    def output_shape(self, input_shape):
        return _spatial_output(input_shape, self.pool_size, self.strides, self.padding,
                               self.NAME) + (input_shape[2],)

    def emit(self, builder, input_tensor, input_shape, rng):
        output = builder.add_activation(self.output_shape(input_shape))
        params = _image.spatial_params(self.pool_size, self.strides,
                                       _image.PADDINGS.get(self.padding, self.padding))
        builder.add_op(self.OP_TYPE, [input_tensor], [output], params)
        return output

    def __repr__(self):
        return "%s(%r, strides=%r, padding=%r)" % (self.NAME, self.pool_size, self.strides,
                                                   self.padding)


class MaxPool2D(_Pool):
    """Maximum over each window (strides default to pool_size); padded positions never win.

    ``padding``: "valid", "same" (TFLite's), or explicit pads as PyTorch's MaxPool2d takes
    them: an int, (rows, columns), or ((top, bottom), (left, right)) for unequal sides
    (ceil_mode's extra window is padding after), each 0..255 and every window holding an
    input element."""
    NAME = "MaxPool2D"
    OP_TYPE = _ops.MAX_POOL2D


class AveragePool2D(_Pool):
    """Mean over the in-bounds elements of each window (strides default to pool_size).

    ``padding`` as MaxPool2D's; padded positions never count (PyTorch's
    ``count_include_pad=False``; to count them, ZeroPadding2D before a "valid" pool)."""
    NAME = "AveragePool2D"
    OP_TYPE = _ops.AVERAGE_POOL2D


class GlobalAveragePool(Layer):
    """(H, W, C) -> (C,): the mean over H*W of each channel."""

    def output_shape(self, input_shape):
        return (_check_image_shape(input_shape, "GlobalAveragePool")[2],)

    def emit(self, builder, input_tensor, input_shape, rng):
        output = builder.add_activation(self.output_shape(input_shape))
        builder.add_op(_ops.GLOBAL_AVERAGE_POOL, [input_tensor], [output])
        return output
