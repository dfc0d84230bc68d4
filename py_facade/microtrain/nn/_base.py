"""The base of the model builder, under every other module of ``nn/`` but ``image``: the
Layer and weighted-layer bases, the argument checks the layer modules use, and the symbolic
tensor a layer call returns (``Layer.__call__``; ``functional`` builds models' graphs from
them). layers.py gathers every public layer."""

import itertools

import numpy as np

from . import image as _image
from .. import ops as _ops

ACTIVATION_OPS = {
    "relu": _ops.RELU,
    "sigmoid": _ops.SIGMOID,
    "tanh": _ops.TANH,
    "softmax": _ops.SOFTMAX,
}


def _emit_chain(builder, op_type, tensors, shape):
    """((t0 op t1) op t2) ...: one two-input ``op_type`` op per tensor after the first, each
    output of ``shape``; the last output (``tensors[0]`` itself when it is alone)."""
    total = tensors[0]
    for other in tensors[1:]:
        output = builder.add_activation(shape)
        builder.add_op(op_type, [total, other], [output])
        total = output
    return total


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


_CALL_ORDER = itertools.count()  # SymbolicTensor.order: the order of the calls, the ops' order


class SymbolicTensor:
    """The output of ``Input`` or of a layer call: a shape and how it is computed."""

    def __init__(self, shape, layer=None, inputs=()):
        self.shape = tuple(shape)
        self.layer = layer          # None for a model input
        self.inputs = list(inputs)  # SymbolicTensors the layer was called on
        self.order = next(_CALL_ORDER)

    @property
    def is_input(self):
        return self.layer is None

    def __repr__(self):
        source = "Input" if self.layer is None else repr(self.layer)
        return "<SymbolicTensor %r from %s>" % (self.shape, source)


def _check_symbolic(value, layer):
    if not isinstance(value, SymbolicTensor):
        raise TypeError("%r is called on microtrain.Input() or another layer's output, got %r"
                        % (layer, value))
    return value


def apply(layer, inputs):
    """``layer(inputs)``: the SymbolicTensor of its output (shapes checked now)."""
    if layer.MERGES:
        if not isinstance(inputs, (list, tuple)):
            raise TypeError("%r is called on a list of tensors, got %r" % (layer, inputs))
        tensors = [_check_symbolic(t, layer) for t in inputs]
        shape = layer.output_shape([t.shape for t in tensors])
    else:
        if isinstance(inputs, (list, tuple)):
            if len(inputs) != 1:
                raise TypeError("%r takes one tensor, got %d" % (layer, len(inputs)))
            inputs = inputs[0]
        tensors = [_check_symbolic(inputs, layer)]
        shape = layer.output_shape(tensors[0].shape)
    return SymbolicTensor(shape, layer, tensors)


class Layer:
    """Base class: ``output_shape(input_shape)`` and ``emit(builder, input_tensor,
    input_shape, rng)`` (the tensor index of its output). Layers that merge branches
    (``MERGES``: Add, Concatenate) take lists of tensors and shapes instead.

    Calling a layer on a symbolic tensor (``microtrain.Input`` or another layer's
    output) returns the symbolic tensor of its output: the functional form of
    ``microtrain.Model``.

    Every op ``emit()`` adds with ``builder.add_op`` belongs to this layer: the builder
    writes the layer's number into the op's image entry (``Model.image_layers``), so the
    ops of one layer must be emitted together, by one ``emit()`` call.
    """

    MERGES = False

    def output_shape(self, input_shape):
        """The shape of one sample of this layer's output, given one sample's input shape
        (a tuple without the batch dimension); the default keeps the shape.
        """
        return tuple(input_shape)

    def emit(self, builder, input_tensor, input_shape, rng):
        """Add this layer's ops (and weights) to ``builder`` and return its output tensor.

        Called once per layer while a model's image is built: ``input_tensor`` is the
        builder's tensor id of the input, ``input_shape`` one sample's shape, ``rng`` the
        seeded ``numpy.random.Generator`` for initial weights. A merging layer
        (``MERGES = True``) gets lists of tensors and shapes instead.
        """
        raise NotImplementedError("%s does not define emit()" % type(self).__name__)

    def __call__(self, inputs):
        return apply(self, inputs)

    def __repr__(self):
        return "%s()" % type(self).__name__


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
