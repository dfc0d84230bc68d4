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

from . import image as _image
from .. import ops as _ops
from .._shapes import element_count
from ._base import (ACTIVATION_OPS, Layer, _Weighted, _as_float32_array, _check_activation,
                    _emit_chain, _is_positive_int)
from ._arithmetic_layers import Multiply, Permute, Subtract, ZeroPadding2D
from ._spatial_layers import (AveragePool2D, Conv2D, DepthwiseConv2D, GlobalAveragePool,
                              MaxPool2D)

__all__ = ["Layer", "ReLU", "ReLU6", "LeakyReLU", "Sigmoid", "Tanh", "Softmax", "Dense",
           "Conv2D", "DepthwiseConv2D", "MaxPool2D", "AveragePool2D", "GlobalAveragePool",
           "Reshape", "Flatten", "Add", "Concatenate", "BatchNorm", "ZeroPadding2D", "Permute",
           "Multiply", "Subtract"]


class _Activation(Layer):
    OP_TYPE = None

    def params(self):
        """The op's integer parameters in the image (none for a plain activation)."""
        return ()

    def emit(self, builder, input_tensor, input_shape, rng):
        output = builder.add_activation(input_shape)
        builder.add_op(self.OP_TYPE, [input_tensor], [output], self.params())
        return output


class ReLU(_Activation):
    """y = max(x, 0)"""
    OP_TYPE = _ops.RELU


class ReLU6(_Activation):
    """y = min(max(x, 0), 6)"""
    OP_TYPE = _ops.RELU6


class LeakyReLU(_Activation):
    """y = x if x > 0 else alpha * x, alpha >= 0 (torch.nn.LeakyReLU's negative_slope)."""
    OP_TYPE = _ops.LEAKY_RELU

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
    OP_TYPE = _ops.SIGMOID


class Tanh(_Activation):
    """y = tanh(x)"""
    OP_TYPE = _ops.TANH


class Softmax(_Activation):
    """y = e^x / sum(e^x) over the last dimension."""
    OP_TYPE = _ops.SOFTMAX


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
        return self.initial_weights(element_count(input_shape), rng)

    def _emit_ops(self, builder, input_tensor, input_shape, weight_tensor, bias_tensor):
        output = builder.add_activation((self.units,))
        builder.add_op(_ops.DENSE, [input_tensor, weight_tensor, bias_tensor], [output])
        if self.activation is None:
            return output
        activated = builder.add_activation((self.units,))
        builder.add_op(ACTIVATION_OPS[self.activation], [output], [activated])
        return activated

    def __repr__(self):
        return "Dense(%d, activation=%r, use_bias=%r)" % (self.units, self.activation,
                                                          self.use_bias)


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
        if element_count(self.target_shape) != element_count(input_shape):
            raise ValueError("cannot reshape a sample of shape %r (%d elements) to %r"
                             % (tuple(input_shape), element_count(input_shape),
                                self.target_shape))
        return self.target_shape

    def emit(self, builder, input_tensor, input_shape, rng):
        output = builder.add_activation(self.output_shape(input_shape))
        builder.add_op(_ops.RESHAPE, [input_tensor], [output])
        return output

    def __repr__(self):
        return "Reshape(%r)" % (self.target_shape,)


class Flatten(Reshape):
    """One sample to one dimension (a RESHAPE op): (H, W, C) -> (H*W*C,)."""

    def __init__(self):
        self.target_shape = None

    def output_shape(self, input_shape):
        return (element_count(input_shape),)

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
        return _emit_chain(builder, _ops.ADD, input_tensors, self.output_shape(input_shapes))


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
        builder.add_op(_ops.CONCATENATION, list(input_tensors), [output])
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
