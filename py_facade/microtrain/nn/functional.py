"""The functional form of ``microtrain.Model``: ``Input`` and the graph symbolic tensors
form (``SymbolicTensor`` and a layer call, ``apply``, are in ``_base``, under the layers).

    x = microtrain.Input((8, 8, 1))
    y = layers.Conv2D(4, 3, padding="same", activation="relu")(x)
    z = layers.Add()([y, layers.DepthwiseConv2D(3, padding="same")(y)])
    out = layers.Dense(10, activation="softmax")(layers.GlobalAveragePool()(z))
    model = microtrain.Model(x, out)

Calling a layer checks shapes at once and returns a new symbolic tensor; nothing
is computed and the layer is not changed. ``graph()`` lists the nodes a model
needs in the order they were called, which is the execution order of their ops
(a node can only be called on tensors that already exist).
"""

import numpy as np

from . import image as _image
from ._base import SymbolicTensor, _Weighted


def check_input_shape(input_shape):
    """One sample's shape (no batch dimension) as a tuple of 1..4 positive ints."""
    if isinstance(input_shape, (int, np.integer)) and not isinstance(input_shape, bool):
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


def Input(shape):  # noqa: N802 - named like the class it stands for, as in Keras
    """A model input of one sample's ``shape`` (no batch dimension), e.g. (8, 8, 1) NHWC."""
    return SymbolicTensor(check_input_shape(shape))


def as_list(value, what):
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if not values:
        raise ValueError("a model needs at least one %s" % what)
    for item in values:
        if not isinstance(item, SymbolicTensor):
            raise TypeError("model %ss are microtrain.Input() or layer outputs, got %r"
                            % (what, item))
    return values


def graph(inputs, outputs):
    """The layer nodes ``outputs`` depend on, in call order. Raises ValueError when an
    output needs an Input that is not among ``inputs`` or a layer with weights is
    called twice (weightless layers such as ReLU may be reused)."""
    seen = {}
    stack = list(outputs)
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen[id(node)] = node
        stack.extend(node.inputs)
    given = set(id(t) for t in inputs)
    for node in seen.values():
        if node.is_input and id(node) not in given:
            raise ValueError("the outputs depend on an Input %r that is not among the model's "
                             "inputs" % (node.shape,))
    nodes = sorted((n for n in seen.values() if not n.is_input), key=lambda n: n.order)
    weighted = set()
    for node in nodes:
        if isinstance(node.layer, _Weighted):
            if id(node.layer) in weighted:
                raise ValueError("layer %r is called twice in one model; weights are not "
                                 "shared, create one layer per call" % (node.layer,))
            weighted.add(id(node.layer))
    return nodes
