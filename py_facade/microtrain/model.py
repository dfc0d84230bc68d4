"""``microtrain.Sequential``: build a model image without an importer.

    model = microtrain.Sequential(
        [layers.Dense(32, activation="relu"), layers.Dense(10), layers.Softmax()],
        input_shape=(64,), seed=0)
    model.save("digits.mtm")

Tensor table order: the input, then for every layer its CONST tensors (a
Dense's weight, then its bias) followed by the tensors it produces. The core
lists weights in tensor-table order, so ``TrainSession.get_weights()`` returns
them in layer order, weight then bias, the same order as
``Sequential.get_weights()``.
"""

import numpy as np

from . import _image, _random
from .layers import Layer


class _ImageBuilder:
    """Collects tensors and ops while layers emit themselves."""

    def __init__(self):
        self.tensors = []
        self.ops = []
        self.weights = []

    def _add(self, spec):
        self.tensors.append(spec)
        return len(self.tensors) - 1

    def add_input(self, shape):
        return self._add(_image.TensorSpec(shape, flags=_image.FLAG_INPUT))

    def add_activation(self, shape):
        return self._add(_image.TensorSpec(shape))

    def add_weight(self, array):
        self.weights.append(array)
        flags = _image.FLAG_CONST | _image.FLAG_TRAINABLE
        return self._add(_image.TensorSpec(array.shape, flags=flags, data=array))

    def add_op(self, op_type, inputs, outputs):
        self.ops.append(_image.OpSpec(op_type, inputs, outputs))

    def mark_output(self, index):
        self.tensors[index].flags |= _image.FLAG_OUTPUT


def _check_input_shape(input_shape):
    if isinstance(input_shape, (int, np.integer)):
        input_shape = (input_shape,)
    try:
        shape = tuple(int(d) for d in input_shape)
    except (TypeError, ValueError):
        raise ValueError("input_shape must be a tuple of positive integers, got %r"
                         % (input_shape,)) from None
    if not 1 <= len(shape) <= _image.MAX_DIMS or any(d < 1 for d in shape):
        raise ValueError("input_shape must have 1..%d positive dimensions (one sample, no "
                         "batch dimension), got %r" % (_image.MAX_DIMS, input_shape))
    return shape


class Sequential:
    """A linear stack of layers, frozen into a model image at construction.

    Args:
        layers:      list of ``microtrain.layers`` instances, at least one
        input_shape: shape of one input sample (no batch dimension), 1..4 dims
        seed:        seed of the ``numpy.random.default_rng`` that draws weights
                     not given explicitly (None: the next seed derived from
                     ``microtrain.set_seed``, or fresh entropy if no seed was set)

    ``layer_ops[i]`` lists the op indices layer ``i`` emitted (a Dense with an
    activation emits two ops); ``TrainSession.compile(trainable=[...])`` maps layer
    positions to ops with it.
    """

    def __init__(self, layers, input_shape, seed=None):
        layers = list(layers)
        if not layers:
            raise ValueError("Sequential needs at least one layer")
        for position, layer in enumerate(layers):
            if not isinstance(layer, Layer):
                raise ValueError("layer %d is %r, not a microtrain.layers layer"
                                 % (position, layer))
        self.layers = layers
        self.input_shape = _check_input_shape(input_shape)
        seed = _random.check_seed(seed)
        self.seed = _random.derive_seed() if seed is None else seed

        rng = np.random.default_rng(self.seed)
        builder = _ImageBuilder()
        tensor = builder.add_input(self.input_shape)
        shape = self.input_shape
        self.layer_ops = []
        for position, layer in enumerate(layers):
            first_op = len(builder.ops)
            try:
                tensor = layer.emit(builder, tensor, shape, rng)
            except ValueError as error:
                raise ValueError("layer %d (%r): %s" % (position, layer, error)) from None
            self.layer_ops.append(list(range(first_op, len(builder.ops))))
            shape = layer.output_shape(shape)
        builder.mark_output(tensor)
        self.output_shape = shape
        self._image = _image.write_image(builder.tensors, builder.ops, [0], [tensor])
        self._weights = [np.array(w, dtype=np.float32) for w in builder.weights]

    def to_bytes(self):
        """The ``.mtm`` model image."""
        return self._image

    def save(self, path):
        """Write the model image to ``path``."""
        with open(path, "wb") as handle:
            handle.write(self._image)

    def get_weights(self):
        """Initial weights in layer order, each Dense's weight then bias (copies)."""
        return [w.copy() for w in self._weights]

    def __repr__(self):
        return "Sequential(%r, input_shape=%r)" % (self.layers, self.input_shape)
