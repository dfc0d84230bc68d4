"""int8 models from TensorFlow's converter (full-integer quantization, make_int8_fixtures.py):
every int8 tensor bit for bit what LiteRT's reference kernels (BUILTIN_REF) compute, the
whole MobileNetV2 backbone included; the importer's choices of the float part; what the
planner refuses; the image's quantization records.
"""

import os
import struct
import sys

import numpy as np
import pytest

import microtrain
from microtrain import ops as _ops
from microtrain.convert import ConversionError
from microtrain.errors import MicrotrainError
from microtrain.nn import image as _image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import int8_compare  # noqa: E402

pytest.importorskip("ai_edge_litert")
pytest.importorskip("tflite")

FIXTURES = os.path.join(HERE, "fixtures", "int8")
OPS = os.path.join(FIXTURES, "int8_ops.tflite")
MBV2 = os.path.join(FIXTURES, "mbv2_035_128.tflite")
# the same network pretrained on synthetic gratings (benchmarks/make_mbv2_trained.py): trained
# weights and scales, the file benchmarks/sparse_accuracy.py adapts
MBV2_TRAINED = os.path.join(FIXTURES, "mbv2_035_128_gratings.tflite")


def read(path):
    with open(path, "rb") as handle:
        return handle.read()


def rows_for(shape, n, seed, spread=1.2):
    rng = np.random.default_rng(seed)
    return rng.uniform(-spread, spread, (n,) + tuple(shape)).astype(np.float32)


def test_every_int8_op_matches_litert_reference_kernels_bit_for_bit():
    # beyond the representative range too: saturation of QUANTIZE and of the requantizations
    rows = np.concatenate([rows_for((12, 12, 3), 3, 0), rows_for((12, 12, 3), 2, 1, 4.0)])
    output_equal, report = int8_compare.compare(read(OPS), rows)
    kinds = {label.split("(")[-1].rstrip(")") for label, _, _, _ in report}
    assert kinds >= {"QUANTIZE", "CONV_2D", "DEPTHWISE_CONV_2D", "ADD", "PAD", "MAX_POOL_2D",
                     "AVERAGE_POOL_2D", "CONCATENATION", "MEAN", "RESHAPE",
                     "FULLY_CONNECTED"}, kinds
    assert [r for r in report if not r[1]] == []
    assert output_equal  # DEQUANTIZE: the float output's bits


@pytest.mark.parametrize("path", [MBV2, MBV2_TRAINED], ids=["random", "trained"])
def test_mobilenet_v2_backbone_matches_litert_bit_for_bit(path):
    rows = rows_for((128, 128, 3), 1, 7)
    output_equal, report = int8_compare.compare(read(path), rows)
    assert len(report) == 63  # QUANTIZE, 52 convolutions, 10 residual Adds
    assert [r for r in report if not r[1]] == []
    assert output_equal


MLPERF = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "models",
                      "mlperf_tiny")


def test_mlperf_tiny_autoencoder_matches_litert_on_200_random_inputs():
    """The anomaly-detection autoencoder (ten int8 FULLY_CONNECTED, 640 -> 128 ... 8 ... 640):
    every int8 activation equal to LiteRT's BUILTIN_REF on 200 inputs spread over the whole
    int8 range, 334,400 requantized values (with Conv2D's two roundings instead of
    FullyConnected's one in double, 28 of the first layer's 25,600 differed and 72,728 in
    all). The other MLPerf Tiny int8 files end in an int8 SOFTMAX, which the importer does
    not take yet."""
    data = read(os.path.join(MLPERF, "ad01_int8.tflite"))
    rows = np.random.default_rng(38).integers(-128, 128, (200, 640)).astype(np.int8)
    output_equal, report = int8_compare.compare(data, rows)
    assert [label for label, _, _, _ in report] == \
        ["tflite op %d (FULLY_CONNECTED)" % k for k in range(10)]
    assert sum(r[2] for r in report) == 200 * (8 * 128 + 8 + 640)
    assert [r for r in report if not r[1]] == []
    assert output_equal


