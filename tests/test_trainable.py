"""compile(trainable=...): all, the last N layers with weights, the last N ops (onert's
num_trainable_ops), layer lists, op lists, bias-only; frozen weights get no gradient or
optimizer bytes and never change."""

import re

import numpy as np
import pytest

import microtrain
from microtrain import layers, trainable
from microtrain.backend import _native


def model():
    """layers: 0 Dense(8, relu) -> ops 0,1; 1 Dense(6, tanh) -> ops 2,3; 2 Dense(3) -> op 4;
    3 Softmax -> op 5. Weights (tensor-table order): W0 b0 W1 b1 W2 b2."""
    return microtrain.Sequential([layers.Dense(8, activation="relu"),
                                  layers.Dense(6, activation="tanh"), layers.Dense(3),
                                  layers.Softmax()], input_shape=(5,), seed=0)


SHAPES = [(8, 5), (8,), (6, 8), (6,), (3, 6), (3,)]


def aligned(nbytes):
    return (nbytes + 15) // 16 * 16


def compiled(source=None, optimizer="adam", **options):
    """Gradients kept (not fused into backward) so the plan holds each trained weight's
    gradient as its own piece."""
    options.setdefault("accumulate_gradients", True)
    session = microtrain.TrainSession(source if source is not None else model())
    session.compile(optimizer, "categorical_crossentropy", batch_size=4, **options)
    return session


def train_a_little(session):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[[0, 1, 2, 1]]
    for _ in range(3):
        session.train_step(x, y)


def trained_positions(session):
    weights_before = [w.copy() for w in session.get_weights()]
    train_a_little(session)
    return [i for i, (a, b) in enumerate(zip(weights_before, session.get_weights()))
            if not np.array_equal(a, b)]


def expected_gradient_bytes(positions):
    return sum(aligned(4 * int(np.prod(SHAPES[p]))) for p in positions)


def expected_adam_bytes(positions):
    """Adam keeps m and v of a tensor in one aligned block."""
    return sum(aligned(2 * 4 * int(np.prod(SHAPES[p]))) for p in positions)


@pytest.mark.parametrize("options, positions", [
    ({}, [0, 1, 2, 3, 4, 5]),
    ({"trainable": "all"}, [0, 1, 2, 3, 4, 5]),
    ({"trainable": -1}, [0, 1, 2, 3, 4, 5]),
    ({"trainable": 2}, [2, 3, 4, 5]),           # the last two layers with weights
    ({"trainable": 1}, [4, 5]),                 # the last Dense (and the Softmax after it)
    ({"trainable": 9}, [0, 1, 2, 3, 4, 5]),     # more than the model has: all
    ({"num_trainable_ops": 2}, [4, 5]),         # onert's: ops 4 (Dense) and 5 (Softmax)
    ({"num_trainable_ops": 4}, [2, 3, 4, 5]),
    ({"trainable": [1]}, [2, 3]),               # layer 1 = ops 2, 3
    ({"trainable": [0, -2]}, [0, 1, 4, 5]),     # first and third layer
    ({"trainable": "bias"}, [1, 3, 5]),
    ({"trainable": "biases_only"}, [1, 3, 5]),
    ({"trainable": 2, "biases_only": True}, [3, 5]),
    ({"num_trainable_ops": 2, "biases_only": True}, [5]),
    ({"trainable": [0], "biases_only": True}, [1]),
])
def test_trained_set_and_its_memory(options, positions):
    session = compiled(**options)
    indices = [index for index, _ in session.model_description()["params"]]
    assert session.trained_tensors() == [indices[p] for p in positions]
    plan = session.memory_plan()
    assert plan["num_trained_params"] == len(positions)
    assert plan["gradient_bytes"] == expected_gradient_bytes(positions)
    assert plan["weight_bytes"] == expected_gradient_bytes(positions)
    assert plan["optimizer_bytes"] == expected_adam_bytes(positions)
    assert trained_positions(session) == positions


def test_freezing_layers_shows_the_saving_in_the_plan():
    everything = compiled().memory_plan()
    last_layer = compiled(trainable=[2]).memory_plan()
    saved = expected_gradient_bytes([0, 1, 2, 3])
    assert everything["gradient_bytes"] - last_layer["gradient_bytes"] == saved
    assert everything["optimizer_bytes"] - last_layer["optimizer_bytes"] == \
        expected_adam_bytes([0, 1, 2, 3])
    assert last_layer["total_bytes"] < everything["total_bytes"]
    assert last_layer["first_trained_op"] == 4 and everything["first_trained_op"] == 0
    # backward stops at the first trained op: no activation gradients for layers 0..1
    assert last_layer["activation_grad_bytes"] < everything["activation_grad_bytes"]


