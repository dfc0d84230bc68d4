"""``ConvertedModel``: the ``.mtm`` image of an imported model, with what export needs."""

from ..nn import image as _image
from ..nn.model import ImageModel


class SourceRecord:
    """What the importer knew about the original file, for writing it back.

    Attributes:
        format:       "tflite", "circle" or "onnx"
        data:         the original file's bytes
        origins:      one graph.Origin per weight, in ``mt_session_param`` order (CONST
                      f32 tensors in the image's table order)
        folds:        the source ops merged into weights ({"op", "kind", "keys"})
        input_names, output_names: the source's names, in the image's io order
        input_layouts, output_layouts: per input/output {"shape": logical sample shape,
                      "core_shape": the image's, "transpose": numpy axes or None}
        op_sources:   per core op, the source op it came from (for messages and info)
        layers:       per layer of the image, {"name", "type", "op", "ops", "aliases"}: the
                      source layer's name and type, its operator with weights and all its
                      operators (TFLite; None where the reader names none)
        int8:         an int8 .tflite's frozen part, for export: {"kept_ops": the file's
                      operators kept as they are, "core_to_source": {core tensor: file
                      tensor}, "constants": {file tensor: array computed at import}}
        notes:        what the import did that a user should know (hybrid weights
                      dequantized, ...), as sentences
        operators:    every operator of the file, {"index", "type", "name", "aliases"}
                      (TFLite; what ``train_from`` and ``microtrain info`` name)
    """

    def __init__(self, fmt, data, origins, folds, input_names, output_names, input_layouts,
                 output_layouts, op_sources, layers=None, int8=None, notes=(), operators=None):
        self.format = fmt
        self.data = bytes(data)
        self.origins = list(origins)
        self.folds = list(folds)
        self.input_names = list(input_names)
        self.output_names = list(output_names)
        self.input_layouts = list(input_layouts)
        self.output_layouts = list(output_layouts)
        self.op_sources = list(op_sources)
        self.layers = None if layers is None else [dict(layer) for layer in layers]
        self.int8 = int8
        self.notes = list(notes)
        self.operators = None if operators is None else [dict(op) for op in operators]

    def named_layers(self, layer_ops):
        """``Layer`` lists for ``Session.layers`` (``layer_ops``: the op indices of each
        layer number, as the image records them), or None when the names do not fit."""
        if self.layers is None or len(self.layers) != len(layer_ops):
            return None
        return [Layer(ops, info["name"], info["type"], info["op"], info["aliases"],
                      info.get("ops"))
                for ops, info in zip(layer_ops, self.layers)]

    def layer_names(self):
        """Per layer number, the names ``compile(trainable=[...])`` accepts for it."""
        if self.layers is None:
            return None
        return [[info["name"]] + list(info["aliases"]) for info in self.layers]

    def __repr__(self):
        return "SourceRecord(%s, %d bytes, %d weights, %d folds)" % (
            self.format, len(self.data), len(self.origins), len(self.folds))


class Layer(list):
    """One layer of an imported model: the op indices of the image it runs as (a list, as
    ``Session.layers`` gives for any model) with the source operator's ``name`` (TensorFlow's
    layer name, ``dense_1``), ``type`` (the TFLite builtin, ``FULLY_CONNECTED``),
    ``source_op`` (its index in the file, the one with weights; None for ops the import
    created, a new head's), ``source_ops`` (every file operator of the layer: Keras's
    Conv1D is EXPAND_DIMS, CONV_2D and a reshape) and ``aliases`` (other names it answers
    to: its scope, its tensors' full names)."""

    def __init__(self, ops, name, op_type, source_op, aliases=(), source_ops=None):
        list.__init__(self, ops)
        self.name = name
        self.type = op_type
        self.source_op = source_op
        self.source_ops = tuple(source_ops if source_ops is not None else
                                ([] if source_op is None else [source_op]))
        self.aliases = tuple(aliases)

    def __repr__(self):
        where = "" if self.source_op is None else " (file op %d)" % self.source_op
        return "Layer(%r, %s%s: ops %s)" % (self.name, self.type, where, list(self))


def _source_list(name, doc):
    """A read-only property of ConvertedModel: a copy of its source record's list ``name``
    (the caller may change the copy; the record, which export reads, stays as imported)."""
    return property(lambda self: list(getattr(self.source, name)), doc=doc)


class ConvertedModel(ImageModel):
    """An imported model: ``to_bytes()`` is the ``.mtm`` image ``TrainSession`` takes.

    Layout at the API: the image takes inputs and gives outputs as the source's runtime
    does: NHWC for TFLite/circle, and NCHW for ONNX images, which TRANSPOSE ops inside the
    image move to and from the core's NHWC. Feed a session the arrays you would give
    LiteRT or ONNX Runtime.
    """

    def __init__(self, image, source):
        self._image = bytes(image)
        self.source = source

    @property
    def format(self):
        """The source file's format: "onnx", "tflite" or "circle"."""
        return self.source.format

    input_names = _source_list("input_names",
                               "The source graph's input names, in the image's input order.")
    output_names = _source_list("output_names",
                                "The source graph's output names, in the image's output order.")
    input_layouts = _source_list(
        "input_layouts",
        """Per input, how the source lays out a sample against the core: {"shape": the
        source's sample shape, "core_shape": the image's, "transpose": numpy axes or None};
        the session converts at its API.""")
    output_layouts = _source_list(
        "output_layouts",
        "Per output, how the source lays out a sample against the core (as ``input_layouts``).")

    @property
    def input_shapes(self):
        """One sample's shape of each input in the image (the core's layout)."""
        parsed = _image.read_image(self._image)
        return [parsed.tensors[i].dims for i in parsed.inputs]

    @property
    def output_shapes(self):
        """One sample's shape of each output in the image (the core's layout)."""
        parsed = _image.read_image(self._image)
        return [parsed.tensors[i].dims for i in parsed.outputs]

    def get_weights(self):
        """The image's weights in ``mt_session_param`` order (copies)."""
        parsed = _image.read_image(self._image)
        return [parsed.tensor_data(i).copy() for i in parsed.const_f32_tensors()]

    def export(self, path, weights=None, format=None):
        """Write a .tflite/.circle/.onnx file with ``weights`` (default: the image's)."""
        from .exporter import export
        return export(self._image, self.get_weights() if weights is None else weights, path,
                      format=format, source=self.source)

    def __repr__(self):
        return "ConvertedModel(%s, inputs=%r, outputs=%r, %d image bytes)" % (
            self.format, self.input_names, self.output_names, len(self._image))
