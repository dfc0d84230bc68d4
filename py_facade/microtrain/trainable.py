"""Which ops train: ``TrainSession.compile(trainable=...)`` (pure Python, MicroPython-safe).

``resolve(spec, num_ops, layer_ops, biases_only, op_weights, layer_names)`` turns a user's
choice into the three fields of ``mt_train_config``: ``num_trainable_ops``,
``trainable_op_mask`` (a list of 0/1 per op, or None) and ``biases_only``.

    "all"                  every op trains (num_trainable_ops = -1)
    N (int)                the last N layers *with weights* train (and every op after the
                           first of them: a Dense's activation, a Softmax); -1 = all, 0 =
                           none (inference only); N beyond the model's count: all.
                           ``compile(num_trainable_ops=N)`` is onert's spelling, the last N
                           ops (a Dense and the Softmax after it are two ops, one weight)
    [i, j, ...]            these layers train: positions in ``model.layers`` of a built
                           model, which the image records (format version 2), so an image
                           file saved from it numbers them the same; negative counts from
                           the end. An image without layers (version 1) has one layer per
                           op. ``microtrain info`` prints each op's layer.
    ["dense_1", ...]       layers by name, where the model has names (an imported .tflite:
                           TensorFlow's layer names, ``Session.layers[i].name``); names and
                           positions mix
    "bias" / "biases_only" every op trains, but only its 1-D weights (biases)

    {layer: "bias" | "all" | k | fraction}
                           a sparse scheme (``microtrain.sparse_scheme``): per layer named,
                           its bias, all its weights or its first k output channels; the
                           others frozen (``microtrain.sparse_update`` picks one)

``biases_only=True`` combines bias-only training with any choice but a scheme. Frozen
weights stay in the image (flash on a device): they cost no arena bytes, no
gradient bytes and no optimizer state; backward stops at the first trained op.
"""

from . import ops as _ops, sparse_scheme as _sparse
from ._platform import is_integer

_INT32_MAX = 2147483647
ALL = ("all",)
BIASES = ("bias", "biases", "biases_only")


def _is_int(value):
    return is_integer(value)


def op_label(op_type):
    """How messages name an op type ("Dense")."""
    return _ops.display_name(op_type)


def _by_name(name, layer_names):
    """The layer position a name picks (``layer_names``: per layer, its name first, then
    the other names it answers to): a layer's own name wins over another's alias."""
    found = [position for position, names in enumerate(layer_names or ())
             if names and names[0] == name] or \
        [position for position, names in enumerate(layer_names or ())
         if names is not None and name in names]
    if len(found) == 1:
        return found[0]
    if not layer_names:
        raise ValueError("trainable lists layers as integers, got %r: this model's layers "
                         "have no names (an imported .tflite's have)" % (name,))
    if not found:
        known = [names[0] for names in layer_names if names]
        raise ValueError("trainable names layer %r, which the model does not have; its layers "
                         "are %s" % (name, ", ".join(repr(n) for n in known)))
    raise ValueError("trainable names layer %r, which %d layers answer to (positions %s): "
                     "give a position" % (name, len(found), found))


def _indices(spec, count, what, layer_names=None):
    chosen = []
    for item in spec:
        if isinstance(item, str) and what == "layers":
            item = _by_name(item, layer_names)
        if not _is_int(item):
            raise ValueError("trainable lists %s as integers%s, got %r"
                             % (what, " or names" if layer_names else "", item))
        index = int(item)
        if index < -count or index >= count:
            raise ValueError("trainable names %s %d, but the model has %d %s (0..%d)"
                             % (what[:-1], index, count, what, count - 1))
        if index < 0:
            index += count
        if index not in chosen:
            chosen.append(index)
    return chosen


def weighted_layers(num_ops, layer_ops=None, op_weights=None):
    """Positions of the layers that hold a weight of their own (one layer per op when
    ``layer_ops`` is None)."""
    layers = layer_ops if layer_ops is not None else [[op] for op in range(num_ops)]
    return [position for position, ops in enumerate(layers)
            if ops and any(op_weights[op] for op in ops)]


