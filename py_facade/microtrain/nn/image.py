"""Writer and reader of the ``.mtm`` model image: writes version 2 (version 3 for a model with
int8 tensors), reads 1, 2 and 3.

The format is specified in micro_core/docs/model_format.md; the C reader is
micro_core/src/model_image.c. Layout written here::

    [0, 64)                 header
    [64, ...)               tensor table, 32 bytes per tensor
    ...                     op table, 32 bytes per op
    ...                     io table: num_inputs then num_outputs u16 tensor indices
    quant_offset (4-align)  version 3: the quantization records of int8 (and int32 bias)
                            tensors; each tensor entry's last u32 is its record's offset
    data_offset (16-align)  weight data; every CONST tensor starts 16-aligned and is
                            zero-padded to a multiple of 16 bytes

Everything is little-endian. crc32 (zlib.crc32, IEEE) covers bytes [16, image_bytes).
Version 2 stores each op's layer in byte 3 of its entry (reserved, zero, in version 1):
the ops of a layer are consecutive and layers are numbered from 0, so from op to op the
number stays or grows by one. Read from a version 1 image, every op is a layer of its own.
The reader is for tests and tools: it checks the structure enough to parse, not
everything the C validator checks.
"""

import dataclasses
import struct
import zlib

import numpy as np

from .._shapes import element_count

MAGIC = b"MTM1"
VERSION = 2              # what write_image writes for a float model
VERSION_QUANTIZED = 3    # ... and for a model with quantized tensors
READ_VERSIONS = (1, 2, 3)  # what read_image (and the C reader) accept
MAX_LAYER = 255          # a u8 in the op entry
HEADER_BYTES = 64
TENSOR_ENTRY_BYTES = 32
OP_ENTRY_BYTES = 32
DATA_ALIGN = 16
CRC_START = 16
ABSENT = 0xFFFF
MAX_DIMS = 4
MAX_OP_INPUTS = 4
MAX_OP_OUTPUTS = 2
MAX_OP_PARAMS = 4

DTYPE_F32 = 1
DTYPE_I32 = 2
DTYPE_I8 = 3
NUMPY_DTYPES = {DTYPE_F32: np.dtype("<f4"), DTYPE_I32: np.dtype("<i4"), DTYPE_I8: np.dtype("i1")}
ELEMENT_BYTES = {DTYPE_F32: 4, DTYPE_I32: 4, DTYPE_I8: 1}

FLAG_CONST = 1
FLAG_TRAINABLE = 2
FLAG_INPUT = 4
FLAG_OUTPUT = 8
FLAG_MASTER = 16  # a TRAINABLE int8 weight with a float master copy (int8 layers trained in place)


# spatial op params (CONV2D, DEPTHWISE_CONV2D, MAX/AVERAGE_POOL2D), see model_format.md
PADDING_VALID = 0
PADDING_SAME = 1
PADDINGS = {"valid": PADDING_VALID, "same": PADDING_SAME}
PADDING_EXPLICIT = 2  # pools only: pads before and after each axis, in params[3]
MAX_POOL_PAD = 255    # a pad of PADDING_EXPLICIT is one byte
FUSED_NONE = 0
FUSED_RELU = 1
FUSED_RELU6 = 2
FUSED_ACTIVATIONS = {None: FUSED_NONE, "relu": FUSED_RELU, "relu6": FUSED_RELU6}

# magic, version, header_bytes, image_bytes, crc32, num_tensors, num_ops, num_inputs,
# num_outputs, tensors_offset, ops_offset, io_offset, data_offset, data_bytes,
# quant_offset, quant_bytes (version 3; zero before), reserved
_HEADER = struct.Struct("<4sHHIIIIIIIIIIIII4s")
# dtype, ndim, flags, dims[4], data offset, data bytes, quantization record offset
# (version 3; reserved, zero, before)
_TENSOR = struct.Struct("<BBH4IIII")
# op type, num inputs, num outputs, layer (version 2; reserved in 1), inputs[4], outputs[2],
# params[4]
_OP = struct.Struct("<BBBB4H2H4I")
_CRC_FIELD = struct.Struct("<I")
_CRC_OFFSET = 12

assert _HEADER.size == HEADER_BYTES
assert _TENSOR.size == TENSOR_ENTRY_BYTES
assert _OP.size == OP_ENTRY_BYTES


def align_up(value, alignment):
    return (value + alignment - 1) // alignment * alignment


