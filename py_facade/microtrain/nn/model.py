"""``microtrain.Sequential`` and ``microtrain.Model``: build a model image without an
importer.

    model = microtrain.Sequential(
        [layers.Dense(32, activation="relu"), layers.Dense(10), layers.Softmax()],
        input_shape=(64,), seed=0)
    model.save("digits.mtm")

    x = microtrain.Input((8, 8, 1))                   # functional form: any DAG
    y = layers.Conv2D(8, 3, padding="same", activation="relu")(x)
    z = layers.Concatenate()([y, layers.DepthwiseConv2D(3, padding="same")(y)])
    out = layers.Dense(10, activation="softmax")(layers.GlobalAveragePool()(z))
    model = microtrain.Model(x, out)

Tensor table order: the inputs, then for every layer (in the order layers were
called, which is ``model.layers``) its CONST tensors (weight, then bias)
followed by the tensors it produces. The core lists weights in tensor-table
order, so ``TrainSession.get_weights()`` returns them in layer order, weight then
bias, the same order as ``model.get_weights()``. ``layer_ops[i]`` lists the ops of
``model.layers[i]``; ``TrainSession.compile(trainable=[i, ...])`` takes these
layer positions.

The image (version 2) records the layer of every op, its position in ``model.layers``, so
a session opened from the image file alone numbers layers as the model does;
``image_layers[i]`` is ``i`` for a layer that emits ops and None for one that emits none
(a BatchNorm folded into the layer before it).
"""

import numpy as np

from .. import _files
from . import image as _image
from .. import _random
from . import functional
from .layers import BatchNorm, Layer


class _ImageBuilder:
    """Collects tensors and ops while layers emit themselves."""

    def __init__(self):
        self.tensors = []
        self.ops = []
        self.weights = []
        self.layer = 0  # the image layer of the ops added now (Model._build advances it)

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

    def add_constant(self, array):
        """A frozen constant (CONST, not TRAINABLE: Multiply/Subtract's operand); listed with
        the weights, as mt_session_param lists every CONST f32 tensor."""
        self.weights.append(array)
        return self._add(_image.TensorSpec(array.shape, flags=_image.FLAG_CONST, data=array))

    def add_op(self, op_type, inputs, outputs, params=()):
        self.ops.append(_image.OpSpec(op_type, inputs, outputs, params, layer=self.layer))

    def mark_output(self, index):
        self.tensors[index].flags |= _image.FLAG_OUTPUT


def _batch_norm_folds(nodes, outputs):
    """{id(producer node): [BatchNorm, ...]}: which layer each BatchNorm folds into."""
    consumers = {}
    for node in nodes:
        for source in node.inputs:
            consumers.setdefault(id(source), []).append(node)
    output_ids = set(id(t) for t in outputs)
    folds = {}
    for node in nodes:
        if not isinstance(node.layer, BatchNorm):
            continue
        producer = node.inputs[0]
        if producer.is_input or not isinstance(producer.layer, BatchNorm.FOLDS_INTO):
            raise ValueError("BatchNorm folds into a Conv2D, DepthwiseConv2D or Dense right "
                             "before it, not into %s" % ("an Input" if producer.is_input
                                                         else repr(producer.layer)))
        if producer.layer.activation is not None:
            raise ValueError("BatchNorm cannot fold into %r: it has activation %r; put the "
                             "activation after the BatchNorm" % (producer.layer,
                                                                 producer.layer.activation))
        if len(consumers[id(producer)]) > 1 or id(producer) in output_ids:
            raise ValueError("BatchNorm cannot fold into %r: its output also feeds another "
                             "layer or is a model output" % (producer.layer,))
        folds.setdefault(id(producer), []).append(node.layer)
    return folds


class ImageModel:
    """What a model object does with its ``.mtm`` image ``self._image`` (a built ``Model``,
    an imported ``convert.ConvertedModel``): give the bytes, save them."""

    def to_bytes(self):
        """The ``.mtm`` model image."""
        return self._image

    def save(self, path):
        """Write the ``.mtm`` image to ``path``, atomically (``microtrain._files``:
        only a regular file is replaced; a failure leaves the previous file)."""
        _files.atomic_write(path, lambda writer: writer.write(self._image))


