"""The .mtm writer and reader against model_format.md, and the C validator against them."""

import ctypes
import struct
import zlib

import numpy as np
import pytest

import microtrain
from microtrain import ops as opcodes
from microtrain import layers
from microtrain.nn import image as _image
from microtrain.backend import _native
from microtrain.errors import MicrotrainError


def digits_model(seed=0):
    return microtrain.Sequential(
        [layers.Dense(32, activation="relu"), layers.Dense(10), layers.Softmax()],
        input_shape=(64,), seed=seed)


def aligned_copy(data):
    """The bytes in a 16-byte-aligned numpy buffer (the core needs 4-byte alignment)."""
    raw = np.zeros(len(data) + 16, dtype=np.uint8)
    start = (-raw.ctypes.data) % 16
    buffer = raw[start:start + len(data)]
    buffer[:] = np.frombuffer(bytes(data), dtype=np.uint8)
    return buffer


def native_check(data, declared_size=None):
    """mt_model_check on ``data``; returns the mt_model_info or raises MicrotrainError."""
    buffer = aligned_copy(data)
    info = _native.mt_model_info()
    size = len(data) if declared_size is None else declared_size
    _native._check(_native.mt_model_check(buffer.ctypes.data, size, ctypes.byref(info)),
                   "mt_model_check")
    return info


def test_header_fields_follow_the_format():
    data = digits_model().to_bytes()
    magic, version, header_bytes, image_bytes, crc = struct.unpack_from("<4sHHII", data, 0)
    assert magic == b"MTM1" and version == 2 and header_bytes == 64
    assert image_bytes == len(data)
    assert crc == zlib.crc32(data[16:]) & 0xFFFFFFFF
    header = _image.read_image(data).header
    assert header.tensors_offset == 64
    assert header.ops_offset == 64 + 32 * header.num_tensors
    assert header.io_offset == header.ops_offset + 32 * header.num_ops
    assert header.data_offset % 16 == 0
    assert header.data_offset + header.data_bytes == image_bytes
    assert data[52:64] == bytes(12)


def test_round_trip_keeps_tensors_ops_and_weights():
    model = digits_model()
    image = _image.read_image(model.to_bytes())
    # input, W1, b1, dense1 out, relu out, W2, b2, dense2 out, softmax out
    assert [t.dims for t in image.tensors] == [(64,), (32, 64), (32,), (32,), (32,), (10, 32),
                                               (10,), (10,), (10,)]
    const_trainable = _image.FLAG_CONST | _image.FLAG_TRAINABLE
    assert [t.flags for t in image.tensors] == [_image.FLAG_INPUT, const_trainable,
                                                const_trainable, 0, 0, const_trainable,
                                                const_trainable, 0, _image.FLAG_OUTPUT]
    assert [op.op_type for op in image.ops] == [opcodes.DENSE, opcodes.RELU,
                                                opcodes.DENSE, opcodes.SOFTMAX]
    assert image.ops[0].inputs == [0, 1, 2] and image.ops[0].outputs == [3]
    assert image.ops[3].inputs == [7] and image.ops[3].outputs == [8]
    assert image.inputs == [0] and image.outputs == [8]
    assert image.const_f32_tensors() == [1, 2, 5, 6]
    for tensor_index, expected in zip(image.const_f32_tensors(), model.get_weights()):
        assert image.tensors[tensor_index].data_offset % 16 == 0
        np.testing.assert_array_equal(image.tensor_data(tensor_index), expected)


def test_write_read_write_is_byte_identical():
    data = digits_model().to_bytes()
    image = _image.read_image(data)
    specs = [_image.TensorSpec(t.dims, t.flags, t.dtype,
                               image.tensor_data(t.index) if t.flags & _image.FLAG_CONST
                               else None)
             for t in image.tensors]
    assert _image.write_image(specs, image.ops, image.inputs, image.outputs) == data


def test_absent_bias_is_written_as_0xffff():
    model = microtrain.Sequential([layers.Dense(3, use_bias=False)], input_shape=(5,), seed=1)
    data = model.to_bytes()
    header = _image.read_image(data).header
    raw_inputs = struct.unpack_from("<4H", data, header.ops_offset + 4)
    assert raw_inputs == (0, 1, 0xFFFF, 0xFFFF)
    assert _image.read_image(data).ops[0].inputs == [0, 1, None]
    assert native_check(data).num_params == 1


def test_same_seed_same_image_different_seed_different_weights():
    assert digits_model(seed=3).to_bytes() == digits_model(seed=3).to_bytes()
    assert digits_model(seed=3).to_bytes() != digits_model(seed=4).to_bytes()