def test_int8_input_takes_the_quantized_image_without_a_float_copy():
    data = read(OPS)
    model = microtrain.convert(data, int8_input=True)
    parsed = _image.read_image(model.to_bytes())
    source = parsed.tensors[parsed.inputs[0]]
    assert source.dtype == _image.DTYPE_I8 and parsed.ops[0].op_type == _ops.CONV2D_S8
    scale = float(source.quant.scales[0])
    zero_point = int(source.quant.zero_points[0])
    x = rows_for((12, 12, 3), 4, 3)
    q = np.clip(np.round(x / np.float32(scale)) + zero_point, -128, 127)
    with microtrain.TrainSession(model.to_bytes()) as ours, \
            microtrain.TrainSession(microtrain.convert(data).to_bytes()) as floats:
        np.testing.assert_array_equal(ours.infer(q)[0], floats.infer(x)[0])
        with pytest.raises(ValueError, match="integers in -128..127"):
            ours.infer(q + 0.5)


def test_an_int8_input_trains_from_float32_rows_of_integers_and_refuses_fractions():
    """float32 rows are the commonest numpy batch: for an int8 input they take the checked
    path (integers in -128..127, converted), never the float fast path's raw copy."""
    model = microtrain.convert(read(OPS), new_head=3, int8_input=True)
    q = np.random.default_rng(2).integers(-128, 128, (4, 12, 12, 3))
    y = np.eye(3, dtype=np.float32)[[0, 1, 2, 0]]
    with microtrain.TrainSession(model.to_bytes()) as floats, \
            microtrain.TrainSession(model.to_bytes()) as ints:
        for s in (floats, ints):
            s.compile("sgd", "categorical_crossentropy", batch_size=4)
        for _ in range(3):
            a = floats.train_step(q.astype(np.float32), y)["loss"][0]
            b = ints.train_step(q.astype(np.int8), y)["loss"][0]
            assert a == b
        assert all(np.array_equal(u, v) for u, v in zip(floats.get_weights(), ints.get_weights()))
        with pytest.raises(ValueError, match="integers in -128..127"):
            floats.train_step(q.astype(np.float32) + 0.5, y)
        with pytest.raises(ValueError, match="integers in -128..127"):
            floats.eval_step(q.astype(np.float32) * 2, y)


def test_the_models_own_head_trains_in_float_and_the_int8_part_stays_frozen():
    model = microtrain.convert(OPS)
    parsed = _image.read_image(model.to_bytes())
    kinds = [op.op_type for op in parsed.ops]
    assert kinds[-2:] == [_ops.DEQUANTIZE, _ops.DENSE]  # the head: dequantized, then float
    assert all(kind in _ops.INFERENCE_ONLY for kind in kinds[:-1])
    x = rows_for((12, 12, 3), 16, 4)
    y = np.random.default_rng(5).standard_normal((16, 5)).astype(np.float32)
    with microtrain.TrainSession(model.to_bytes()) as session:
        session.compile(microtrain.optimizers.Adam(0.01), "mse", batch_size=8)  # "all" ops
        plan = session.memory_plan()
        assert plan["first_trained_op"] == len(kinds) - 1 and plan["num_trained_params"] == 2
        assert 0 < plan["int8_activation_bytes"] < plan["total_bytes"]
        losses = [session.train_step(x[:8], y[:8])["loss"][0] for _ in range(20)]
    assert losses[-1] < losses[0]


def test_new_head_cuts_after_the_backbone_and_train_from_moves_the_float_start():
    data = read(MBV2)
    head = microtrain.convert(data, new_head=10, int8_input=True)
    parsed = _image.read_image(head.to_bytes())
    kinds = [op.op_type for op in parsed.ops]
    assert kinds[-4:] == [_ops.MEAN_S8, _ops.DEQUANTIZE, _ops.DENSE, _ops.SOFTMAX]
    assert head.output_shapes == [(10,)] and head.input_shapes == [(128, 128, 3)]
    deeper = microtrain.convert(data, new_head=10, int8_input=True, train_from="block_15")
    parsed = _image.read_image(deeper.to_bytes())
    float_convs = [op for op in parsed.ops if op.op_type in (_ops.CONV2D, _ops.DEPTHWISE_CONV2D)]
    assert len(float_convs) == 2 * 3 + 1  # blocks 15 and 16 (expand, depthwise, project), Conv_1
    with pytest.raises(ConversionError, match="no operator is named 'block_99'"):
        microtrain.convert(data, new_head=10, train_from="block_99")
    with pytest.raises(ConversionError, match="no spatial .H, W, C. activation"):
        microtrain.convert(os.path.join(HERE, "fixtures", "tf_mlp.tflite"), new_head=3)
    with pytest.raises(ConversionError, match="int8_input to int8 ones"):
        microtrain.convert(os.path.join(HERE, "fixtures", "tf_mlp.tflite"), int8_input=True)