class Model(ImageModel):
    """A graph of layers from ``microtrain.Input`` tensors to outputs, frozen into a model
    image at construction.

    Args:
        inputs:  a ``microtrain.Input`` tensor or a list of them (the model's input order)
        outputs: a layer output or a list of them; the loss applies to output 0
        seed:    seed of the ``numpy.random.default_rng`` that draws weights not given
                 explicitly (None: the next seed derived from ``microtrain.set_seed``,
                 or fresh entropy if no seed was set)

    ``layers`` lists the layers in the order they were called; ``layer_ops[i]`` the op
    indices ``layers[i]`` emitted (a Dense with an activation emits two ops, a folded
    BatchNorm none); ``image_layers[i]`` the layer number those ops carry in the image
    (None when there are none; see the module doc).
    """

    def __init__(self, inputs, outputs, seed=None):
        inputs = functional.as_list(inputs, "input")
        outputs = functional.as_list(outputs, "output")
        for tensor in inputs:
            if not tensor.is_input:
                raise ValueError("model inputs are microtrain.Input() tensors, got %r"
                                 % (tensor,))
        if len(set(id(t) for t in inputs)) != len(inputs):
            raise ValueError("an Input is listed twice among the model's inputs")
        self._build(inputs, outputs, functional.graph(inputs, outputs), seed)

    def _build(self, inputs, outputs, nodes, seed):
        if not nodes:
            raise ValueError("the model has no layer between its inputs and outputs")
        seed = _random.check_seed(seed)
        self.seed = _random.derive_seed() if seed is None else seed
        self.layers = [node.layer for node in nodes]
        self.input_shapes = [t.shape for t in inputs]
        self.output_shapes = [t.shape for t in outputs]
        folds = _batch_norm_folds(nodes, outputs)

        rng = np.random.default_rng(self.seed)
        builder = _ImageBuilder()
        tensor_of = {id(t): builder.add_input(t.shape) for t in inputs}
        self.layer_ops = []
        self.image_layers = []
        for position, node in enumerate(nodes):
            first_op = len(builder.ops)
            builder.layer = position  # the image records model.layers positions
            sources = [tensor_of[id(t)] for t in node.inputs]
            try:
                if isinstance(node.layer, BatchNorm):
                    tensor = sources[0]  # folded into its producer's weights
                elif node.layer.MERGES:
                    tensor = node.layer.emit(builder, sources, [t.shape for t in node.inputs],
                                             rng)
                elif id(node) in folds:
                    tensor = node.layer.emit(builder, sources[0], node.inputs[0].shape, rng,
                                             batch_norms=folds[id(node)])
                else:
                    tensor = node.layer.emit(builder, sources[0], node.inputs[0].shape, rng)
            except ValueError as error:
                raise ValueError("layer %d (%r): %s" % (position, node.layer, error)) from None
            tensor_of[id(node)] = tensor
            emitted = list(range(first_op, len(builder.ops)))
            self.layer_ops.append(emitted)
            self.image_layers.append(position if emitted else None)
        output_tensors = [tensor_of[id(t)] for t in outputs]
        if len(set(output_tensors)) != len(output_tensors):
            raise ValueError("a tensor is listed twice among the model's outputs")
        for index in output_tensors:
            if builder.tensors[index].flags & _image.FLAG_INPUT:
                raise ValueError("a model output must be computed by a layer, not be an Input")
            builder.mark_output(index)
        self._image = _image.write_image(builder.tensors, builder.ops,
                                         [tensor_of[id(t)] for t in inputs], output_tensors)
        self._weights = [np.array(w, dtype=np.float32) for w in builder.weights]

    @property
    def input_shape(self):
        """The shape of one sample of input 0 (no batch dimension)."""
        return self.input_shapes[0]

    @property
    def output_shape(self):
        """The shape of one sample of output 0."""
        return self.output_shapes[0]

    def get_weights(self):
        """Initial weights in layer order, each layer's weight then bias (copies)."""
        return [w.copy() for w in self._weights]

    def __repr__(self):
        return "Model(%r, inputs=%r, outputs=%r)" % (self.layers, self.input_shapes,
                                                     self.output_shapes)


class Sequential(Model):
    """A linear stack of layers, frozen into a model image at construction.

    Args:
        layers:      list of ``microtrain.layers`` instances, at least one
        input_shape: shape of one input sample (no batch dimension), 1..4 dims
        seed:        as for ``Model``

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
            if layer.MERGES:
                raise ValueError("layer %d (%r) merges branches: build the graph with "
                                 "microtrain.Input and microtrain.Model" % (position, layer))
        source = functional.Input(input_shape)
        tensor = source
        for position, layer in enumerate(layers):
            try:
                tensor = layer(tensor)
            except ValueError as error:
                raise ValueError("layer %d (%r): %s" % (position, layer, error)) from None
        self._build([source], [tensor], functional.graph([source], [tensor]), seed)
        self.layers = layers

    def __repr__(self):
        return "Sequential(%r, input_shape=%r)" % (self.layers, self.input_shape)