def test_default_initialisation_is_torch_linear_uniform_bound():
    weights = digits_model(seed=0).get_weights()
    for weight, in_features in ((weights[0], 64), (weights[1], 64), (weights[2], 32),
                                (weights[3], 32)):
        bound = 1.0 / np.sqrt(in_features)
        assert weight.dtype == np.float32
        assert np.all(np.abs(weight) <= bound)
        assert np.max(np.abs(weight)) > 0.8 * bound  # spread over the range, not zeros


def test_reader_rejects_crc_mismatch_and_bad_magic():
    data = bytearray(digits_model().to_bytes())
    data[-1] ^= 0x01
    with pytest.raises(ValueError, match="CRC mismatch"):
        _image.read_image(bytes(data))
    assert _image.read_image(bytes(data), verify_crc=False).header.num_ops == 4
    data = bytearray(digits_model().to_bytes())
    data[0:4] = b"XXXX"
    with pytest.raises(ValueError, match="bad magic"):
        _image.read_image(bytes(data))


def test_update_crc_repairs_an_edited_image():
    data = bytearray(digits_model().to_bytes())
    image = _image.read_image(bytes(data))
    offset = image.tensors[1].data_offset
    struct.pack_into("<f", data, offset, 0.25)
    with pytest.raises(ValueError, match="CRC mismatch"):
        _image.read_image(bytes(data))
    _image.update_crc(data)
    assert _image.read_image(bytes(data)).tensor_data(1)[0, 0] == np.float32(0.25)


def test_native_check_accepts_written_images():
    info = native_check(digits_model().to_bytes())
    assert info.version == 2
    assert (info.num_tensors, info.num_ops, info.num_inputs, info.num_outputs) == (9, 4, 1, 1)
    assert info.num_params == 4
    assert info.param_count == 32 * 64 + 32 + 10 * 32 + 10
    assert info.crc32 == zlib.crc32(digits_model().to_bytes()[16:]) & 0xFFFFFFFF

    every_activation = microtrain.Sequential(
        [layers.Dense(8, activation="tanh"), layers.Dense(6, activation="sigmoid"),
         layers.Dense(4, activation="relu"), layers.Dense(3, activation="softmax")],
        input_shape=(2, 5), seed=2)
    assert native_check(every_activation.to_bytes()).num_ops == 8


def test_native_check_describes_tensors_and_io():
    buffer = aligned_copy(digits_model().to_bytes())
    tensor_index = ctypes.c_int32()
    _native._check(_native.mt_model_io(buffer.ctypes.data, buffer.size, 1, 0,
                                       ctypes.byref(tensor_index)))
    assert tensor_index.value == 8
    info = _native.mt_tensor_info()
    _native._check(_native.mt_model_tensor(buffer.ctypes.data, buffer.size, 1,
                                           ctypes.byref(info)))
    assert (info.index, info.dtype, info.ndim, tuple(info.dims[:2]), info.count) == \
        (1, _native.MT_DTYPE_F32, 2, (32, 64), 32 * 64)
    assert info.flags == _native.MT_TENSOR_CONST | _native.MT_TENSOR_TRAINABLE
    assert info.producer == -1
    _native._check(_native.mt_model_tensor(buffer.ctypes.data, buffer.size, 4,
                                           ctypes.byref(info)))
    assert info.producer == 1  # the ReLU op writes tensor 4
    with pytest.raises(MicrotrainError) as error:
        _native._check(_native.mt_model_tensor(buffer.ctypes.data, buffer.size, 9,
                                               ctypes.byref(info)), "mt_model_tensor")
    assert error.value.status == _native.MT_ERR_BAD_ARGUMENT


def test_native_check_rejects_truncated_images():
    data = digits_model().to_bytes()
    for keep in (0, 10, 63, 64, 500, len(data) - 16, len(data) - 1):
        with pytest.raises(MicrotrainError) as error:
            native_check(data, declared_size=keep)
        assert error.value.status in (_native.MT_ERR_BAD_MODEL, _native.MT_ERR_BAD_ARGUMENT), \
            "kept %d bytes" % keep
        assert "mt_model_check" in str(error.value)


def test_native_check_rejects_every_single_bit_flip_in_a_sample_of_positions():
    data = digits_model().to_bytes()
    rng = np.random.default_rng(7)
    positions = sorted(set(range(0, 64)) | set(rng.integers(64, len(data), 200).tolist()))
    for position in positions:
        for bit in (0, 7):
            flipped = bytearray(data)
            flipped[position] ^= 1 << bit
            with pytest.raises(MicrotrainError) as error:
                native_check(bytes(flipped))
            assert error.value.status in (_native.MT_ERR_BAD_MODEL, _native.MT_ERR_UNSUPPORTED,
                                          _native.MT_ERR_SHAPE, _native.MT_ERR_BAD_ARGUMENT), \
                "byte %d bit %d" % (position, bit)