def _float_then_int8_image(blocked=False):
    """input f32[4] -> Dense (trainable) -> QUANTIZE -> DEQUANTIZE -> Dense -> output: a
    gradient to the first Dense passes through the int8 boundary (straight through, in
    [-128, 127]); ``blocked`` puts a PAD_S8 between them, an int8 op without a backward."""
    q = _image.Quantization([0.05], [3])
    rng = np.random.default_rng(0)
    tensors = [
        _image.TensorSpec((4,), flags=_image.FLAG_INPUT),
        _image.TensorSpec((4, 4), flags=_image.FLAG_CONST | _image.FLAG_TRAINABLE,
                          data=rng.standard_normal((4, 4)).astype(np.float32)),
        _image.TensorSpec((4,)),
        _image.TensorSpec((1, 1, 4) if blocked else (4,), dtype=_image.DTYPE_I8, quant=q),
        _image.TensorSpec((4,)),
        _image.TensorSpec((2, 4), flags=_image.FLAG_CONST | _image.FLAG_TRAINABLE,
                          data=rng.standard_normal((2, 4)).astype(np.float32)),
        _image.TensorSpec((2,), flags=_image.FLAG_OUTPUT),
    ]
    params = (_image.f32_bits(0.05), 3)
    ops = [_image.OpSpec(_ops.DENSE, [0, 1, None], [2]),
           _image.OpSpec(_ops.QUANTIZE, [2], [3], params),
           _image.OpSpec(_ops.DEQUANTIZE, [3], [4], params),
           _image.OpSpec(_ops.DENSE, [4, 5, None], [6])]
    if blocked:
        tensors.append(_image.TensorSpec((1, 1, 4), dtype=_image.DTYPE_I8, quant=q))
        ops[2:2] = [_image.OpSpec(_ops.PAD_S8, [3], [7], (0, 0, 0, 3))]
        ops[3] = _image.OpSpec(_ops.DEQUANTIZE, [7], [4], params)
    return _image.write_image(tensors, ops, [0], [6])


def test_the_planner_refuses_a_gradient_through_an_int8_op_without_backward_and_names_it():
    image = _float_then_int8_image(blocked=True)
    assert _image.read_image(image).header.version == 3
    with microtrain.TrainSession(image) as session:
        with pytest.raises(MicrotrainError) as error:
            session.compile("sgd", "mse", batch_size=2)  # every op trains
        assert error.value.status == -5 and error.value.op_index == 2
        assert "pad_s8" in str(error.value)
    with microtrain.TrainSession(image) as session:  # the last layer alone: fine
        session.compile("sgd", "mse", batch_size=2, trainable=1)
        x = np.ones((2, 4), np.float32)
        before = session.infer(x)[0]
        session.train_step(x, np.zeros((2, 2), np.float32))
        assert not np.array_equal(session.infer(x)[0], before)


def test_a_gradient_passes_through_quantize_and_dequantize():
    """QUANTIZE's straight-through gradient (0 where round(x / s) + zp left [-128, 127]) and
    DEQUANTIZE's identity let the Dense before them train: its weight moves, the loss falls."""
    image = _float_then_int8_image()
    rng = np.random.default_rng(1)
    x = rng.uniform(-0.3, 0.3, (2, 4)).astype(np.float32)
    y = np.array([[0.5, -0.5], [-0.2, 0.3]], np.float32)
    with microtrain.TrainSession(image) as session:
        session.compile(microtrain.optimizers.SGD(0.05), "mse", batch_size=2)
        first = session.get_weights()[0].copy()
        losses = [float(session.train_step(x, y)["loss"][0]) for _ in range(8)]
        assert not np.array_equal(session.get_weights()[0], first)
    assert losses[-1] < losses[0]


