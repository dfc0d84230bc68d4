"""microtrain.Sequential and microtrain.layers: building images and rejecting bad input."""

import numpy as np
import pytest

import microtrain
from microtrain import ops as opcodes
from microtrain import layers
from microtrain.nn import image as _image


def test_dense_activation_is_a_separate_op_after_the_dense():
    for activation, op_type in (("relu", opcodes.RELU), ("sigmoid", opcodes.SIGMOID),
                                ("tanh", opcodes.TANH), ("softmax", opcodes.SOFTMAX),
                                ("ReLU", opcodes.RELU)):
        model = microtrain.Sequential([layers.Dense(3, activation=activation)],
                                      input_shape=(4,), seed=0)
        ops = _image.read_image(model.to_bytes()).ops
        assert [op.op_type for op in ops] == [opcodes.DENSE, op_type]
        assert ops[1].inputs == ops[0].outputs


def test_activation_layers_emit_their_ops():
    model = microtrain.Sequential([layers.Dense(5), layers.ReLU(), layers.Sigmoid(),
                                   layers.Tanh(), layers.Softmax()], input_shape=(2,), seed=0)
    assert [op.op_type for op in _image.read_image(model.to_bytes()).ops] == [
        opcodes.DENSE, opcodes.RELU, opcodes.SIGMOID, opcodes.TANH, opcodes.SOFTMAX]
    assert model.output_shape == (5,)


def test_explicit_weights_are_written_and_other_tensors_drawn():
    weight = np.arange(12, dtype=np.float64).reshape(3, 4) / 10
    model = microtrain.Sequential([layers.Dense(3, weight=weight), layers.Dense(2)],
                                  input_shape=(4,), seed=5)
    weights = model.get_weights()
    np.testing.assert_array_equal(weights[0], weight.astype(np.float32))
    assert weights[0].dtype == np.float32
    # explicit tensors consume no draws: the rest equals a model drawing only those
    rng = np.random.default_rng(5)
    bias = rng.uniform(-0.5, 0.5, size=(3,)).astype(np.float32)
    np.testing.assert_array_equal(weights[1], bias)
    image = _image.read_image(model.to_bytes())
    for tensor_index, expected in zip(image.const_f32_tensors(), weights):
        np.testing.assert_array_equal(image.tensor_data(tensor_index), expected)


def test_flattened_multi_dimensional_input():
    model = microtrain.Sequential([layers.Dense(3)], input_shape=(2, 4), seed=0)
    assert model.get_weights()[0].shape == (3, 8)
    assert model.input_shape == (2, 4)


def test_save_writes_the_image(tmp_path):
    model = microtrain.Sequential([layers.Dense(3)], input_shape=4, seed=0)
    path = tmp_path / "m.mtm"
    model.save(str(path))
    assert path.read_bytes() == model.to_bytes()


def test_layer_errors():
    cases = [
        (lambda: layers.Dense(0), "positive integer"),
        (lambda: layers.Dense(2.5), "positive integer"),
        (lambda: layers.Dense(True), "positive integer"),
        (lambda: layers.Dense(3, activation="gelu"), "unknown activation 'gelu'"),
        (lambda: layers.Dense(3, activation=max), "unknown activation"),
        (lambda: layers.Dense(3, weight=np.zeros((4, 2))), r"\[units=3, in_features\]"),
        (lambda: layers.Dense(3, weight=np.zeros(3)), r"\[units=3, in_features\]"),
        (lambda: layers.Dense(3, bias=np.zeros(4)), r"bias must have shape \[3\]"),
        (lambda: layers.Dense(3, bias=np.zeros(3), use_bias=False), "use_bias=False"),
        (lambda: layers.Dense(3, weight=np.full((3, 2), np.nan)), "NaN"),
        (lambda: layers.Dense(3, weight=np.full((3, 2), "a")), "real numbers"),
    ]
    for make, message in cases:
        with pytest.raises(ValueError, match=message):
            make()


def test_sequential_errors():
    cases = [
        (lambda: microtrain.Sequential([], input_shape=(3,)), "at least one layer"),
        (lambda: microtrain.Sequential([layers.Dense(2)], input_shape=(0,)), "positive"),
        (lambda: microtrain.Sequential([layers.Dense(2)], input_shape=(1, 2, 3, 4, 5)),
         "1..4"),
        (lambda: microtrain.Sequential([layers.Dense(2)], input_shape="abc"), "input_shape"),
        (lambda: microtrain.Sequential([layers.Dense(2)], input_shape=None), "input_shape"),
        (lambda: microtrain.Sequential(["relu"], input_shape=(3,)), "not a microtrain.layers"),
        (lambda: microtrain.Sequential([layers.Dense(2, weight=np.zeros((2, 5)))],
                                       input_shape=(3,)),
         r"layer 0 .*\[units, in_features\] = \[2, 3\], got \(2, 5\)"),
    ]
    for make, message in cases:
        with pytest.raises(ValueError, match=message):
            make()
