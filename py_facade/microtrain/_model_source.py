"""Where a session's model image comes from (MicroPython-safe): a path, bytes, a built model
or a converted one. Also the two small image edits the session makes in Python: float32
bytes of a weight and the image's CRC.

Foreign files (.tflite / .circle / .onnx) need the importers of ``microtrain.convert``, a
layer above the runtime that CPython alone has. The runtime does not import it: the
package's ``__init__`` plugs its reader and writer into ``foreign_reader`` /
``foreign_writer`` on CPython (they stay None under MicroPython, where such files are
refused by name).
"""

from . import _files
from .backend import crc32
from .errors import install_hint

_IMAGE_MAGIC = b"MTM1"
FOREIGN_EXTENSIONS = (".tflite", ".circle", ".onnx")

# foreign_reader(data, path) -> (image bytes, source record) or None when data is not a
# foreign model; foreign_writer(image, weights, format, source) -> the file's bytes.
foreign_reader = None
foreign_writer = None


def model_bytes(model):
    """(image bytes, source) of ``model`` (see Session): ``source`` is the record of the
    .tflite/.circle/.onnx file a model was converted from (for export back), or None."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return _foreign_or_image(bytes(model), None)
    if hasattr(model, "to_bytes") and not isinstance(model, int):
        # a microtrain.Sequential / Model, or a microtrain.convert.ConvertedModel
        return model.to_bytes(), getattr(model, "source", None)
    if isinstance(model, str) or hasattr(model, "__fspath__"):
        return _foreign_or_image(_files.read_file(model, "a model image"), model)
    raise TypeError("a session takes a path, bytes or a microtrain.Sequential/Model, got %s"
                    % type(model).__name__)


def _foreign_or_image(data, path):
    """An .mtm image as it is; a .tflite, .circle or .onnx file converted (CPython, with
    ``errors.install_hint("convert")``); anything else is left for the core to refuse.
    Bytes and paths are told apart alike: by ``foreign_reader`` (convert.detect_format:
    the flatbuffer identifier, the extension, an ONNX ModelProto's fields)."""
    if data[:4] == _IMAGE_MAGIC:
        return data, None
    if foreign_reader is None:
        foreign = path is not None and str(path).lower().endswith(FOREIGN_EXTENSIONS)
        if foreign or data[4:8] in (b"TFL3", b"CIR0"):
            raise ValueError("%s is a .tflite/.circle/.onnx model; reading it needs "
                             "microtrain.convert, on CPython (%s)"
                             % (path or "the data", install_hint("convert")))
        return data, None
    converted = foreign_reader(data, path)
    return (data, None) if converted is None else converted


def foreign_file_bytes(image, weights, format, source):
    """The .tflite/.circle/.onnx file of a trained model (see ``foreign_writer``)."""
    if foreign_writer is None:
        raise ValueError("exporting .%s needs microtrain.convert, on CPython (%s)"
                         % (format, install_hint("convert")))
    return foreign_writer(image, weights, format, source)


def _le_bytes(flat):
    """Little-endian bytes of a flat array at its width (numpy float32, int8 or int32, or
    array('f' / 'b' / 'i'))."""
    if hasattr(flat, "astype"):
        return flat.astype(flat.dtype.newbyteorder("<")).tobytes()
    return bytes(flat)  # array: the machine's order, little-endian on every target here


def _set_image_crc(image):
    """Store the CRC of an .mtm image (bytes [16, image_bytes) at offset 12) in place."""
    size = image[8] | image[9] << 8 | image[10] << 16 | image[11] << 24
    crc = crc32(memoryview(image)[16:size])
    for shift in range(4):
        image[12 + shift] = (crc >> (8 * shift)) & 0xFF
