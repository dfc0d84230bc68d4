"""The layers of a ``.tflite`` file: each operator's name and type, as users know them.

TensorFlow's converter names an operator's output tensor after everything it fused into
it, ``;``-separated: ``model/activation_3/Relu;model/batch_normalization_3/FusedBatchNormV3;
model/conv2d_3/BiasAdd;model/conv2d_5/Conv2D;model/conv2d_3/Conv2D1`` is the CONV_2D of
layer ``conv2d_3`` (its ReLU, BatchNorm and a constant it shares with ``conv2d_5`` fused in).
A piece ``<model>/<layer>/<TF op>`` names a layer; TensorFlow's own sub-scopes between the
layer and the op (``batchnorm``, ``BiasAdd/ReadVariableOp``, Keras 2's ``Conv1D``) are
skipped. Of an operator's pieces, the layer named most often by a piece whose TF op is the
operator's kind (``Conv2D``/``convolution``/``BiasAdd`` for CONV_2D, ``MatMul``/``BiasAdd``
for FULLY_CONNECTED, ``depthwise`` for DEPTHWISE_CONV_2D, ...) wins, then the layer named
most often at all; an output with no scope (``Identity``, ``StatefulPartitionedCall:0``)
takes its weights' layer (``model/dense_9/MatMul``), else the tensor's own name. Keras 3
scopes every layer as ``<name>_<n>`` (``dense`` in ``sequential_1/dense_1``): in a file where
every scope has that form and no two scopes lose their numbers to one name, layers take their
Keras names and the scopes are aliases.

``train_from`` (where an int8 model's float part begins) is resolved here: an operator index
of the file, or a name: a layer's (``conv2d_3``), its scope (``model/conv2d_3``) or the full
tensor name, or a prefix of layer names ending before ``_`` (``block_15``: Keras
applications' blocks, whose layers are ``block_15_expand``, ``block_15_depthwise``, ...).
"""

from .graph import ConversionError

# TF ops (the last component of a piece, digits TensorFlow appends for uniqueness stripped)
# that carry an operator's own computation, by TFLite builtin.
_KIND_WORDS = {
    "CONV_2D": ("conv2d", "convolution", "biasadd", "conv1d"),
    "DEPTHWISE_CONV_2D": ("depthwise", "depthwiseconv2dnative", "biasadd"),
    "FULLY_CONNECTED": ("matmul", "biasadd", "tensordot"),
    "TRANSPOSE_CONV": ("conv2d_transpose", "conv2dbackpropinput", "biasadd"),
    "ADD": ("add", "addv2"), "SUB": ("sub",), "MUL": ("mul",),
    "MEAN": ("mean",), "AVERAGE_POOL_2D": ("avgpool", "avgpool2d"),
    "MAX_POOL_2D": ("maxpool", "maxpool2d"), "SOFTMAX": ("softmax",),
    "CONCATENATION": ("concat", "concatv2"), "PAD": ("pad", "padv2"),
    "RESHAPE": ("reshape",), "SQUEEZE": ("squeeze",), "EXPAND_DIMS": ("expanddims",),
    "RELU": ("relu",), "RELU6": ("relu6",), "LOGISTIC": ("sigmoid",), "TANH": ("tanh",),
    "LEAKY_RELU": ("leakyrelu",), "TRANSPOSE": ("transpose",),
}
# TensorFlow's own scopes inside a layer's scope: never a layer's name.
_INTERNAL = frozenset(("batchnorm", "Conv1D", "BiasAdd", "ReadVariableOp", "Tensordot",
                       "Reshape", "shape", "strided_slice", "MatMul", "FusedBatchNormV3",
                       "convolution", "depthwise", "Conv2D", "Squeeze", "ExpandDims",
                       "resource", "transpose", "Const", "concat", "Pad", "Mean",
                       "MaxPool1d", "AvgPool1d", "MaxPool2d", "AvgPool2d",
                       "read", "FakeQuantWithMinMaxVars", "FakeQuantWithMinMaxVarsPerChannel"))


def _word(component):
    """A TF op's name without the digits (and '_') TensorFlow appends: Conv2D1 -> conv2d."""
    stripped = component.rstrip("0123456789")
    return (stripped.rstrip("_") or component).lower()


def _piece_scope(piece):
    """(layer scope, layer name, the TF op words) of one ``<model>/<layer>/.../<op>`` piece,
    or None when the piece has no layer between the model and the op."""
    parts = [p for p in piece.split("/") if p]
    if len(parts) < 3:
        return None
    for position in range(len(parts) - 2, 0, -1):
        if parts[position] not in _INTERNAL:
            words = [_word(p) for p in parts[position + 1:]]
            return "/".join(parts[:position + 1]), parts[position], words
    return None


def _best_scope(names, kind):
    """The layer the pieces of ``names`` name, as (scope, layer), or None."""
    wanted = _KIND_WORDS.get(kind, ())
    tally = {}
    order = []
    for name in names:
        for piece in name.split(";"):
            found = _piece_scope(piece)
            if found is None:
                continue
            scope, layer, words = found
            if scope not in tally:
                tally[scope] = [0, 0, layer]
                order.append(scope)
            tally[scope][0] += any(w in wanted for w in words)
            tally[scope][1] += 1
    if not order:
        return None
    best = max(order, key=lambda s: (tally[s][0], tally[s][1], -order.index(s)))
    return best, tally[best][2]


