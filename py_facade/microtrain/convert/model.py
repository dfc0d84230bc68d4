"""``ConvertedModel``: the ``.mtm`` image of an imported model, with what export needs."""

from .. import _files
from ..nn import image as _image


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
    """

    def __init__(self, fmt, data, origins, folds, input_names, output_names, input_layouts,
                 output_layouts, op_sources):
        self.format = fmt
        self.data = bytes(data)
        self.origins = list(origins)
        self.folds = list(folds)
        self.input_names = list(input_names)
        self.output_names = list(output_names)
        self.input_layouts = list(input_layouts)
        self.output_layouts = list(output_layouts)
        self.op_sources = list(op_sources)

    def __repr__(self):
        return "SourceRecord(%s, %d bytes, %d weights, %d folds)" % (
            self.format, len(self.data), len(self.origins), len(self.folds))


class ConvertedModel:
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
        return self.source.format

    @property
    def input_names(self):
        return list(self.source.input_names)

    @property
    def output_names(self):
        return list(self.source.output_names)

    @property
    def input_layouts(self):
        return list(self.source.input_layouts)

    @property
    def output_layouts(self):
        return list(self.source.output_layouts)

    @property
    def input_shapes(self):
        """One sample's shape of each input in the image (the core's layout)."""
        parsed = _image.read_image(self._image)
        return [parsed.tensors[i].dims for i in parsed.inputs]

    @property
    def output_shapes(self):
        parsed = _image.read_image(self._image)
        return [parsed.tensors[i].dims for i in parsed.outputs]

    def to_bytes(self):
        """The ``.mtm`` model image."""
        return self._image

    def save(self, path):
        """Write the ``.mtm`` image to ``path``, atomically (``microtrain._files``:
        only a regular file is replaced; a failure leaves the previous file)."""
        _files.atomic_write(path, lambda writer: writer.write(self._image))

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