def resolve(spec, num_ops, layer_ops=None, biases_only=False, op_weights=None,
            layer_names=None):
    """(num_trainable_ops, mask or None, biases_only 0/1) for ``spec`` (see module doc).

    Args:
        spec:        "all", "bias"/"biases_only", an int >= -1, or a list of layer
                     positions (or names)
        num_ops:     ops in the model image
        layer_ops:   the op indices of each layer; None: one layer per op
        biases_only: train only 1-D weights of the chosen ops
        op_weights:  per op, True when it has a weight (for an int N: the last N layers
                     with weights); None: N counts ops, as ``num_trainable_ops`` does
        layer_names: per layer, the names it answers to (or None), for names in a list
    """
    bias_mode = 1 if biases_only else 0
    if spec is None:
        spec = "all"
    if isinstance(spec, str):
        name = spec.lower()
        if name in ALL:
            return -1, None, bias_mode
        if name in BIASES:
            return -1, None, 1
        raise ValueError("trainable must be 'all', 'bias', an int (the last N layers with "
                         "weights) or a list of layer positions or names, got %r" % (spec,))
    if _is_int(spec):
        if not -1 <= int(spec) <= _INT32_MAX:  # an int32 field: ctypes would wrap it
            raise ValueError("trainable as an int is the number of layers with weights "
                             "from the end, -1 (all) to %d, got %r" % (_INT32_MAX, spec))
        count = int(spec)
        if op_weights is None or count <= 0:
            return count, None, bias_mode
        weighted = weighted_layers(num_ops, layer_ops, op_weights)
        if count >= len(weighted):
            return -1, None, bias_mode
        layers = layer_ops if layer_ops is not None else [[op] for op in range(num_ops)]
        return num_ops - layers[weighted[-count]][0], None, bias_mode
    if isinstance(spec, (list, tuple, set, range)):
        mask = [0] * num_ops
        if layer_ops is None:
            for op in _indices(spec, num_ops, "ops"):
                mask[op] = 1
        else:
            for layer in _indices(spec, len(layer_ops), "layers", layer_names):
                if not layer_ops[layer]:
                    raise ValueError("trainable names layer %d, which emits no op of its own "
                                     "(a BatchNorm folded into the layer before it): name "
                                     "that layer instead" % layer)
                for op in layer_ops[layer]:
                    mask[op] = 1
        return -1, mask, bias_mode
    raise ValueError("trainable must be 'all', 'bias', an int (the last N layers with weights) "
                     "or a list of layer positions or names, got %r" % (spec,))


def check_selects_weights(mask, has_weights, op_names, unit):
    """Raise ValueError when ``mask`` chooses only ops without trainable weights: nothing
    would train. An image file takes op indices and a Sequential layer positions, which is
    easy to confuse, so the message lists the ops chosen and those that have weights."""
    chosen = [i for i, bit in enumerate(mask) if bit]
    if not chosen or any(has_weights[i] for i in chosen):
        return
    names = ", ".join("%d (%s)" % (i, op_names[i]) for i in chosen)
    weighted = [i for i, flag in enumerate(has_weights) if flag]
    raise ValueError("trainable selects ops %s, none of which has trainable weights, so "
                     "nothing would train (a %s index list; ops with weights: %s)"
                     % (names, unit, weighted))


def parse_spec(text):
    """A command line's --trainable value: "all", "bias", an int (the last N layers with
    weights) or a comma-separated list of layer positions or names, in brackets or not
    ("[3]" is layer 3, "3" the last 3 layers). ValueError names what is accepted."""
    value = str(text).strip()
    if value.lower() in ALL or value.lower() in BIASES:
        return value.lower()
    try:
        count = int(value)
    except ValueError:
        count = None
    if count is not None:
        if count < -1:
            raise ValueError("expected all, bias, a count of layers with weights (-1: all) or "
                             "a list of layers, got %r" % text)
        return count
    items = [v.strip() for v in value.strip("[]").split(",") if v.strip()]
    if not items or any(not (v.lstrip("-").isdigit() or v[0].isalpha() or v[0] == "_")
                        for v in items):
        raise ValueError("expected all, bias, a count of layers with weights or a "
                         "comma-separated list of layer positions or names, got %r" % text)
    return [int(v) if v.lstrip("-").isdigit() else v for v in items]


def spec_text(spec):
    """The --trainable value that parse_spec reads back as ``spec``."""
    if isinstance(spec, (list, tuple)):
        return "[%s]" % ",".join(str(item) for item in spec)
    return str(spec)


def describe(num_trainable_ops, mask, biases_only, layer_ops=None, op_weights=None,
             layer_labels=None):
    """A short text for tables and logs: "all", "last 2 ops", "ops [3, 4]", "..., biases
    only"; with ``op_weights`` (per op) also the layers with weights that train, by
    position and ``layer_labels`` (names), e.g. "last 3 ops: layers with weights 11
    (dense)"."""
    if mask is not None:
        ops = [i for i, bit in enumerate(mask) if bit]
        text = "ops %s" % (ops,) if ops else "none"
    elif num_trainable_ops < 0:
        text = "all"
    elif num_trainable_ops == 0:
        text = "none"
    else:
        text = "last %d ops" % num_trainable_ops
    if op_weights is not None and text != "none":
        num_ops = len(op_weights)
        if mask is not None:
            trains = [bool(bit) for bit in mask]
        else:
            first = 0 if num_trainable_ops < 0 else max(num_ops - num_trainable_ops, 0)
            trains = [op >= first for op in range(num_ops)]
        layers = layer_ops if layer_ops is not None else [[op] for op in range(num_ops)]
        chosen = [position for position in weighted_layers(num_ops, layers, op_weights)
                  if any(trains[op] and op_weights[op] for op in layers[position])]
        if layer_labels is not None and len(layer_labels) == len(layers):
            named = ["%d (%s)" % (p, layer_labels[p]) for p in chosen]
        else:
            named = ["%d" % p for p in chosen]
        if len(named) > 8:
            named = named[:3] + ["...", "%d layers in all" % len(named)]
        text += ": layers with weights %s" % ", ".join(named) if named else \
            ": no layer with weights"
    if biases_only:
        text += ", biases only"
    return text