def layer_name(output_names, weight_names, kind):
    """(name, aliases, scope or None) of an operator from its output tensors' names and its
    constant inputs' names (see the module docstring); aliases are the other spellings
    ``train_from`` and ``trainable`` accept (the scope, the tensor names)."""
    found = _best_scope(output_names, kind) or _best_scope(weight_names, kind)
    aliases = [n for n in output_names if n]
    if found is None:
        name = output_names[0] if output_names and output_names[0] else kind.lower()
        return name, aliases, None
    scope, layer = found
    return layer, [scope] + aliases, scope


def _keras3_suffix(scope):
    """Keras 3 (TensorFlow backend) opens every name scope as ``<name>_<n>``: the model's
    and each layer's (layer ``dense`` is ``sequential_1/dense_1``, ``dense_1`` is
    ``dense_1_2``). The Keras name, or None where the scope is not of that form."""
    parts = scope.split("/")
    for part in parts:
        head, _, number = part.rpartition("_")
        if not head or not number.isdigit():
            return None
    head, _, _ = parts[-1].rpartition("_")
    return head


def source_table(reader):
    """[{"index", "type", "name", "aliases"}] for every operator of the file. Where every
    scope is of Keras 3's ``<name>_<n>`` form and each Keras name comes from one scope, a
    layer's name is its Keras name (what ``model.summary()`` shows) and the file's scope
    name becomes an alias."""
    table, scopes = [], []
    for index in range(reader.graph.OperatorsLength()):
        op = reader.graph.Operators(index)
        outputs = [reader.tensor_name(t) for t in reader.indices(op, "Outputs")]
        weights = [reader.tensor_name(t) for t in reader.indices(op, "Inputs")
                   if t >= 0 and reader.has_data(t)]
        kind = reader.op_type_name(index)
        name, aliases, scope = layer_name(outputs, weights, kind)
        table.append({"index": index, "type": kind, "name": name, "aliases": aliases})
        scopes.append(scope)
    named = [(entry, scope) for entry, scope in zip(table, scopes) if scope is not None]
    keras_names = [_keras3_suffix(scope) for _, scope in named]
    # Keras names are unique in a model: where two scopes would become one name, the file is
    # Keras 2's with numbered layers (model_4/conv2d_36, model_4/conv2d_37: MLPerf Tiny's
    # larger ResNet), whose scopes are the names
    scopes_of = {}
    for (_, scope), keras_name in zip(named, keras_names):
        scopes_of.setdefault(keras_name, set()).add(scope)
    if len(named) >= 2 and all(keras_names) and \
            all(len(found) == 1 for found in scopes_of.values()):
        for (entry, _), keras_name in zip(named, keras_names):
            entry["aliases"].insert(0, entry["name"])
            entry["name"] = keras_name
    return table


def _names(entry):
    return [entry["name"]] + list(entry["aliases"])


def describe(entry):
    return "op %d (%s %s)" % (entry["index"], entry["type"], entry["name"])


def resolve_start(table, train_from, what="train_from"):
    """The operator index ``train_from`` names (see the module docstring)."""
    count = len(table)
    if isinstance(train_from, bool) or not isinstance(train_from, (int, str)):
        try:
            import numpy as np
            if isinstance(train_from, np.integer):
                train_from = int(train_from)
        except ImportError:
            pass
    if isinstance(train_from, int) and not isinstance(train_from, bool):
        if not 0 <= train_from < count:
            raise ConversionError("%s=%d is not an operator of the file (0..%d)"
                                  % (what, train_from, count - 1), attribute=what,
                                  supported="an operator index or a layer name; `microtrain "
                                  "info MODEL` lists them")
        return train_from
    if not isinstance(train_from, str) or not train_from:
        raise ConversionError("%s must be an operator index or a layer name, got %r"
                              % (what, train_from), attribute=what)
    exact = [e for e in table if train_from == e["name"]] or \
        [e for e in table if train_from in _names(e)]
    if exact:
        layers = sorted(set(e["name"] for e in exact))
        indices = [e["index"] for e in exact]
        # one layer may span consecutive operators (Conv1D: EXPAND_DIMS, CONV_2D, SQUEEZE)
        if len(layers) == 1 and indices == list(range(indices[0], indices[-1] + 1)):
            return indices[0]
        raise ConversionError("%s=%r names %d operators: %s; give the operator index"
                              % (what, train_from, len(exact),
                                 ", ".join(describe(e) for e in exact)), attribute=what)
    prefix = train_from + "_"
    grouped = [e for e in table if any(n.startswith(prefix) for n in _names(e)
                                       if "/" not in n and ";" not in n)]
    if grouped:
        return grouped[0]["index"]
    close = [e for e in table if train_from.lower() in e["name"].lower()]
    listed = close or [e for e in table if e["type"] in ("CONV_2D", "DEPTHWISE_CONV_2D",
                                                         "FULLY_CONNECTED")]
    raise ConversionError("no operator is named %r" % train_from, attribute=what,
                          supported="an operator index or one of the names %s"
                          % ", ".join(describe(e) for e in listed[:12]) +
                          (", ..." if len(listed) > 12 else ""))
