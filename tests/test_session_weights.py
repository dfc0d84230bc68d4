"""TrainSession's weights, learning rate and counters: get/set (all, the trained subset, by
tensor), recompiling, and the errors that must change nothing."""

import numpy as np
import pytest

import microtrain
from microtrain import optimizers
from microtrain.nn import image as _image

from session_setup import BATCH, classifier, regressor, data, compiled_classifier, numpy_forward


# ------------------------------------------------------------------ weights


def test_get_weights_before_compile_are_the_model_weights():
    model = classifier(seed=9)
    session = microtrain.TrainSession(model)
    for weight, expected in zip(session.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(weight, expected)
    assert [w.shape for w in session.get_weights()] == [(16, 10), (16,), (4, 16), (4,)]


def test_set_get_weights_round_trip_all_trained():
    session = compiled_classifier()
    rng = np.random.default_rng(1)
    new = [rng.standard_normal(w.shape).astype(np.float32) for w in session.get_weights()]
    session.set_weights(new)
    for weight, expected in zip(session.get_weights(), new):
        np.testing.assert_array_equal(weight, expected)
    x, _, _ = data(4)
    np.testing.assert_allclose(session.infer(x)[0], numpy_forward(new, x, "softmax"),
                               rtol=1e-5, atol=1e-6)


def test_set_get_weights_round_trip_with_frozen_layers():
    session = microtrain.TrainSession(regressor())
    session.compile("sgd", "mse", batch_size=4, num_trainable_ops=1)
    plan = session.memory_plan()
    assert plan["num_trained_params"] == 2 and plan["first_trained_op"] == 2
    rng = np.random.default_rng(2)
    new = [rng.standard_normal(w.shape).astype(np.float32) for w in session.get_weights()]
    session.set_weights(new)
    for weight, expected in zip(session.get_weights(), new):
        np.testing.assert_array_equal(weight, expected)
    x = rng.standard_normal((4, 6)).astype(np.float32)
    # the frozen first layer's new weights are used: they live in the session's image
    np.testing.assert_allclose(session.infer(x)[0], numpy_forward(new, x, None), rtol=1e-5,
                               atol=1e-5)
    _image.read_image(session._image)  # its CRC was kept valid
    y = rng.standard_normal((4, 3)).astype(np.float32)
    for _ in range(3):
        session.train_step(x, y)
    after = session.get_weights()
    np.testing.assert_array_equal(after[0], new[0])
    np.testing.assert_array_equal(after[1], new[1])
    assert not np.array_equal(after[2], new[2]) and not np.array_equal(after[3], new[3])


def test_set_weights_before_compile_is_used_by_the_session():
    session = microtrain.TrainSession(classifier())
    new = [np.full(w.shape, 0.01, dtype=np.float32) for w in session.get_weights()]
    session.set_weights(new)
    session.compile("sgd", "categorical_crossentropy", batch_size=2)
    for weight, expected in zip(session.get_weights(), new):
        np.testing.assert_array_equal(weight, expected)


def test_set_weights_errors_change_nothing():
    session = compiled_classifier()
    before = session.get_weights()
    good = [w + 1 for w in before]
    cases = [
        (good[:3], "4 weight tensors, got 3"),
        (good[:3] + [good[3][:2]], r"weight 3 must have shape \(4,\), got \(2,\)"),
        ([good[0].T] + good[1:], r"weight 0 must have shape \(16, 10\)"),
        (good[:2] + [np.full((4, 16), np.inf)] + good[3:], "weight 2 contains NaN"),
        (good[:1] + [np.array(["x"] * 16)] + good[2:], "cannot be converted"),
    ]
    for weights, message in cases:
        with pytest.raises(ValueError, match=message):
            session.set_weights(weights)
        for weight, previous in zip(session.get_weights(), before):
            np.testing.assert_array_equal(weight, previous)


def test_recompile_keeps_trained_weights_and_restarts_counters():
    session = compiled_classifier(optimizer="adam")
    x, _, y = data(BATCH)
    for _ in range(3):
        session.train_step(x, y)
    trained = session.get_weights()
    assert session.get_counters()["step"] == 3
    session.compile("sgd", "categorical_crossentropy", batch_size=4, num_trainable_ops=2)
    assert session.get_counters() == {"step": 0, "epoch": 0}
    for weight, expected in zip(session.get_weights(), trained):
        np.testing.assert_array_equal(weight, expected)
    assert session.input_buffer().shape == (4, 10)


# ------------------------------------------------------------------ learning rate, counters


def test_learning_rate_get_set():
    session = compiled_classifier(optimizer=optimizers.SGD(learning_rate=0.125))
    assert session.get_learning_rate() == 0.125
    session.set_learning_rate(0.5)
    assert session.get_learning_rate() == 0.5
    for bad in (-1e-9, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="learning_rate"):
            session.set_learning_rate(bad)
    assert session.get_learning_rate() == 0.5
    session.set_learning_rate(0.0)  # the end of a linear decay
    assert session.get_learning_rate() == 0.0


def test_learning_rate_change_scales_the_sgd_update():
    x, _, y = data(4)
    deltas = []
    for learning_rate in (0.1, 0.2):
        session = compiled_classifier(optimizer=optimizers.SGD(learning_rate=0.1))
        session.set_learning_rate(learning_rate)
        before = session.get_weights()
        session.train_step(x, y)
        deltas.append(session.get_weights()[3] - before[3])
    np.testing.assert_allclose(deltas[1], 2 * deltas[0], rtol=1e-5, atol=1e-7)


def test_counters_and_epoch():
    session = compiled_classifier()
    x, _, y = data(4)
    session.train_step(x, y)
    session.train_step(x, y)
    session.eval_step(x, y)
    session.infer(x)
    assert session.get_counters() == {"step": 2, "epoch": 0}
    session.set_epoch(7)
    assert session.get_counters() == {"step": 2, "epoch": 7}


def test_set_weights_takes_the_trained_subset_or_a_dict_by_tensor():
    """What a fleet sends back (the trained tensors, keyed t<index>) goes into a session as
    it is: the trained ones in order, or a dict; the frozen weights stay."""
    session = compiled_classifier(trainable=1)  # the last Dense: weights 2 and 3
    before = session.get_weights()
    indices = [index for index, _ in session.model_description()["params"]]
    trained = session.trained_tensors()
    assert trained == indices[2:]
    session.set_weights([before[2] + 1, before[3] + 2])
    after = session.get_weights()
    for position, shift in ((0, 0), (1, 0), (2, 1), (3, 2)):
        np.testing.assert_array_equal(after[position], before[position] + shift)
    session.set_weights({"t%d" % indices[3]: before[3], indices[0]: before[0] * 2})
    after = session.get_weights()
    np.testing.assert_array_equal(after[3], before[3])
    np.testing.assert_array_equal(after[0], before[0] * 2)
    np.testing.assert_array_equal(after[2], before[2] + 1)
    crc = session.weights_crc32()
    for bad, message in (([before[0]], r"4 weight tensors, got 1 arrays; give all of them, "
                                       r"the 2 trained ones"),
                         ({"t99": before[0]}, r"no weight tensor 't99'; its weight tensors "
                                              r"are t\d+, t\d+, t\d+, t\d+"),
                         ({indices[1]: before[0]}, r"weight 1 must have shape")):
        with pytest.raises(ValueError, match=message):
            session.set_weights(bad)
    assert session.weights_crc32() == crc
    fresh = microtrain.TrainSession(classifier())
    with pytest.raises(ValueError, match="trained ones alone are known after compile"):
        fresh.set_weights(before[2:])
    fresh.set_weights({indices[0]: before[0] * 2})  # uncompiled: into the image
    np.testing.assert_array_equal(fresh.get_weights()[0], before[0] * 2)
