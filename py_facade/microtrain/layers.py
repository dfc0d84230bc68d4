"""Layers of ``microtrain.Sequential`` and ``microtrain.Model``.

A layer knows its output shape and how to emit its ops into a model image; it
does not compute anything itself (the C core does). Shapes here are the shape
of one sample, without the batch dimension; images are NHWC, so one sample of
a convolution's input is ``(H, W, C)``.

Weight layouts are TFLite's (and the core's): Dense ``[units, in_features]``
(torch.nn.Linear), Conv2D ``[out_ch, kh, kw, in_ch]`` (torch's OIHW is
``w.permute(0, 2, 3, 1)``), DepthwiseConv2D ``[1, kh, kw, C]`` (torch's
``[C, 1, kh, kw]`` with groups=C is ``w.permute(1, 2, 3, 0)``).

Layers are stateless descriptions: calling one on a symbolic tensor
(``layer(x)``, see ``microtrain.Input``) records a graph node and changes nothing
in the layer, so one layer object may describe a layer of several models.
"""

import numpy as np

from . import _image

ACTIVATION_OPS = {
    "relu": _image.OP_RELU,
    "sigmoid": _image.OP_SIGMOID,
    "tanh": _image.OP_TANH,
    "softmax": _image.OP_SOFTMAX,
}


def _element_count(shape):
    count = 1
    for dim in shape:
        count *= dim
    return count


def _check_activation(activation):
    if activation is None:
        return None
    if not isinstance(activation, str) or activation.lower() not in ACTIVATION_OPS:
        raise ValueError("unknown activation %r; expected None or one of %s"
                         % (activation, ", ".join(sorted(ACTIVATION_OPS))))
    return activation.lower()


def _check_fused_activation(activation, layer):
    """Activations a convolution fuses into its op: None, "relu", "relu6"."""
    name = activation.lower() if isinstance(activation, str) else activation
    if name not in _image.FUSED_ACTIVATIONS:
        raise ValueError("%s activation must be None, 'relu' or 'relu6' (fused into the op), "
                         "got %r" % (layer, activation))
    return name


def _as_float32_array(value, what):
    array = np.asarray(value)
    if array.dtype.kind not in "fiu":
        raise ValueError("%s must hold real numbers, got dtype %s" % (what, array.dtype))
    array = np.ascontiguousarray(array, dtype=np.float32)
    if not np.all(np.isfinite(array)):
        raise ValueError("%s contains NaN or infinity" % what)
    return array


def _is_positive_int(value):
    return not isinstance(value, bool) and isinstance(value, (int, np.integer)) and value >= 1


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


def _check_image_shape(input_shape, layer):
    if len(input_shape) != 3:
        raise ValueError("%s takes one sample of shape (H, W, C) (NHWC without the batch), "
                         "got %r" % (layer, tuple(input_shape)))
    return tuple(input_shape)


def _spatial_output(input_shape, kernel, strides, padding, layer):
    height, width, _ = _check_image_shape(input_shape, layer)
    code = _image.PADDINGS[padding]
    out_h = _image.spatial_output_size(height, kernel[0], strides[0], code)
    out_w = _image.spatial_output_size(width, kernel[1], strides[1], code)
    if out_h < 1 or out_w < 1:
        raise ValueError("%s: a %dx%d window does not fit a %dx%d input with padding 'valid'"
                         % (layer, kernel[0], kernel[1], height, width))
    return out_h, out_w


class Layer:
    """Base class: ``output_shape(input_shape)`` and ``emit(builder, input_tensor,
    input_shape, rng)`` (the tensor index of its output). Layers that merge branches
    (``MERGES``: Add, Concatenate) take lists of tensors and shapes instead.

    Calling a layer on a symbolic tensor (``microtrain.Input`` or another layer's
    output) returns the symbolic tensor of its output: the functional form of
    ``microtrain.Model``.
    """

    MERGES = False

    def output_shape(self, input_shape):
        return tuple(input_shape)

    def emit(self, builder, input_tensor, input_shape, rng):
        raise NotImplementedError("%s does not define emit()" % type(self).__name__)

    def __call__(self, inputs):
        from . import functional
        return functional.apply(self, inputs)

    def __repr__(self):
        return "%s()" % type(self).__name__


class _Activation(Layer):
    OP_TYPE = None

    def params(self):
        return ()

    def emit(self, builder, input_tensor, input_shape, rng):
        output = builder.add_activation(input_shape)
        builder.add_op(self.OP_TYPE, [input_tensor], [output], self.params())
        return output


class ReLU(_Activation):
    """y = max(x, 0)"""
    OP_TYPE = _image.OP_RELU


class ReLU6(_Activation):
    """y = min(max(x, 0), 6)"""
    OP_TYPE = _image.OP_RELU6