def test_layer_list_in_the_middle_backpropagates_through_later_frozen_layers():
    session = compiled(trainable=[0])
    assert trained_positions(session) == [0, 1]
    assert session.memory_plan()["first_trained_op"] == 0
    assert session.trainable_description() == "ops [0, 1]: layers with weights 0"
    assert compiled(trainable=2).trainable_description() == \
        "last 4 ops: layers with weights 1, 2"


def test_an_image_file_numbers_layers_like_the_model_it_was_saved_from(tmp_path):
    """The image records each op's layer (format version 2), so trainable=[i] means the same
    layers for a model object and for the file it was saved to."""
    path = tmp_path / "model.mtm"
    model().save(str(path))
    session = compiled(str(path), trainable=[1])  # layer 1 = ops 2 (Dense) and 3 (Tanh)
    assert trained_positions(session) == [2, 3]
    assert session.layers == [[0, 1], [2, 3], [4], [5]]
    with pytest.raises(ValueError, match=r"ops 5 \(Softmax\), none of which has trainable "
                                         r"weights.*layer index list; ops with weights: "
                                         r"\[0, 2, 4\]"):
        compiled(str(path), trainable=[3])  # layer 3 is the Softmax: nothing would train
    with pytest.raises(ValueError, match="layer index list"):
        compiled(trainable=[3])


def test_nothing_trainable():
    """0 and [] compile for inference and evaluation; a training step then says that
    nothing is trainable, not only the core's MT_ERR_STATE."""
    x = np.zeros((4, 5), np.float32)
    y = np.eye(3, dtype=np.float32)[[0, 1, 2, 1]]
    for options, given in (({"trainable": 0}, "trainable=0"), ({"trainable": []}, "trainable=[]"),
                           ({"num_trainable_ops": 0}, "num_trainable_ops=0")):
        session = compiled(**options)
        assert session.trained_tensors() == []
        assert session.memory_plan()["gradient_bytes"] == 0
        assert np.isfinite(session.eval_step(x, y)["loss"][0])
        message = "nothing is trainable: the session was compiled with %s" % re.escape(given)
        with pytest.raises(microtrain.MicrotrainError, match=message) as error:
            session.train_step(x, y)
        assert error.value.status == _native.MT_ERR_STATE
        with pytest.raises(microtrain.MicrotrainError, match=message):
            session.train((x, y), epochs=1, verbose=0)
        with pytest.raises(microtrain.MicrotrainError, match=message):
            session.train_step(x, y, update=False)
        assert session.get_counters()["step"] == 0


def test_trainable_argument_errors():
    session = microtrain.TrainSession(model())
    cases = [
        ({"trainable": "some"}, "trainable must be"),
        ({"trainable": -2}, "-1 \\(all\\)"),
        ({"trainable": [4]}, "layer 4, but the model has 4 layers"),
        ({"trainable": [-5]}, "layer -5"),
        ({"trainable": ["0"]}, "as integers"),
        ({"trainable": 1.5}, "trainable must be"),
        ({"trainable": 2, "num_trainable_ops": 2}, "not both"),
    ]
    for options, message in cases:
        with pytest.raises(ValueError, match=message):
            session.compile("sgd", "mse", batch_size=2, **options)


def test_resolve_and_describe_are_pure():
    assert trainable.resolve("all", 3) == (-1, None, 0)
    assert trainable.resolve(None, 3, biases_only=True) == (-1, None, 1)
    assert trainable.resolve([2, 0, 2], 3) == (-1, [1, 0, 1], 0)
    assert trainable.resolve([1], 4, [[0, 1], [2, 3]]) == (-1, [0, 0, 1, 1], 0)
    assert trainable.describe(-1, None, 0) == "all"
    assert trainable.describe(2, None, 1) == "last 2 ops, biases only"
    assert trainable.describe(-1, [0, 0], 0) == "none"


def test_recompiling_with_another_trained_set_keeps_trained_weights():
    session = compiled()
    train_a_little(session)
    trained = session.get_weights()
    session.compile("sgd", "categorical_crossentropy", batch_size=4, trainable=[2])
    for a, b in zip(trained, session.get_weights()):
        np.testing.assert_array_equal(a, b)
    before = session.get_weights()
    train_a_little(session)
    after = session.get_weights()
    for position in range(4):
        np.testing.assert_array_equal(before[position], after[position])