class Quantization:
    """A tensor's quantization record: real = scale[c] * (q - zero_point[c]) along ``axis``
    (one channel: the whole tensor)."""

    def __init__(self, scales, zero_points, axis=0):
        self.scales = np.asarray(scales, dtype=np.float32).reshape(-1)
        self.zero_points = np.asarray(zero_points, dtype=np.int64).reshape(-1)
        self.axis = int(axis) if self.scales.size > 1 else 0
        if self.scales.size != self.zero_points.size or self.scales.size == 0:
            raise ValueError("a quantization record has as many zero points as scales (>= 1)")

    @property
    def channels(self):
        return int(self.scales.size)

    def pack(self):
        return (struct.pack("<II", self.channels, self.axis) + self.scales.astype("<f4").tobytes()
                + self.zero_points.astype("<i4").tobytes())

    def __eq__(self, other):
        return (isinstance(other, Quantization) and self.axis == other.axis
                and np.array_equal(self.scales, other.scales)
                and np.array_equal(self.zero_points, other.zero_points))

    def __repr__(self):
        return "Quantization(%d channel(s), axis %d)" % (self.channels, self.axis)


class TensorSpec:
    """One tensor table entry. ``data`` (numpy) is given for CONST tensors only;
    ``quant`` (a Quantization) for int8 tensors and, optionally, int32 biases."""

    def __init__(self, dims, flags=0, dtype=DTYPE_F32, data=None, quant=None):
        self.dims = tuple(int(d) for d in dims)
        self.flags = int(flags)
        self.dtype = int(dtype)
        self.data = data
        self.quant = quant

    @property
    def is_const(self):
        return bool(self.flags & FLAG_CONST)

    @property
    def count(self):
        return element_count(self.dims)

    def __repr__(self):
        return "TensorSpec(dims=%r, flags=%d, dtype=%d)" % (self.dims, self.flags, self.dtype)


class OpSpec:
    """One op table entry: type, input and output tensor indices (None = absent input),
    params, and the layer the op belongs to (None: a layer of its own, the next number)."""

    def __init__(self, op_type, inputs, outputs, params=(), layer=None):
        self.op_type = int(op_type)
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.params = tuple(int(p) for p in params)
        self.layer = None if layer is None else int(layer)

    def __repr__(self):
        return "OpSpec(type=%d, inputs=%r, outputs=%r, layer=%r)" % (
            self.op_type, self.inputs, self.outputs, self.layer)


def spatial_params(kernel, strides, padding, fused=FUSED_NONE):
    """The four params of a spatial op.

    ``kernel`` is (KH, KW) for pools and None for convolutions (they take it from W);
    ``strides`` (SH, SW); ``padding`` PADDING_VALID, PADDING_SAME or, for pools only,
    explicit pads ((top, bottom), (left, right)), 0..255 each (PADDING_EXPLICIT: params[3]
    holds them, a byte each); ``fused`` the activation of a convolution (FUSED_*), FUSED_NONE
    for pools.
    """
    for what, pair in (("kernel", kernel), ("strides", strides)):
        if pair is not None and not all(1 <= int(v) <= 0xFFFF for v in pair):
            raise ValueError("%s %r: each must be 1..65535 (16 bits of a param)"
                             % (what, list(pair)))
    packed_kernel = 0 if kernel is None else int(kernel[0]) | int(kernel[1]) << 16
    packed_strides = int(strides[0]) | int(strides[1]) << 16
    if isinstance(padding, (tuple, list)):
        (top, bottom), (left, right) = padding
        if kernel is None or fused != FUSED_NONE:
            raise ValueError("explicit pads are for pools only (a convolution's run as a PAD "
                             "op before it)")
        if not all(0 <= int(p) <= MAX_POOL_PAD for p in (top, bottom, left, right)):
            raise ValueError("pool pads %r: each must be 0..%d" % (padding, MAX_POOL_PAD))
        return (packed_kernel, packed_strides, PADDING_EXPLICIT,
                int(top) | int(bottom) << 8 | int(left) << 16 | int(right) << 24)
    return (packed_kernel, packed_strides, int(padding), int(fused))


def spatial_output_size(size, kernel, stride, padding):
    """One output dimension under TFLite's rules: VALID (I - K) / S + 1, SAME ceil(I / S);
    or, with ``padding`` the explicit pads (before, after) of this axis,
    (before + I + after - K) / S + 1. Returns 0 when no window fits."""
    if isinstance(padding, (tuple, list)):
        span = int(padding[0]) + size + int(padding[1])
        return 0 if span < kernel else (span - kernel) // stride + 1
    if padding == PADDING_SAME:
        return (size + stride - 1) // stride
    return 0 if size < kernel else (size - kernel) // stride + 1


