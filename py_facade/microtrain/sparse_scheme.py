"""Sparse update schemes: per layer, what trains (pure Python, MicroPython-safe).

A scheme maps layers (positions in ``model.layers`` / ``Session.layers``, or names) to what
they train; the layers it does not name stay frozen:

    "all"          every weight of the layer
    "bias"         its bias (its 1-D weights) only
    k (int)        its bias and the weights of its first k output channels: rows of a Dense's
                   [units, inputs] weight or a Conv2D's [out, kh, kw, in], channels of a
                   DepthwiseConv2D's [1, kh, kw, channels]; 1 <= k <= the channel count
    f (float)      the first ceil(f * channels) channels, 0 < f <= 1

``compile(trainable={...})`` or ``compile(trainable=SparseScheme(...))`` turns it into the
core's op mask and per-op channel counts (``mt_train_config.trainable_op_channels``): the
trained channels get a gradient and optimizer state, the frozen ones keep their bits; the
arena still holds the whole weight of a layer that trains any channel (the kernels read one
array). ``microtrain.sparse_update`` picks a scheme under a memory budget.
"""

import json

from . import ops as _ops
from ._platform import is_integer

# float layers, and int8 ones trained in place (convert(..., int8_train=True): the first k
# output channels of their int8 weight take the QAS update, ops/qas.c)
CHANNEL_OPS = (_ops.DENSE, _ops.CONV2D, _ops.DEPTHWISE_CONV2D, _ops.DENSE_S8, _ops.CONV2D_S8,
               _ops.DEPTHWISE_CONV2D_S8)
LAST_AXIS_OPS = (_ops.DEPTHWISE_CONV2D, _ops.DEPTHWISE_CONV2D_S8)
_WORDS = ("all", "bias")
_PLANNED = ("budget_bytes", "total_bytes", "batch_size", "optimizer", "loss")


class SparseScheme(object):
    """What each layer trains (see the module doc), and what it was planned for.

    Args:
        layers: a dict {layer position or name: "all" | "bias" | k | fraction}, or a list of
                (layer, value) pairs (their order kept), or another SparseScheme
        budget_bytes: the arena bytes ``sparse_update`` planned it to fit, or None
        total_bytes: the arena bytes it needs (the core's plan), or None
        batch_size: the batch size it was planned for, or None
        optimizer: the optimizer's name it was planned for, or None
        loss: the loss's name it was planned for, or None
    """

    def __init__(self, layers, budget_bytes=None, total_bytes=None, batch_size=None,
                 optimizer=None, loss=None):
        if isinstance(layers, SparseScheme):
            layers = layers.layers
        elif isinstance(layers, dict):
            layers = list(layers.items())
        pairs = []
        for pair in layers:
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise ValueError("a sparse scheme lists (layer, what it trains) pairs, got %r"
                                 % (pair,))
            pairs.append((pair[0], pair[1]))
        self.layers = pairs
        for name, value in zip(_PLANNED, (budget_bytes, total_bytes, batch_size, optimizer,
                                          loss)):  # what to_dict writes beside the layers
            setattr(self, name, value)

    def items(self):
        """The (layer, what it trains) pairs, in order."""
        return list(self.layers)

    def to_dict(self):
        """{"layers": [[layer, value], ...], and what it was planned for} (``to_json``'s)."""
        data = {"layers": [[layer, value] for layer, value in self.layers]}
        for name in _PLANNED:
            data[name] = getattr(self, name)
        return data

    def to_json(self):
        """The scheme as JSON text (``from_json`` reads it back)."""
        return json.dumps(self.to_dict())

    @staticmethod
    def from_json(text):
        """The scheme ``to_json`` wrote; ValueError naming what is wrong otherwise."""
        try:
            data = json.loads(text)
        except ValueError as error:
            raise ValueError("a sparse scheme is JSON text (SparseScheme.to_json); this is not "
                             "JSON: %s" % (error,))
        if isinstance(data, dict) and "layers" not in data:
            data = {"layers": list(data.items())}  # a plain {layer: value} mapping
        if not isinstance(data, dict) or not isinstance(data["layers"], list):
            raise ValueError("a sparse scheme's JSON is an object with a \"layers\" list of "
                             "[layer, value] pairs (or a {layer: value} object)")
        extra = {}
        for key in _PLANNED:
            extra[key] = data.get(key)
        layers = []
        for pair in data["layers"]:
            if isinstance(pair, (list, tuple)) and len(pair) == 2 and isinstance(pair[0], str) and \
                    pair[0].lstrip("-").isdigit():
                pair = [int(pair[0]), pair[1]]  # a position written as a JSON object key
            layers.append(pair)
        return SparseScheme(layers, **extra)

    def __str__(self):
        return self.to_json()

    def __repr__(self):
        return "SparseScheme(%s)" % self.to_json()

    def __eq__(self, other):
        return isinstance(other, SparseScheme) and self.layers == other.layers

    def __ne__(self, other):
        return not self == other


def nothing_fits(budget, batch_size, layer, what, needed):
    """The ValueError of a budget that even the smallest scheme (layer ``layer``'s ``what``,
    ``needed`` bytes) does not fit: sparse_update's heuristic and its calibrated picker."""
    return ValueError("a budget of %d bytes fits no sparse update of this model at batch size "
                      "%d: the smallest, layer %d's %s, needs %d bytes"
                      % (budget, batch_size, layer, what, needed))


