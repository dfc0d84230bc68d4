"""Layers of ``microtrain.Sequential``: Dense and the element-wise activations.

A layer knows its output shape and how to emit its ops into a model image; it
does not compute anything itself (the C core does). Shapes here are the shape
of one sample, without the batch dimension.
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


def _as_float32_array(value, what):
    array = np.asarray(value)
    if array.dtype.kind not in "fiu":
        raise ValueError("%s must hold real numbers, got dtype %s" % (what, array.dtype))
    array = np.ascontiguousarray(array, dtype=np.float32)
    if not np.all(np.isfinite(array)):
        raise ValueError("%s contains NaN or infinity" % what)
    return array


class Layer:
    """Base class: ``output_shape(input_shape)`` and ``emit(builder, input_tensor)``."""

    def output_shape(self, input_shape):
        return tuple(input_shape)

    def emit(self, builder, input_tensor, input_shape, rng):
        raise NotImplementedError("%s does not define emit()" % type(self).__name__)


class _Activation(Layer):
    OP_TYPE = None

    def emit(self, builder, input_tensor, input_shape, rng):
        output = builder.add_activation(input_shape)
        builder.add_op(self.OP_TYPE, [input_tensor], [output])
        return output

    def __repr__(self):
        return "%s()" % type(self).__name__


class ReLU(_Activation):
    """y = max(x, 0)"""
    OP_TYPE = _image.OP_RELU


class Sigmoid(_Activation):
    """y = 1 / (1 + e^-x)"""
    OP_TYPE = _image.OP_SIGMOID


class Tanh(_Activation):
    """y = tanh(x)"""
    OP_TYPE = _image.OP_TANH


class Softmax(_Activation):
    """y = e^x / sum(e^x) over the last dimension."""
    OP_TYPE = _image.OP_SOFTMAX


class Dense(Layer):
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
        if isinstance(units, bool) or not isinstance(units, (int, np.integer)) or units < 1:
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
        if not self.use_bias:
            return weight, None
        if self.bias is None:
            bias = rng.uniform(-bound, bound, size=(self.units,)).astype(np.float32)
        else:
            bias = self.bias
        return weight, bias

    def emit(self, builder, input_tensor, input_shape, rng):
        in_features = _element_count(input_shape)
        weight, bias = self.initial_weights(in_features, rng)
        weight_tensor = builder.add_weight(weight)
        bias_tensor = None if bias is None else builder.add_weight(bias)
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