class LeakyReLU(_Activation):
    """y = x if x > 0 else alpha * x, alpha >= 0 (torch.nn.LeakyReLU's negative_slope)."""
    OP_TYPE = _image.OP_LEAKY_RELU

    def __init__(self, alpha=0.01):
        try:
            value = float(alpha)
        except (TypeError, ValueError):
            raise ValueError("LeakyReLU alpha must be a number >= 0, got %r" % (alpha,)) from None
        if not np.isfinite(value) or value < 0.0:
            raise ValueError("LeakyReLU alpha must be a finite number >= 0, got %r" % (alpha,))
        self.alpha = float(np.float32(value))  # the op stores it as f32

    def params(self):
        return (_image.f32_bits(self.alpha),)

    def __repr__(self):
        return "LeakyReLU(alpha=%r)" % self.alpha


class Sigmoid(_Activation):
    """y = 1 / (1 + e^-x)"""
    OP_TYPE = _image.OP_SIGMOID


class Tanh(_Activation):
    """y = tanh(x)"""
    OP_TYPE = _image.OP_TANH


class Softmax(_Activation):
    """y = e^x / sum(e^x) over the last dimension."""
    OP_TYPE = _image.OP_SOFTMAX


class _Weighted(Layer):
    """A layer with a weight and an optional bias that a following BatchNorm folds into.

    Subclasses define ``CHANNEL_AXIS`` (the weight axis of the output channels),
    ``_initial(input_shape, rng)`` -> (weight, bias or None) and
    ``_emit_ops(builder, input_tensor, input_shape, weight_tensor, bias_tensor)``.
    """

    CHANNEL_AXIS = 0
    activation = None

    def emit(self, builder, input_tensor, input_shape, rng, batch_norms=()):
        weight, bias = self._initial(input_shape, rng)
        for batch_norm in batch_norms:
            weight, bias = batch_norm.fold(weight, bias, self.CHANNEL_AXIS)
        weight_tensor = builder.add_weight(weight)
        bias_tensor = None if bias is None else builder.add_weight(bias)
        return self._emit_ops(builder, input_tensor, input_shape, weight_tensor, bias_tensor)

    def _initial_bias(self, given, count, bound, rng):
        if not self.use_bias:
            return None
        if given is not None:
            return given
        return rng.uniform(-bound, bound, size=(count,)).astype(np.float32)


class Dense(_Weighted):
    """Fully connected layer ``y = x . W^T + b`` on the flattened sample.

    Args:
        units:      output features U
        activation: None, "relu", "sigmoid", "tanh" or "softmax"; emitted as a
                    separate op after the Dense op
        weight:     optional initial weight, shape [units, in_features] (torch.nn.Linear layout)
        bias:       optional initial bias, shape [units]
        use_bias:   False omits the bias tensor

    Missing weights are drawn like torch.nn.Linear's default initialisation,
    uniform in [-1/sqrt(in_features), 1/sqrt(in_features)), weight first, from the
    model's numpy Generator (only the tensors not given explicitly consume draws).
    """

    def __init__(self, units, activation=None, weight=None, bias=None, use_bias=True):
        if not _is_positive_int(units):
            raise ValueError("Dense units must be a positive integer, got %r" % (units,))
        self.units = int(units)
        self.activation = _check_activation(activation)
        self.use_bias = bool(use_bias)
        if bias is not None and not self.use_bias:
            raise ValueError("Dense got a bias but use_bias=False")
        self.weight = None if weight is None else _as_float32_array(weight, "Dense weight")
        self.bias = None if bias is None else _as_float32_array(bias, "Dense bias")
        if self.weight is not None and (self.weight.ndim != 2 or self.weight.shape[0] != units):
            raise ValueError("Dense weight must have shape [units=%d, in_features], got %r"
                             % (units, self.weight.shape))
        if self.bias is not None and self.bias.shape != (self.units,):
            raise ValueError("Dense bias must have shape [%d], got %r"
                             % (self.units, self.bias.shape))

    def output_shape(self, input_shape):
        return (self.units,)

    def initial_weights(self, in_features, rng):
        """The (weight, bias) this layer starts from; bias is None without use_bias."""
        bound = 1.0 / np.sqrt(in_features)
        if self.weight is None:
            weight = rng.uniform(-bound, bound, size=(self.units, in_features)).astype(np.float32)
        else:
            if self.weight.shape != (self.units, in_features):
                raise ValueError("Dense weight must have shape [units, in_features] = [%d, %d], "
                                 "got %r" % (self.units, in_features, self.weight.shape))
            weight = self.weight
        return weight, self._initial_bias(self.bias, self.units, bound, rng)

    def _initial(self, input_shape, rng):
        return self.initial_weights(_element_count(input_shape), rng)

    def _emit_ops(self, builder, input_tensor, input_shape, weight_tensor, bias_tensor):
        output = builder.add_activation((self.units,))
        builder.add_op(_image.OP_DENSE, [input_tensor, weight_tensor, bias_tensor], [output])
        if self.activation is None:
            return output
        activated = builder.add_activation((self.units,))
        builder.add_op(ACTIVATION_OPS[self.activation], [output], [activated])
        return activated

    def __repr__(self):
        return "Dense(%d, activation=%r, use_bias=%r)" % (self.units, self.activation,
                                                          self.use_bias)


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
    OP_TYPE = _image.OP_CONV2D

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
    OP_TYPE = _image.OP_DEPTHWISE_CONV2D
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
        self.padding = _check_padding(padding, self.NAME)

    def output_shape(self, input_shape):
        return _spatial_output(input_shape, self.pool_size, self.strides, self.padding,
                               self.NAME) + (input_shape[2],)

    def emit(self, builder, input_tensor, input_shape, rng):
        output = builder.add_activation(self.output_shape(input_shape))
        params = _image.spatial_params(self.pool_size, self.strides,
                                       _image.PADDINGS[self.padding])
        builder.add_op(self.OP_TYPE, [input_tensor], [output], params)
        return output

    def __repr__(self):
        return "%s(%r, strides=%r, padding=%r)" % (self.NAME, self.pool_size, self.strides,
                                                   self.padding)