def is_scheme(spec):
    """Whether compile(trainable=spec) is a sparse scheme (a mapping)."""
    return isinstance(spec, (dict, SparseScheme))


def channels_of(op_type, weight_dims):
    """The output channels a part of the weight can train: a Dense's or Conv2D's dims[0], a
    DepthwiseConv2D's last dim (float, or int8 trained in place); 0 for other ops."""
    if op_type not in CHANNEL_OPS or weight_dims is None or len(weight_dims) < 2:
        return 0
    return weight_dims[-1] if op_type in LAST_AXIS_OPS else weight_dims[0]


def _count(value, channels, label):
    """k of ``value`` (an int or a fraction) for a layer of ``channels`` channels."""
    if channels == 0:
        raise ValueError("sparse scheme: layer %s has no weight of output channels (only "
                         "Dense, Conv2D and DepthwiseConv2D, float or int8 trained in place, "
                         "train some): give it 'all' or 'bias'" % label)
    if is_integer(value):
        if not 1 <= value <= channels:
            raise ValueError("sparse scheme: layer %s has %d output channels; %r is out of "
                             "range (1..%d, or a fraction in (0, 1])"
                             % (label, channels, value, channels))
        return int(value)
    if not 0.0 < value <= 1.0:
        raise ValueError("sparse scheme: layer %s: a fraction of its channels is in (0, 1], "
                         "got %r" % (label, value))
    count = int(value * channels)
    if count < value * channels:
        count += 1
    return max(count, 1)


def resolve(spec, layer_ops, op_facts, find_layer, layer_label):
    """(mask, channels, rows) of a scheme: the op mask, the per-op channel counts (-1 all, 0
    bias only, k) and per layer named {"layer", "trains", "channels"}.

    Args:
        spec:       a dict or SparseScheme
        layer_ops:  per layer, its op indices
        op_facts:   per op, (op type, dims of its trainable weight of rank >= 2 or None, 1 when
                    it has a trainable 1-D weight, its trainable tensors): trainable.op_facts
        find_layer: a layer position from a position or name (ValueError when there is none)
        layer_label: a layer's text for messages ("3 (conv2d_5)")
    """
    num_ops = len(op_facts)
    mask, channels, rows = [0] * num_ops, [-1] * num_ops, []
    for key, value in SparseScheme(spec).items():
        layer = find_layer(key)
        label = layer_label(layer)
        weighted = [op for op in layer_ops[layer] if op_facts[op][1] is not None or op_facts[op][2]]
        if not weighted:
            raise ValueError("sparse scheme: layer %s has no trainable weight (an activation, "
                             "a pool, a frozen int8 layer): leave it out" % label)
        if isinstance(value, bool) or not (isinstance(value, str) or is_integer(value) or
                                           isinstance(value, float)):
            raise ValueError("sparse scheme: layer %s: what it trains is 'all', 'bias', a "
                             "channel count or a fraction in (0, 1], got %r" % (label, value))
        if isinstance(value, str) and value.lower() not in _WORDS:
            raise ValueError("sparse scheme: layer %s: what it trains is 'all', 'bias', a "
                             "channel count or a fraction in (0, 1], got %r" % (label, value))
        trains = value.lower() if isinstance(value, str) else None
        if trains == "bias" and not any(op_facts[op][2] for op in weighted):
            raise ValueError("sparse scheme: layer %s has no bias to train: give it 'all' or "
                             "a channel count" % label)
        total = 0
        for op in layer_ops[layer]:
            mask[op] = 1
            kind, dims = op_facts[op][0], op_facts[op][1]
            if trains == "bias":
                channels[op] = 0 if dims is not None else -1
            elif trains is None and op in weighted and dims is not None:
                total = channels_of(kind, dims)
                count = _count(value, total, label)
                channels[op] = -1 if count == total else count
        if trains is None and not total:
            _count(value, 0, label)  # no op of channels: the refusal names the layer
        rows.append({"layer": layer, "trains": trains or "channels",
                     "channels": None if trains else (total if channels[weighted[0]] < 0 else
                                                      channels[weighted[0]]),
                     "of": total or None})
    return mask, channels, rows


def row_text(row):
    """What a layer trains, as text: "all", "bias", "12 of 64 channels"."""
    if row["trains"] != "channels":
        return row["trains"]
    return "%d of %d channels" % (row["channels"], row["of"])


_COST_KINDS = ("weight", "gradient", "optimizer", "reference")


def plan_rows(rows, layer_ops, op_facts, buffers, layer_label):
    """``memory_plan()["layers"]`` of a session compiled with a scheme: per layer with a
    trainable weight, {"layer", "label", "trains" ("none", "bias", "all", "k of C channels"),
    "bytes"}: the arena bytes of its trained weights, their gradient (a tile's, for a part in
    tiles) and optimizer state, from ``buffers`` (``mt_plan_buffers``' dicts; None where the
    backend cannot list them: "bytes" is None then)."""
    named = {}
    for row in rows:
        named[row["layer"]] = row_text(row)
    out = []
    for layer, op_list in enumerate(layer_ops):
        tensors = []
        for op in op_list:
            tensors.extend(op_facts[op][3])
        if not tensors:
            continue
        cost = None
        if buffers is not None:
            cost = sum(b["bytes"] for b in buffers
                       if b["kind"] in _COST_KINDS and b["tensor"] in tensors)
        out.append({"layer": layer, "label": layer_label(layer),
                    "trains": named.get(layer, "none"), "bytes": cost})
    return out