def test_native_check_rejects_structural_errors_even_with_a_valid_crc():
    data = digits_model().to_bytes()
    header = _image.read_image(data).header
    # name: (offset, struct format, value written, status expected)
    cases = {
        "op reads a tensor no earlier op wrote": (header.ops_offset + 4, "<H", 8,
                                                  _native.MT_ERR_BAD_MODEL),
        "unknown op type": (header.ops_offset, "<B", 99, _native.MT_ERR_UNSUPPORTED),
        "unknown version": (4, "<H", 4, _native.MT_ERR_UNSUPPORTED),
        "version 0": (4, "<H", 0, _native.MT_ERR_UNSUPPORTED),
        "first op in layer 1": (header.ops_offset + 3, "<B", 1, _native.MT_ERR_BAD_MODEL),
        "layer goes down": (header.ops_offset + 3 * 32 + 3, "<B", 0, _native.MT_ERR_BAD_MODEL),
        "tensor table past the end": (32, "<I", len(data), _native.MT_ERR_BAD_MODEL),
        "image longer than the buffer": (8, "<I", len(data) + 16, _native.MT_ERR_BAD_MODEL),
    }
    for name, (offset, fmt, value, expected_status) in cases.items():
        edited = bytearray(data)
        struct.pack_into(fmt, edited, offset, value)
        if name != "image longer than the buffer":
            _image.update_crc(edited)  # the CRC is right: only the structure is wrong
        with pytest.raises(MicrotrainError) as error:
            native_check(bytes(edited))
        assert error.value.status == expected_status, name


def test_train_session_rejects_a_corrupt_image_with_microtrain_error():
    data = bytearray(digits_model().to_bytes())
    data[200] ^= 0x10
    with pytest.raises(MicrotrainError) as error:
        microtrain.TrainSession(bytes(data))
    assert error.value.status == _native.MT_ERR_BAD_MODEL
    assert error.value.function == "mt_model_check"


def as_version_1(data):
    """The version 1 image of a version 2 one: version field 1, op byte 3 (the layer) zero."""
    edited = bytearray(data)
    header = _image.read_image(data).header
    struct.pack_into("<H", edited, 4, 1)
    for index in range(header.num_ops):
        edited[header.ops_offset + 32 * index + 3] = 0
    _image.update_crc(edited)
    return bytes(edited)


def test_ops_carry_their_layer():
    """A Dense with an activation is one layer of two ops; a folded BatchNorm emits none, and
    the image numbers ops by their layer's position in model.layers (skipping the
    BatchNorm's), so an image file numbers layers as the model does."""
    model = digits_model()
    ops = _image.read_image(model.to_bytes()).ops
    assert [op.layer for op in ops] == [0, 0, 1, 2]
    assert model.layer_ops == [[0, 1], [2], [3]] and model.image_layers == [0, 1, 2]

    x = microtrain.Input((6, 6, 1))
    y = layers.Conv2D(4, 3)(x)
    y = layers.BatchNorm()(y)
    y = layers.ReLU()(y)
    y = layers.Dense(3, activation="softmax")(layers.GlobalAveragePool()(y))
    model = microtrain.Model(x, y, seed=0)
    ops = _image.read_image(model.to_bytes()).ops
    assert model.layer_ops == [[0], [], [1], [2], [3, 4]]
    assert model.image_layers == [0, None, 2, 3, 4]
    assert [op.layer for op in ops] == [0, 2, 3, 4, 4]
    for position, op_indices in enumerate(model.layer_ops):
        for op in op_indices:
            assert ops[op].layer == model.image_layers[position] == position
    native_check(model.to_bytes())
    session = microtrain.TrainSession(model.to_bytes())  # the bytes alone know the layers
    assert session.layers == [[0], [], [1], [2], [3, 4]]
    with pytest.raises(ValueError, match="layer 1, which emits no op"):
        session.compile("sgd", "mse", trainable=[1])
    session.compile("sgd", "mse", trainable=[0, 4])  # the Conv2D and the Dense + Softmax
    assert session.trained_tensors() == [index for index, _ in session.model_description()["params"]]



def test_version_1_images_still_read_and_load():
    data = digits_model().to_bytes()
    old = as_version_1(data)
    image = _image.read_image(old)
    assert image.header.version == 1
    assert [op.layer for op in image.ops] == [0, 1, 2, 3]  # every op a layer of its own
    assert native_check(old).version == 1
    assert native_check(data).version == 2
    with microtrain.TrainSession(old) as a, microtrain.TrainSession(data) as b:
        for session in (a, b):
            session.compile("sgd", "categorical_crossentropy", batch_size=4)
        assert a.memory_plan() == b.memory_plan()
    edited = bytearray(old)
    struct.pack_into("<H", edited, 4, 4)
    _image.update_crc(edited)
    with pytest.raises(ValueError, match="image version 4, this reader knows 1 and 2 and 3"):
        _image.read_image(bytes(edited))


