"""``sparse_update(..., calibration=(x, y))`` (tools/sparse_calibration.py): the scheme chosen
by each layer's measured contribution fits the budget by the core's plan (compile's, float
and int8-in-place), is the same for the same rows and seed, takes only layers whose measured
contribution is positive (re-measured here by hand), and a bad calibration set is refused
naming what is wrong with it.
"""

import os

import numpy as np
import pytest

import microtrain
from microtrain import layers

DIGITS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "convert", "fixtures",
                      "int8", "digits_backbone_int8.tflite")
LOSS = "cce"


def cnn():
    """x [6,6,3] -> Conv 3x3x8 relu -> DepthwiseConv 3x3 relu -> Conv 1x1x12 relu ->
    GlobalAveragePool -> Dense 5 -> Softmax; layers with weights 0, 1, 2, 4"""
    return microtrain.Sequential([
        layers.Conv2D(8, 3, padding="same", activation="relu"),
        layers.DepthwiseConv2D(3, padding="same", activation="relu"),
        layers.Conv2D(12, 1, activation="relu"), layers.GlobalAveragePool(), layers.Dense(5),
        layers.Softmax()], input_shape=(6, 6, 3), seed=3)


def rows(n, shape=(6, 6, 3), classes=5, seed=0):
    """a learnable task: each class a pattern, the rows the pattern plus noise"""
    rng = np.random.default_rng(seed)
    patterns = rng.uniform(-1, 1, (classes,) + shape)
    labels = np.arange(n) % classes
    x = (patterns[labels] + 0.5 * rng.standard_normal((n,) + shape)).astype(np.float32)
    return x, np.eye(classes, dtype=np.float32)[labels]


def plan_of(model, trainable, batch_size=2, optimizer="sgd"):
    with microtrain.TrainSession(model) as session:
        return session.plan_memory(optimizer, LOSS, batch_size, trainable)["total_bytes"]


@pytest.mark.parametrize("budget", [9000, 12000, 17500, 20000])
def test_calibrated_scheme_fits_the_budget_and_is_compile_s_plan(budget):
    scheme = microtrain.sparse_update(cnn(), budget, 2, "sgd", LOSS, calibration=rows(20))
    assert scheme.items()[0] in ((4, "all"), (4, "bias"))  # the anchor: the last layer
    assert scheme.total_bytes <= budget
    with microtrain.TrainSession(cnn()) as session:
        session.compile("sgd", LOSS, batch_size=2, trainable=scheme)
        assert session.memory_plan()["total_bytes"] == scheme.total_bytes


def test_calibrated_scheme_of_int8_layers_trained_in_place():
    model = microtrain.convert(DIGITS, new_head=5, train_from="conv_a", int8_train=True)
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 1, (24, 8, 8, 1)).astype(np.float32)
    y = np.eye(5, dtype=np.float32)[np.arange(24) % 5]
    budget = 60000
    scheme = microtrain.sparse_update(model, budget, 4, microtrain.optimizers.SGD(0.1), LOSS,
                                      calibration=(x, y))
    with microtrain.TrainSession(model) as session:
        session.compile(microtrain.optimizers.SGD(0.1), LOSS, batch_size=4, trainable=scheme)
        plan = session.memory_plan()
        assert plan["total_bytes"] == scheme.total_bytes <= budget
        assert plan["int8_trained_layers"]


def test_same_rows_and_seed_give_the_same_scheme():
    first = microtrain.sparse_update(cnn(), 20000, 2, "sgd", LOSS, calibration=rows(20), seed=4)
    again = microtrain.sparse_update(cnn(), 20000, 2, "sgd", LOSS, calibration=rows(20),
                                     seed=np.int64(4), calibration_epochs=np.int32(2))
    assert first == again
    assert first.to_json() == again.to_json()


def held_out_loss(trainable, x, y, seed, epochs=2, batch_size=2):
    """the picker's measurement redone by hand: train on the first half of the seeded
    permutation, the mean loss on the second"""
    order = np.random.default_rng(seed).permutation(len(x))
    half = len(x) // 2
    train, held = order[:half], order[half:]
    with microtrain.TrainSession(cnn()) as session:
        session.compile("sgd", LOSS, batch_size=batch_size, trainable=dict(trainable))
        for _ in range(epochs):
            for k in range(0, half, batch_size):
                session.train_step(x[train[k:k + batch_size]], y[train[k:k + batch_size]])
        losses = [session.eval_step(x[held[k:k + batch_size]], y[held[k:k + batch_size]])
                  ["loss"][0] for k in range(0, len(held), batch_size)]
    return float(np.mean(losses))


def test_every_chosen_layer_lowers_the_held_out_loss_beside_the_anchor():
    x, y = rows(20)
    scheme = microtrain.sparse_update(cnn(), 10 ** 6, 2, "sgd", LOSS, calibration=(x, y))
    anchor = scheme.items()[0]
    assert anchor == (4, "all")  # a budget everything fits: the head whole
    others = scheme.items()[1:]
    assert others, "nothing beyond the head contributed on this task"
    base = held_out_loss([anchor], x, y, seed=0)
    for pair in others:
        assert held_out_loss([anchor, pair], x, y, seed=0) < base, pair


def test_a_budget_for_the_anchor_alone_gives_the_anchor():
    smallest = plan_of(cnn(), {4: "bias"})
    scheme = microtrain.sparse_update(cnn(), smallest, 2, "sgd", LOSS, calibration=rows(20))
    assert scheme.items() == [(4, "bias")]
    with pytest.raises(ValueError, match="the smallest, layer 4's bias, needs %d bytes"
                       % smallest):
        microtrain.sparse_update(cnn(), smallest - 1, 2, "sgd", LOSS, calibration=rows(20))


X, Y = rows(20)
NAN = X.copy()
NAN[3, 0, 0, 0] = np.nan


@pytest.mark.parametrize("calibration, message", [
    (X, r"calibration is a pair \(x, y\)"),
    ((X, Y, Y), r"calibration is a pair \(x, y\)"),
    ((X[:, :, :, :2], Y), r"calibration x rows have shape \(6, 6, 2\); the model's input is "
                          r"\(6, 6, 3\)"),
    ((X, Y[:12]), "calibration x has 20 rows but y has 12"),
    ((X[:3], Y[:3]), r"calibration needs at least 2 x batch_size = 4 rows .* got 3"),
    ((NAN, Y), "calibration x holds NaN or infinite values"),
    ((X, "labels"), "calibration y is not an array of numbers"),
    ((X, Y[:, :3]), "calibration: .*expecteds"),
])
def test_a_bad_calibration_set_is_refused_naming_what_is_wrong(calibration, message):
    with pytest.raises(ValueError, match=message):
        microtrain.sparse_update(cnn(), 20000, 2, "sgd", LOSS, calibration=calibration)


@pytest.mark.parametrize("epochs", [0, -1, 1.5, True])
def test_calibration_epochs_is_a_positive_integer(epochs):
    with pytest.raises(ValueError, match="calibration_epochs is a positive integer"):
        microtrain.sparse_update(cnn(), 20000, 2, "sgd", LOSS, calibration=rows(20),
                                 calibration_epochs=epochs)


@pytest.mark.parametrize("seed", [-1, 0.5, "0", None])
def test_the_seed_is_a_non_negative_integer(seed):
    with pytest.raises(ValueError, match=r"seed \(the calibration rows' permutation\) is an "
                                         r"integer >= 0"):
        microtrain.sparse_update(cnn(), 20000, 2, "sgd", LOSS, calibration=rows(20), seed=seed)