def test_quantization_records_round_trip_and_the_core_refuses_bad_ones():
    image = bytearray(_float_then_int8_image())
    parsed = _image.read_image(bytes(image))
    record = parsed.tensors[3].quant
    assert record == _image.Quantization([0.05], [3])
    header = parsed.header
    assert header.quant_bytes == 16 and header.quant_offset % 4 == 0
    microtrain.TrainSession(bytes(image)).close()  # valid
    offset = header.quant_offset
    bad = {
        "zero scale": (offset + 8, "<f", 0.0),
        "NaN scale": (offset + 8, "<f", float("nan")),
        "zero point beyond int8": (offset + 12, "<i", 200),
        "two channels on an activation": (offset, "<I", 2),
        "record outside its section": (header.tensors_offset + 3 * 32 + 28, "<I", offset + 4),
        "an f32 tensor with a record": (header.tensors_offset + 2 * 32 + 28, "<I", offset),
        "an int8 tensor without one": (header.tensors_offset + 3 * 32 + 28, "<I", 0),
        "no quantization section": (56, "<I", 0),
        "QUANTIZE's zero point not the record's": (header.ops_offset + 32 + 20, "<I", 4),
    }
    for name, (at, fmt, value) in bad.items():
        edited = bytearray(image)
        struct.pack_into(fmt, edited, at, value)
        _image.update_crc(edited)
        with pytest.raises(MicrotrainError) as error:
            microtrain.TrainSession(bytes(edited))
        assert error.value.status in (-2, -3), name


def test_mobilenet_v2_head_fine_tuning_plans_under_256_kib():
    """Frozen int8 layers keep nothing for a backward; the int8 input is consumed by the
    step; each pointwise expansion runs inside its depthwise convolution (a ring of 3 rows
    instead of the 64x64x48 tensor of block 1): the whole session fits a 256 KB part."""
    data = read(MBV2)
    model = microtrain.convert(data, new_head=10, int8_input=True)
    with microtrain.TrainSession(model.to_bytes()) as session:
        session.compile("sgd", "categorical_crossentropy", batch_size=1)
        plan = session.memory_plan()
    assert plan["total_bytes"] <= 210 * 1024, plan
    # the int8 working set (plan_lifetimes.c, mt_plan_over_input): the first convolution's
    # 64x64x16 output laid 17,152 bytes before the input it consumes, block 0's depthwise in
    # place over it with a band of 3 rows (3,072 bytes), its projection's 64x64x8 output 512
    # bytes before that: 512 + 65,536 + 3,072 = 69,120 (131,072 with each apart)
    assert plan["int8_activation_bytes"] == 69120 and plan["over_inputs"] > 0
    assert plan["weight_bytes"] == 4 * 1280 * 10 + 48 and plan["num_trained_params"] == 2  # W, b


def test_digits_backbone_matches_litert_and_a_new_head_learns_digits_5_to_9():
    from sklearn.datasets import load_digits
    data = read(os.path.join(FIXTURES, "digits_backbone_int8.tflite"))
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32).reshape(-1, 8, 8, 1)
    output_equal, report = int8_compare.compare(data, x[:8])
    assert output_equal and all(r[1] for r in report)
    keep = digits.target >= 5
    x, labels = x[keep][:320], digits.target[keep][:320] - 5
    y = np.eye(5, dtype=np.float32)[labels]
    model = microtrain.convert(data, new_head=5)
    with microtrain.TrainSession(model.to_bytes()) as session:
        # a rate of 0.1: at 0.5 the held-out accuracy swung between 0.36 and 0.71 from epoch
        # to epoch, so a change in the last bits of the sums moved the last one across 0.6
        session.compile(microtrain.optimizers.SGD(0.1), "categorical_crossentropy",
                        batch_size=16)
        before = np.mean(session.infer(x[240:])[0].argmax(1) == labels[240:])
        for _ in range(10):
            for first in range(0, 240, 16):
                session.train_step(x[first:first + 16], y[first:first + 16])
        after = np.mean(session.infer(x[240:])[0].argmax(1) == labels[240:])
    assert after > max(before + 0.3, 0.6), (before, after)
