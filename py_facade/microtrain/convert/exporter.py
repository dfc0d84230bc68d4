"""Export trained weights as ``.tflite``, ``.circle`` or ``.onnx``.

``export(image, weights, path, format=None, source=None)``:

* with the ``source`` record of an imported file of the same format: the original file
  with the trained weights written back (ops, names, metadata and signatures kept; a
  BatchNorm or constant Mul/Add that was folded into a weight is removed or set to its
  identity, since the weight now holds it; tflite_write_back says when a .tflite is
  rewritten rather than patched: shared buffers, int8 or float16 weights of a float
  model); an int8 .tflite keeps its frozen int8 operators as they are and gets its
  trained float part as float operators;
* otherwise: a new file computing what the ``.mtm`` image computes (the core's layout:
  NHWC inputs), which LiteRT, onert and ONNX Runtime run.

``weights`` are float32 arrays in ``mt_session_param`` order (the image's CONST f32
tensors in table order), as ``TrainSession.get_weights()`` returns them.
"""

import os

import numpy as np

from .. import _files
from ..nn import image as _image
from .graph import ConversionError

_EXTENSIONS = {".tflite": "tflite", ".circle": "circle", ".onnx": "onnx"}


def _check_weights(image, weights):
    parsed = _image.read_image(image)
    indices = parsed.const_f32_tensors()
    weights = [np.asarray(w, dtype=np.float32) for w in weights]
    if len(weights) != len(indices):
        raise ValueError("the image has %d weight tensors, got %d arrays" % (len(indices),
                                                                            len(weights)))
    for position, (index, weight) in enumerate(zip(indices, weights)):
        dims = parsed.tensors[index].dims
        if weight.size != int(np.prod(dims)):
            raise ValueError("weight %d has %d elements, the image's tensor %d holds %r"
                             % (position, weight.size, index, dims))
        weights[position] = weight.reshape(dims)
    return weights


def export_bytes(model_image_bytes, weights, format, source=None):
    """The file's bytes (see the module docstring)."""
    if format not in ("tflite", "circle", "onnx"):
        raise ValueError("export format must be 'tflite', 'circle' or 'onnx', got %r"
                         % (format,))
    weights = _check_weights(model_image_bytes, weights)
    if source is not None and getattr(source, "int8", None) is not None:
        if format != "tflite":
            raise ConversionError("a model imported from a .tflite with an int8 part or a new "
                                  "head exports as .tflite (its kept operators are the "
                                  "file's), not .%s" % format)
        from . import tflite_write_back
        return tflite_write_back.write_back(source, weights, format, model_image_bytes)
    if source is not None and source.format == format:
        if format == "onnx":
            from . import onnx_writer
            return onnx_writer.write_back(source, weights)
        from . import tflite_write_back
        return tflite_write_back.write_back(source, weights, format, model_image_bytes)
    if format == "onnx":
        from . import onnx_writer
        return onnx_writer.write_new(model_image_bytes, weights)
    from . import tflite_writer
    return tflite_writer.write_new(model_image_bytes, weights, format)


def export(model_image_bytes, weights, path, format=None, source=None):
    """Write the file as every microtrain output is written (``microtrain._files``:
    atomically, over a regular file only, through a symbolic link, the mode a new file
    gets); ``format`` defaults to the extension of ``path``. Returns the format written."""
    if format is None:
        format = _EXTENSIONS.get(os.path.splitext(str(path))[1].lower())
        if format is None:
            raise ValueError("cannot tell the format from %r: give format='tflite', "
                             "'circle' or 'onnx'" % (path,))
    data = export_bytes(model_image_bytes, weights, format, source)
    _files.write_bytes(path, data)  # the one file policy of every output (microtrain._files)
    return format


__all__ = ["export", "export_bytes", "ConversionError"]