class MaxPool2D(_Pool):
    """Maximum over each window (strides default to pool_size); padded positions never win."""
    NAME = "MaxPool2D"
    OP_TYPE = _image.OP_MAX_POOL2D


class AveragePool2D(_Pool):
    """Mean over the in-bounds elements of each window (strides default to pool_size)."""
    NAME = "AveragePool2D"
    OP_TYPE = _image.OP_AVERAGE_POOL2D


class GlobalAveragePool(Layer):
    """(H, W, C) -> (C,): the mean over H*W of each channel."""

    def output_shape(self, input_shape):
        return (_check_image_shape(input_shape, "GlobalAveragePool")[2],)

    def emit(self, builder, input_tensor, input_shape, rng):
        output = builder.add_activation(self.output_shape(input_shape))
        builder.add_op(_image.OP_GLOBAL_AVERAGE_POOL, [input_tensor], [output])
        return output


class Reshape(Layer):
    """The same elements in a new sample shape (1..4 dimensions, no batch dimension)."""

    def __init__(self, target_shape):
        if _is_positive_int(target_shape):
            target_shape = (target_shape,)
        if not isinstance(target_shape, (tuple, list)) or not 1 <= len(target_shape) <= \
                _image.MAX_DIMS or not all(_is_positive_int(d) for d in target_shape):
            raise ValueError("Reshape target_shape must be 1..%d positive integers, got %r"
                             % (_image.MAX_DIMS, target_shape))
        self.target_shape = tuple(int(d) for d in target_shape)

    def output_shape(self, input_shape):
        if _element_count(self.target_shape) != _element_count(input_shape):
            raise ValueError("cannot reshape a sample of shape %r (%d elements) to %r"
                             % (tuple(input_shape), _element_count(input_shape),
                                self.target_shape))
        return self.target_shape

    def emit(self, builder, input_tensor, input_shape, rng):
        output = builder.add_activation(self.output_shape(input_shape))
        builder.add_op(_image.OP_RESHAPE, [input_tensor], [output])
        return output

    def __repr__(self):
        return "Reshape(%r)" % (self.target_shape,)


class Flatten(Reshape):
    """One sample to one dimension (a RESHAPE op): (H, W, C) -> (H*W*C,)."""

    def __init__(self):
        self.target_shape = None

    def output_shape(self, input_shape):
        return (_element_count(input_shape),)

    def __repr__(self):
        return "Flatten()"


class Add(Layer):
    """y = a + b (+ ...) of branches of one shape: a residual connection. Called on a list
    of two or more symbolic tensors; more than two emit a chain of ADD ops."""

    MERGES = True

    def output_shape(self, input_shapes):
        shapes = [tuple(s) for s in input_shapes]
        if len(shapes) < 2:
            raise ValueError("Add takes a list of at least two tensors, got %d" % len(shapes))
        if any(s != shapes[0] for s in shapes):
            raise ValueError("Add needs tensors of one shape, got %s" % shapes)
        return shapes[0]

    def emit(self, builder, input_tensors, input_shapes, rng):
        shape = self.output_shape(input_shapes)
        total = input_tensors[0]
        for other in input_tensors[1:]:
            output = builder.add_activation(shape)
            builder.add_op(_image.OP_ADD, [total, other], [output])
            total = output
        return total