def test_writer_refuses_layers_that_break_the_rule():
    tensors = [_image.TensorSpec((2,), flags=_image.FLAG_INPUT), _image.TensorSpec((2,)),
               _image.TensorSpec((2,), flags=_image.FLAG_OUTPUT)]

    def write(first, second):
        ops = [_image.OpSpec(opcodes.RELU, [0], [1], layer=first),
               _image.OpSpec(opcodes.RELU, [1], [2], layer=second)]
        return _image.read_image(_image.write_image(tensors, ops, [0], [2])).ops

    assert [op.layer for op in write(None, None)] == [0, 1]  # None: a layer of its own
    assert [op.layer for op in write(0, 0)] == [0, 0]
    assert [op.layer for op in write(None, 1)] == [0, 1]
    assert [op.layer for op in write(0, 2)] == [0, 2]  # layer 1 emitted no op
    assert [op.layer for op in write(1, None)] == [1, 2]
    for first, second in ((1, 0), (3, 2), (0, 256)):
        with pytest.raises(ValueError, match="never go down|layers 0..255"):
            write(first, second)


def native_ops(data):
    """Every op of an image as mt_model_op describes it."""
    buffer = aligned_copy(data)
    info = _native.mt_model_info()
    _native._check(_native.mt_model_check(buffer.ctypes.data, buffer.size, ctypes.byref(info)))
    ops = []
    for index in range(info.num_ops):
        op = _native.mt_op_info()
        _native._check(_native.mt_model_op(buffer.ctypes.data, buffer.size, index,
                                           ctypes.byref(op)), "mt_model_op")
        ops.append(op)
    return ops


def test_mt_model_op_reads_back_what_the_writer_wrote():
    """Every field of every op of a CNN with branches, a folded BatchNorm, pools' params, a
    bias-less convolution and a LeakyReLU's float param, against the Python reader."""
    x = microtrain.Input((8, 8, 2))
    y = layers.Conv2D(4, 3, padding="same", activation="relu")(x)
    y = layers.BatchNorm()(layers.Conv2D(4, 3, strides=(2, 1), use_bias=False)(y))
    z = layers.DepthwiseConv2D(3, padding="same", activation="relu6")(y)
    y = layers.Concatenate()([layers.Add()([y, z]), y])
    y = layers.MaxPool2D(2, padding="same")(layers.LeakyReLU(0.2)(y))
    out = layers.Dense(3, activation="softmax")(layers.Flatten()(y))
    model = microtrain.Model(x, out, seed=3)
    data = model.to_bytes()
    written = _image.read_image(data).ops
    ops = native_ops(data)
    assert len(ops) == len(written)
    for index, (op, spec) in enumerate(zip(ops, written)):
        assert op.index == index and op.type == spec.op_type
        assert (op.num_inputs, op.num_outputs) == (len(spec.inputs), len(spec.outputs))
        assert list(op.inputs) == [-1 if i is None else i for i in spec.inputs] + \
            [-1] * (4 - len(spec.inputs))
        assert list(op.outputs) == spec.outputs + [-1] * (2 - len(spec.outputs))
        assert tuple(op.params) == tuple(spec.params)
        assert op.layer == spec.layer and op.reserved == 0
    for position, op_indices in enumerate(model.layer_ops):
        for index in op_indices:
            assert ops[index].layer == model.image_layers[position]
    leaky = [op for op in ops if op.type == opcodes.LEAKY_RELU][0]
    assert _image.f32_from_bits(leaky.params[0]) == np.float32(0.2)
    assert [op.layer for op in native_ops(as_version_1(data))] == list(range(len(ops)))


def test_mt_model_tensor_data_offset_points_at_the_weights():
    model = digits_model()
    data = model.to_bytes()
    buffer = aligned_copy(data)
    image = _image.read_image(data)
    weights = iter(model.get_weights())
    for tensor in image.tensors:
        info = _native.mt_tensor_info()
        _native._check(_native.mt_model_tensor(buffer.ctypes.data, buffer.size, tensor.index,
                                               ctypes.byref(info)))
        if not tensor.flags & _image.FLAG_CONST:
            assert info.data_offset == -1
            continue
        assert info.data_offset == tensor.data_offset and info.data_offset % 16 == 0
        stored = np.frombuffer(data, dtype="<f4", count=info.count, offset=info.data_offset)
        np.testing.assert_array_equal(stored, next(weights).ravel())