def padding_only_window(size, kernel, stride, before, after):
    """Why explicit pads (before, after) give a pool a window of padding alone (which has no
    maximum and no average: the core refuses it), or None when every window holds an input
    element."""
    out = spatial_output_size(size, kernel, stride, (before, after))
    if out < 1:
        return "no %d window fits %d + %d + %d" % (kernel, before, size, after)
    if before >= kernel:
        return "the first window lies in the padding before the input"
    if (out - 1) * stride >= before + size:
        return "the last window starts in the padding after the input"
    return None


def f32_bits(value):
    """An op param holding a float: its IEEE-754 single-precision bits as a u32."""
    return struct.unpack("<I", struct.pack("<f", float(value)))[0]


def f32_from_bits(bits):
    return struct.unpack("<f", struct.pack("<I", int(bits)))[0]


def _pack_tensor(tensor, data_offset, data_bytes, quant_offset=0):
    if not 1 <= len(tensor.dims) <= MAX_DIMS:
        raise ValueError("a tensor has 1..%d dimensions, got %r" % (MAX_DIMS, tensor.dims))
    if any(d <= 0 for d in tensor.dims):
        raise ValueError("tensor dimensions must be positive, got %r" % (tensor.dims,))
    dims = list(tensor.dims) + [0] * (MAX_DIMS - len(tensor.dims))
    return _TENSOR.pack(tensor.dtype, len(tensor.dims), tensor.flags, *dims, data_offset,
                        data_bytes, quant_offset)


def op_layers(ops):
    """The layer number of each op as written: ``op.layer``, or for None the number after
    the previous op's. Raises ValueError where the numbers break the format's rule (from op
    to op they stay or grow, at most MAX_LAYER)."""
    layers = []
    for index, op in enumerate(ops):
        previous = layers[-1] if layers else -1
        layer = previous + 1 if op.layer is None else op.layer
        if layer < max(previous, 0):
            raise ValueError("op %d is in layer %d after layer %d: the ops of a layer are "
                             "consecutive, so layer numbers never go down"
                             % (index, layer, previous))
        if layer > MAX_LAYER:
            raise ValueError("op %d is in layer %d; an image holds layers 0..%d"
                             % (index, layer, MAX_LAYER))
        layers.append(layer)
    return layers


def _pack_op(op, layer):
    if len(op.inputs) > MAX_OP_INPUTS or len(op.outputs) > MAX_OP_OUTPUTS:
        raise ValueError("an op has at most %d inputs and %d outputs" % (MAX_OP_INPUTS,
                                                                         MAX_OP_OUTPUTS))
    if len(op.params) > MAX_OP_PARAMS:
        raise ValueError("an op has at most %d parameters" % MAX_OP_PARAMS)
    inputs = [ABSENT if i is None else int(i) for i in op.inputs]
    inputs += [ABSENT] * (MAX_OP_INPUTS - len(inputs))
    outputs = [int(o) for o in op.outputs] + [ABSENT] * (MAX_OP_OUTPUTS - len(op.outputs))
    params = list(op.params) + [0] * (MAX_OP_PARAMS - len(op.params))
    return _OP.pack(op.op_type, len(op.inputs), len(op.outputs), layer, *inputs, *outputs,
                    *params)


def _const_payload(tensor):
    """Little-endian bytes of a CONST tensor's data, checked against its declared shape."""
    if tensor.data is None:
        raise ValueError("CONST tensor %r has no data" % (tensor,))
    array = np.asarray(tensor.data)
    if array.shape != tensor.dims:
        raise ValueError("CONST tensor data has shape %r, declared %r" % (array.shape,
                                                                          tensor.dims))
    return np.ascontiguousarray(array, dtype=NUMPY_DTYPES[tensor.dtype]).tobytes()