class Concatenate(Layer):
    """Join two to four tensors along the last dimension (channels of an NHWC sample);
    every other dimension must be equal."""

    MERGES = True
    MAX_INPUTS = 4

    def output_shape(self, input_shapes):
        shapes = [tuple(s) for s in input_shapes]
        if not 2 <= len(shapes) <= self.MAX_INPUTS:
            raise ValueError("Concatenate takes a list of 2..%d tensors, got %d"
                             % (self.MAX_INPUTS, len(shapes)))
        if any(len(s) != len(shapes[0]) or s[:-1] != shapes[0][:-1] for s in shapes):
            raise ValueError("Concatenate joins along the last dimension; the others must be "
                             "equal, got %s" % shapes)
        return shapes[0][:-1] + (sum(s[-1] for s in shapes),)

    def emit(self, builder, input_tensors, input_shapes, rng):
        output = builder.add_activation(self.output_shape(input_shapes))
        builder.add_op(_image.OP_CONCATENATION, list(input_tensors), [output])
        return output


class BatchNorm(Layer):
    """Inference-mode batch normalisation, folded at build time into the Conv2D,
    DepthwiseConv2D or Dense right before it (which must have no activation and feed
    nothing else). Per output channel c, with s = gamma / sqrt(var + eps)::

        w'[c] = w[c] * s        b'[c] = (b[c] - mean[c]) * s + beta

    (a missing bias counts as 0, so the folded layer always has one). It emits no op:
    the model computes exactly torch's eval-mode Conv2d + BatchNorm2d in one op.

    Args: 1-D arrays of the channel count; None means gamma 1, beta 0, mean 0, var 1.
    """

    FOLDS_INTO = (Conv2D, DepthwiseConv2D, Dense)

    def __init__(self, gamma=None, beta=None, mean=None, var=None, eps=1e-5):
        self.gamma, self.beta, self.mean, self.var = [
            None if value is None else _as_float32_array(value, "BatchNorm " + name)
            for value, name in ((gamma, "gamma"), (beta, "beta"), (mean, "mean"), (var, "var"))]
        sizes = set()
        for name in ("gamma", "beta", "mean", "var"):
            value = getattr(self, name)
            if value is not None:
                if value.ndim != 1:
                    raise ValueError("BatchNorm %s must be 1-D (one value per channel), got "
                                     "shape %r" % (name, value.shape))
                sizes.add(value.shape[0])
        if len(sizes) > 1:
            raise ValueError("BatchNorm gamma, beta, mean and var must have one length, got %s"
                             % sorted(sizes))
        if self.var is not None and np.any(self.var < 0):
            raise ValueError("BatchNorm var must be >= 0")
        try:
            self.eps = float(eps)
        except (TypeError, ValueError):
            raise ValueError("BatchNorm eps must be a positive number, got %r" % (eps,)) from None
        if not np.isfinite(self.eps) or self.eps <= 0.0:
            raise ValueError("BatchNorm eps must be a positive number, got %r" % (eps,))

    def _vector(self, value, default, channels, name):
        if value is None:
            return np.full(channels, default, dtype=np.float64)
        if value.shape != (channels,):
            raise ValueError("BatchNorm %s has %d values, the layer before it has %d channels"
                             % (name, value.shape[0], channels))
        return value.astype(np.float64)

    def fold(self, weight, bias, channel_axis):
        """(weight', bias') of the layer this folds into (float64 math, float32 result)."""
        channels = weight.shape[channel_axis]
        gamma = self._vector(self.gamma, 1.0, channels, "gamma")
        beta = self._vector(self.beta, 0.0, channels, "beta")
        mean = self._vector(self.mean, 0.0, channels, "mean")
        var = self._vector(self.var, 1.0, channels, "var")
        scale = gamma / np.sqrt(var + self.eps)
        shape = [1] * weight.ndim
        shape[channel_axis] = channels
        folded_weight = weight.astype(np.float64) * scale.reshape(shape)
        base = np.zeros(channels) if bias is None else bias.astype(np.float64)
        folded_bias = (base - mean) * scale + beta
        if not (np.all(np.isfinite(folded_weight)) and np.all(np.isfinite(folded_bias))):
            raise ValueError("folding BatchNorm gives NaN or infinite weights")
        return folded_weight.astype(np.float32), folded_bias.astype(np.float32)

    def emit(self, builder, input_tensor, input_shape, rng):
        raise ValueError("BatchNorm has no op of its own: it folds into a Conv2D, "
                         "DepthwiseConv2D or Dense right before it")

    def __repr__(self):
        return "BatchNorm(eps=%r)" % self.eps