def op_facts(ops, params, quantized=()):
    """Per op of a ``backend.describe()`` answer's "ops", what a sparse scheme needs: (op type,
    dims of its trainable weight of rank >= 2 (input 1 first) or None, 1 when it has a
    trainable 1-D weight, its trainable tensors). ``quantized``: describe()'s int8 weights and
    int32 biases trained in place, trainable as the float params are."""
    dims = {}
    for param in params:
        if param["trainable"]:
            dims[int(param["tensor"])] = tuple(param["dims"])
    for param in quantized:
        dims[int(param["tensor"])] = tuple(param["dims"])
    facts = []
    for op in ops:
        inputs = [i for i in op["inputs"] if i is not None and i >= 0 and i in dims]
        inputs.sort(key=lambda i: 0 if len(op["inputs"]) > 1 and i == op["inputs"][1] else 1)
        weight = [dims[i] for i in inputs if len(dims[i]) >= 2]
        facts.append((int(op["type"]), weight[0] if weight else None,
                      1 if any(len(dims[i]) == 1 for i in inputs) else 0, inputs))
    return facts


def layer_label(position, layer_ops, ops, layer_names):
    """A layer as messages name it: "3 (conv2d_5)", or its first op's type without names."""
    if layer_names is not None and layer_names[position]:
        return "%d (%s)" % (position, layer_names[position][0])
    first = layer_ops[position]
    return "%d (%s)" % (position, op_label(ops[first[0]][0]) if first else "no op")


def choose(trainable, num_trainable_ops, biases_only, ops, layer_ops, layer_names, facts):
    """What ``compile(trainable=, num_trainable_ops=, biases_only=)`` trains, as a dict:
    "count", "mask", "biases_only", "channels" (the fields of mt_train_config), "layers" (a
    scheme's rows: ``sparse_scheme.resolve``, else None), "given" (the argument, for
    messages) and "text" (``describe``). ``ops``: per op (type, layer, has weights);
    ``facts``: ``op_facts``."""
    op_weights = [weights for _, _, weights in ops]
    channels = rows = None
    if num_trainable_ops is not None:  # onert's count of ops
        if trainable is not None:
            raise ValueError("give trainable or num_trainable_ops, not both")
        if not _is_int(num_trainable_ops) or not -1 <= num_trainable_ops <= _INT32_MAX:
            raise ValueError("num_trainable_ops must be an integer >= -1 (-1 = all ops), got %r"
                             % (num_trainable_ops,))
        count, mask, bias_mode = resolve(int(num_trainable_ops), len(ops), layer_ops, biases_only)
        given = "num_trainable_ops=%d" % num_trainable_ops
    elif _sparse.is_scheme(trainable):
        if biases_only:
            raise ValueError("biases_only does not combine with a sparse scheme: give its "
                             "layers 'bias'")

        def find(key):
            return _indices([key], len(layer_ops), "layers", layer_names)[0]

        def label(position):
            return layer_label(position, layer_ops, ops, layer_names)

        mask, channels, rows = _sparse.resolve(trainable, layer_ops, facts, find, label)
        count, bias_mode = -1, 0
        given = "trainable=%s" % (_sparse.SparseScheme(trainable).to_json(),)
    else:
        count, mask, bias_mode = resolve(trainable, len(ops), layer_ops, biases_only,
                                         op_weights, layer_names)
        given = "trainable=%r" % (trainable,)
    if mask is not None and any(mask) and rows is None:
        check_selects_weights(mask, op_weights, [op_label(t) for t, _, _ in ops], "layer")
    if rows is not None:
        text = "sparse: " + (", ".join(
            "layer %s %s" % (layer_label(row["layer"], layer_ops, ops, layer_names),
                             _sparse.row_text(row)) for row in rows) or "none")
    else:
        text = describe(count, mask, bias_mode, layer_ops, op_weights,
                        None if layer_names is None else [n[0] for n in layer_names])
    return {"count": count, "mask": mask, "biases_only": bias_mode, "channels": channels,
            "layers": rows, "given": given, "text": text}