def write_image(tensors, ops, inputs, outputs):
    """Serialise a model to ``.mtm`` bytes (version 2; version 3 when a tensor is int8 or
    carries a quantization record).

    Args:
        tensors: list of TensorSpec, in tensor-table order
        ops:     list of OpSpec, in execution order (their layers: see op_layers)
        inputs:  tensor indices of the model inputs, in order
        outputs: tensor indices of the model outputs, in order
    """
    num_tensors, num_ops = len(tensors), len(ops)
    tensors_offset = HEADER_BYTES
    ops_offset = tensors_offset + TENSOR_ENTRY_BYTES * num_tensors
    io_offset = ops_offset + OP_ENTRY_BYTES * num_ops
    quantized = any(t.quant is not None or t.dtype == DTYPE_I8 for t in tensors)
    quant_offset = align_up(io_offset + 2 * (len(inputs) + len(outputs)), 4)
    quant_section = bytearray()
    record_offsets = []
    for tensor in tensors:
        if tensor.dtype == DTYPE_I8 and tensor.quant is None:
            raise ValueError("int8 tensor %r has no quantization record" % (tensor,))
        if tensor.quant is None:
            record_offsets.append(0)
            continue
        record_offsets.append(quant_offset + len(quant_section))
        quant_section += tensor.quant.pack()
    data_offset = align_up(quant_offset + len(quant_section), DATA_ALIGN)

    tensor_table = bytearray()
    data_section = bytearray()
    for tensor, record in zip(tensors, record_offsets):
        if tensor.is_const:
            payload = _const_payload(tensor)
            offset = len(data_section)
            data_section += payload
            data_section += bytes(align_up(len(payload), DATA_ALIGN) - len(payload))
            tensor_table += _pack_tensor(tensor, offset, len(payload), record)
        else:
            tensor_table += _pack_tensor(tensor, 0, 0, record)
    op_table = b"".join(_pack_op(op, layer) for op, layer in zip(ops, op_layers(ops)))
    io_table = struct.pack("<%dH" % (len(inputs) + len(outputs)), *inputs, *outputs)
    io_padding = bytes(quant_offset - io_offset - len(io_table))
    quant_padding = bytes(data_offset - quant_offset - len(quant_section))
    image_bytes = data_offset + len(data_section)

    header = _HEADER.pack(MAGIC, VERSION_QUANTIZED if quantized else VERSION, HEADER_BYTES,
                          image_bytes, 0, num_tensors, num_ops, len(inputs), len(outputs),
                          tensors_offset, ops_offset, io_offset, data_offset, len(data_section),
                          quant_offset if quantized else 0,
                          len(quant_section) if quantized else 0, bytes(4))
    image = bytearray(header + tensor_table + op_table + io_table + io_padding + quant_section
                      + quant_padding + data_section)
    assert len(image) == image_bytes
    update_crc(image)
    return bytes(image)


def compute_crc(image):
    """CRC-32 the header stores: zlib.crc32 over bytes [16, image_bytes)."""
    image_bytes = _HEADER.unpack_from(image, 0)[3]
    return zlib.crc32(memoryview(image)[CRC_START:image_bytes]) & 0xFFFFFFFF


def update_crc(image):
    """Recompute and store the CRC of a writable image (bytearray, numpy uint8, memoryview)."""
    crc = compute_crc(image)
    _CRC_FIELD.pack_into(image, _CRC_OFFSET, crc)
    return crc


class ImageHeader:
    FIELDS = ("magic", "version", "header_bytes", "image_bytes", "crc32", "num_tensors",
              "num_ops", "num_inputs", "num_outputs", "tensors_offset", "ops_offset",
              "io_offset", "data_offset", "data_bytes", "quant_offset", "quant_bytes")

    def __init__(self, values):
        for name, value in zip(self.FIELDS, values):
            setattr(self, name, value)

    def as_dict(self):
        return {name: getattr(self, name) for name in self.FIELDS}


class ImageTensor:
    """A tensor table entry as read, with where its data lies in the image."""

    def __init__(self, index, dtype, dims, flags, data_offset, data_bytes, quant=None):
        self.index = index
        self.quant = quant  # a Quantization (version 3), or None
        self.dtype = dtype
        self.dims = dims
        self.flags = flags
        self.data_offset = data_offset  # absolute, from the start of the image
        self.data_bytes = data_bytes


@dataclasses.dataclass(eq=False, repr=False)
class ModelImage:
    """A parsed ``.mtm`` image: header, tensors, ops, io lists and access to CONST data."""

    buffer: object
    header: object
    tensors: list
    ops: list
    inputs: list
    outputs: list

    def tensor_data(self, index):
        """A read-only numpy copy of CONST tensor ``index``'s data, in its declared shape."""
        tensor = self.tensors[index]
        if not tensor.flags & FLAG_CONST:
            raise ValueError("tensor %d is not CONST and has no data in the image" % index)
        raw = bytes(memoryview(self.buffer)[tensor.data_offset:tensor.data_offset +
                                            tensor.data_bytes])
        return np.frombuffer(raw, dtype=NUMPY_DTYPES[tensor.dtype]).reshape(tensor.dims)

    def const_f32_tensors(self):
        """Indices of CONST f32 tensors in table order (what the core lists as params)."""
        return [t.index for t in self.tensors
                if t.flags & FLAG_CONST and t.dtype == DTYPE_F32]


def _read_quant(view, header, offset):
    """The Quantization record at ``offset`` (0: none), inside the quantization section."""
    if offset == 0:
        return None
    end = header.quant_offset + header.quant_bytes
    if offset < header.quant_offset or offset + 8 > end:
        raise ValueError("a quantization record at %d lies outside its section" % offset)
    channels, axis = struct.unpack_from("<II", view, offset)
    if offset + 8 + 8 * channels > end:
        raise ValueError("a quantization record of %d channels overruns its section" % channels)
    scales = np.frombuffer(bytes(view[offset + 8:offset + 8 + 4 * channels]), dtype="<f4")
    zero_points = np.frombuffer(bytes(view[offset + 8 + 4 * channels:offset + 8 + 8 * channels]),
                                dtype="<i4")
    return Quantization(scales, zero_points, axis)


def read_image(buffer, verify_crc=True):
    """Parse ``.mtm`` bytes. Raises ValueError on a bad magic, version, bound or CRC."""
    view = memoryview(buffer).cast("B") if not isinstance(buffer, (bytes, bytearray)) else buffer
    if len(view) < HEADER_BYTES:
        raise ValueError("image of %d bytes is shorter than the %d-byte header"
                         % (len(view), HEADER_BYTES))
    values = _HEADER.unpack_from(view, 0)
    header = ImageHeader(values[:-1])
    if header.magic != MAGIC:
        raise ValueError("bad magic %r, expected %r" % (header.magic, MAGIC))
    if header.version not in READ_VERSIONS:
        raise ValueError("image version %d, this reader knows %s"
                         % (header.version, " and ".join(str(v) for v in READ_VERSIONS)))
    if header.image_bytes > len(view) or header.image_bytes < HEADER_BYTES:
        raise ValueError("header says %d bytes, buffer holds %d" % (header.image_bytes,
                                                                    len(view)))
    if header.version >= VERSION_QUANTIZED and header.quant_bytes < 8:
        raise ValueError("a version 3 image has a quantization section (it is written for "
                         "quantized models only)")
    sections = (
        (header.quant_offset if header.quant_bytes else HEADER_BYTES, header.quant_bytes),
        (header.tensors_offset, TENSOR_ENTRY_BYTES * header.num_tensors),
        (header.ops_offset, OP_ENTRY_BYTES * header.num_ops),
        (header.io_offset, 2 * (header.num_inputs + header.num_outputs)),
        (header.data_offset, header.data_bytes),
    )
    for offset, size in sections:
        if offset < HEADER_BYTES or offset + size > header.image_bytes:
            raise ValueError("section [%d, %d) lies outside the image" % (offset, offset + size))
    if verify_crc:
        actual = compute_crc(view)
        if actual != header.crc32:
            raise ValueError("CRC mismatch: header 0x%08x, computed 0x%08x"
                             % (header.crc32, actual))

    tensors = []
    for index in range(header.num_tensors):
        fields = _TENSOR.unpack_from(view, header.tensors_offset + index * TENSOR_ENTRY_BYTES)
        dtype, ndim, flags = fields[0], fields[1], fields[2]
        dims = tuple(fields[3:3 + ndim])
        data_offset, data_bytes = fields[7], fields[8]
        quant = _read_quant(view, header, fields[9]) if header.version >= 3 else None
        if flags & FLAG_CONST:
            start = header.data_offset + data_offset
            if start + data_bytes > header.data_offset + header.data_bytes:
                raise ValueError("tensor %d data lies outside the data section" % index)
        else:
            start = 0
        tensors.append(ImageTensor(index, dtype, dims, flags, start, data_bytes, quant))

    ops = []
    for index in range(header.num_ops):
        fields = _OP.unpack_from(view, header.ops_offset + index * OP_ENTRY_BYTES)
        op_type, num_in, num_out = fields[0], fields[1], fields[2]
        op_inputs = [None if i == ABSENT else i for i in fields[4:4 + num_in]]
        op_outputs = list(fields[8:8 + num_out])
        layer = fields[3] if header.version >= 2 else index
        ops.append(OpSpec(op_type, op_inputs, op_outputs, fields[10:14], layer))

    io = struct.unpack_from("<%dH" % (header.num_inputs + header.num_outputs), view,
                            header.io_offset)
    return ModelImage(view, header, tensors, ops, list(io[:header.num_inputs]),
                      list(io[header.num_inputs:]))
