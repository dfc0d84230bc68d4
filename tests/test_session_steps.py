"""TrainSession's steps: train, eval and infer, on one input or several, their results and
metrics, and every mistake a user can make calling them (a clear Python exception; a numeric
error leaves the session as it was)."""

import numpy as np
import pytest

import microtrain
from microtrain import ops as opcodes
from microtrain import MicrotrainError, layers, metrics, optimizers
from microtrain.nn import image as _image
from microtrain.backend import _native

from session_setup import BATCH, classifier, data, compiled_classifier, numpy_forward


# ------------------------------------------------------------------ steps


def test_train_step_result_and_buffers():
    session = compiled_classifier(metrics=["categorical_accuracy"])
    x, _, y = data(BATCH)
    result = session.train_step(x, y)
    assert set(result) == {"loss", "metrics", "train_time"}
    assert isinstance(result["loss"], list) and len(result["loss"]) == 1
    assert isinstance(result["loss"][0], float) and result["loss"][0] > 0
    assert set(result["metrics"]) == {"categorical_accuracy"}
    assert 0.0 <= result["metrics"]["categorical_accuracy"] <= 1.0
    assert result["train_time"] >= 0.0
    # the rows went straight into the arena's buffers
    np.testing.assert_array_equal(session.input_buffer(), x)
    np.testing.assert_array_equal(session.target_buffer(), y)
    assert session.input_buffer().base is not None  # a view, not a copy
    with pytest.raises(ValueError):
        session.output_buffer()[0, 0] = 1.0  # outputs are read-only


def test_eval_step_reports_loss_without_updating():
    session = compiled_classifier(metrics=["categorical_accuracy"])
    x, _, y = data(BATCH)
    before = session.get_weights()
    evaluated = session.eval_step(x, y)
    assert set(evaluated) == {"loss", "metrics", "eval_time"}
    for weight, previous in zip(session.get_weights(), before):
        np.testing.assert_array_equal(weight, previous)
    trained = session.train_step(x, y)
    assert trained["loss"] == evaluated["loss"]  # same forward before the update
    assert session.eval_step(x, y)["loss"][0] < evaluated["loss"][0]


def test_infer_matches_a_numpy_forward_and_eval_outputs():
    session = compiled_classifier()
    x, _, y = data(5)
    outputs = session.infer(x)
    assert isinstance(outputs, list) and len(outputs) == 1
    assert outputs[0].shape == (5, 4) and outputs[0].dtype == np.float32
    expected = numpy_forward(session.get_weights(), x.astype(np.float64), "softmax")
    np.testing.assert_allclose(outputs[0], expected, rtol=1e-5, atol=1e-6)
    session.eval_step(x, y)
    np.testing.assert_array_equal(session.output_buffer()[:5], outputs[0])
    outputs[0][:] = 0  # a copy: the arena is untouched
    assert session.output_buffer()[0].sum() > 0.99


def test_partial_batch_equals_a_smaller_batch_bitwise():
    x, _, y = data(5, seed=3)
    padded = compiled_classifier(optimizer=optimizers.Adam(learning_rate=0.01))
    exact = microtrain.TrainSession(classifier())
    exact.compile(optimizers.Adam(learning_rate=0.01), "categorical_crossentropy",
                  batch_size=5)
    for step in range(4):
        padded.input_buffer()[5:] = np.nan  # padding rows must not matter at all
        padded_loss = padded.train_step(x, y)["loss"]
        assert padded_loss == exact.train_step(x, y)["loss"], "step %d" % step
    for a, b in zip(padded.get_weights(), exact.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert padded.eval_step(x[:3], y[:3])["loss"] == exact.eval_step(x[:3], y[:3])["loss"]
    np.testing.assert_array_equal(padded.infer(x)[0], exact.infer(x)[0])


def test_input_dtypes_are_converted_when_safe():
    session = compiled_classifier()
    x, _, y = data(4)
    reference = session.eval_step(x, y)["loss"]
    assert session.eval_step(x.astype(np.float64), y.astype(np.float64))["loss"] == reference
    assert session.eval_step(x.tolist(), y.tolist())["loss"] == reference
    integers = np.arange(40).reshape(4, 10) % 3
    np.testing.assert_array_equal(session.infer(integers)[0],
                                  session.infer(integers.astype(np.float32))[0])


def test_step_argument_errors():
    session = compiled_classifier()
    x, labels, y = data(BATCH + 1)
    cases = [
        (lambda: session.train_step(x, y), "more than the batch size 8"),
        (lambda: session.eval_step(x, y), "more than the batch size 8"),
        (lambda: session.train_step(x[:0], y[:0]), "no rows"),
        (lambda: session.train_step(x[:4, :9], y[:4]), r"shape \(n, 10\), got \(4, 9\)"),
        (lambda: session.train_step(x[0], y[0]), r"shape \(n, 10\), got \(10,\)"),
        (lambda: session.train_step(x[:4], y[:4, :3]), r"shape \(n, 4\), got \(4, 3\)"),
        (lambda: session.train_step(x[:4], y[:3]), "4 input rows but 3 expected rows"),
        (lambda: session.train_step(x[:4].astype(np.complex64), y[:4]), "complex64"),
        (lambda: session.train_step(np.full((4, 10), "a"), y[:4]), "cannot be converted"),
        (lambda: session.train_step(x[:4], np.array([[None] * 4] * 4)), "object"),
        (lambda: session.train_step([x[:4], x[:4]], y[:4]), "1 input"),
        (lambda: session.train_step(x[:4], [y[:4], y[:4]]), "output 0 only"),
    ]
    for call, message in cases:
        with pytest.raises(ValueError, match=message):
            call()
    outputs, = session.infer(x)  # inference takes any number of rows, in batches of B
    assert outputs.shape == (BATCH + 1, 4)
    np.testing.assert_array_equal(outputs[:BATCH], session.infer(x[:BATCH])[0])


def test_sparse_label_errors():
    session = compiled_classifier(loss="sparse_categorical_crossentropy")
    x, labels, _ = data(4)
    assert np.isfinite(session.train_step(x, labels)["loss"][0])
    assert np.isfinite(session.train_step(x, labels[:, None])["loss"][0])
    assert np.isfinite(session.train_step(x, labels.astype(np.uint8))["loss"][0])
    with pytest.raises(ValueError, match="integer labels"):
        session.train_step(x, labels.astype(np.float32))
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        session.train_step(x, np.array([0, 1, 4, 2]))
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        session.train_step(x, np.array([0, -1, 3, 2]))
    with pytest.raises(ValueError, match="4 input rows but 3 labels"):
        session.train_step(x, labels[:3])
    with pytest.raises(ValueError, match=r"shape \(n,\) or \(n, 1\)"):
        session.train_step(x, np.zeros((4, 2), dtype=np.int32))


def test_steps_before_compile_raise_runtime_error():
    session = microtrain.TrainSession(classifier())
    x, _, y = data(2)
    calls = {
        "train_step": lambda: session.train_step(x, y),
        "eval_step": lambda: session.eval_step(x, y),
        "memory_plan": session.memory_plan,
        "set_learning_rate": lambda: session.set_learning_rate(0.1),
        "get_learning_rate": session.get_learning_rate,
        "get_counters": session.get_counters,
        "input_buffer": session.input_buffer,
    }
    for name, call in calls.items():
        with pytest.raises(RuntimeError, match=r"call compile\(\) before %s" % name):
            call()


def check_numeric_error_leaves_session_unchanged(session, x, y):
    before = session.get_weights()
    with pytest.raises(MicrotrainError) as error:
        session.train_step(x, y)
    assert error.value.status == _native.MT_ERR_NUMERIC
    assert "MT_ERR_NUMERIC" in str(error.value)
    for weight, previous in zip(session.get_weights(), before):
        np.testing.assert_array_equal(weight, previous)
    assert session.get_counters()["step"] == 0


def test_nan_target_raises_numeric_error_and_leaves_weights():
    session = compiled_classifier()
    x, _, y = data(4)
    y[1, 1] = np.nan
    check_numeric_error_leaves_session_unchanged(session, x, y)
    y[1, 1] = 0.0
    assert np.isfinite(session.train_step(x, y)["loss"][0])  # the session still works


def test_overflowing_input_raises_numeric_error_and_leaves_weights():
    session = compiled_classifier()
    x, _, y = data(4)
    x[0, :] = 3e38
    check_numeric_error_leaves_session_unchanged(session, x, y)


def test_nan_input_raises_numeric_error_and_leaves_weights():
    """A NaN in an input row must not pass silently: the loss of that row is NaN.
    (Core bug at the time of writing: ReLU maps NaN to 0, the step reports a finite
    loss and MT_OK, and dW1 = dY^T X turns the first layer's weights into NaN.)"""
    session = compiled_classifier()
    x, _, y = data(4)
    x[2, 3] = np.nan
    check_numeric_error_leaves_session_unchanged(session, x, y)


def test_nothing_trainable_allows_inference_only():
    session = compiled_classifier(num_trainable_ops=0)
    x, _, y = data(3)
    assert session.memory_plan()["num_trained_params"] == 0
    assert session.infer(x)[0].shape == (3, 4)
    assert np.isfinite(session.eval_step(x, y)["loss"][0])
    with pytest.raises(MicrotrainError) as error:
        session.train_step(x, y)
    assert error.value.status == _native.MT_ERR_STATE


# ------------------------------------------------------------------ metrics in steps


def test_metrics_per_step_accumulated_and_separate_for_eval():
    session = compiled_classifier(metrics=["categorical_accuracy", "mse"])
    x, labels, y = data(BATCH, seed=5)
    session.set_weights([np.zeros_like(w) for w in session.get_weights()])
    # all-zero weights: uniform outputs, argmax 0
    result = session.eval_step(x, y)["metrics"]
    assert result["categorical_accuracy"] == pytest.approx(np.mean(labels == 0))
    assert result["mse"] == pytest.approx(np.mean((0.25 - y) ** 2), rel=1e-6)
    first = session.eval_step(x[:4], y[:4], reset_metrics=False)["metrics"]
    both = session.eval_step(x[4:], y[4:], reset_metrics=False)["metrics"]
    assert first["categorical_accuracy"] == pytest.approx(np.mean(labels[:4] == 0))
    assert both["categorical_accuracy"] == pytest.approx(
        (np.sum(labels[:4] == 0) + np.sum(labels == 0) + np.sum(labels[4:] == 0)) / 16.0)
    session.reset_metrics()
    trained = session.train_step(x[:2], y[:2])["metrics"]
    assert trained["categorical_accuracy"] == pytest.approx(np.mean(labels[:2] == 0))
    after_reset = session.eval_step(x[:2], y[:2], reset_metrics=False)["metrics"]
    assert set(after_reset) == {"categorical_accuracy", "mse"}


def test_metric_objects_are_used_for_training_metrics():
    accuracy = metrics.SparseCategoricalAccuracy(name="acc")
    session = compiled_classifier(loss="sparse_categorical_crossentropy", metrics=[accuracy])
    x, labels, _ = data(BATCH)
    result = session.train_step(x, labels)["metrics"]
    assert set(result) == {"acc"} and result["acc"] == accuracy.result()
    assert accuracy._count == BATCH


# ------------------------------------------------------------------ multi-input models


def two_tower_image():
    """Two inputs, each through its own Dense; output 0 = tower A, output 1 = tower B."""
    rng = np.random.default_rng(4)
    const = _image.FLAG_CONST | _image.FLAG_TRAINABLE
    tensors = [
        _image.TensorSpec((3,), _image.FLAG_INPUT),                                      # 0
        _image.TensorSpec((5,), _image.FLAG_INPUT),                                      # 1
        _image.TensorSpec((2, 3), const, data=rng.standard_normal((2, 3))),              # 2
        _image.TensorSpec((2,), const, data=rng.standard_normal(2)),                     # 3
        _image.TensorSpec((2,), _image.FLAG_OUTPUT),                                     # 4
        _image.TensorSpec((4, 5), const, data=rng.standard_normal((4, 5))),              # 5
        _image.TensorSpec((4,), const, data=rng.standard_normal(4)),                     # 6
        _image.TensorSpec((4,), _image.FLAG_OUTPUT),                                     # 7
    ]
    ops = [_image.OpSpec(opcodes.DENSE, [0, 2, 3], [4]),
           _image.OpSpec(opcodes.DENSE, [1, 5, 6], [7])]
    return _image.write_image(tensors, ops, [0, 1], [4, 7])


def test_multi_input_model():
    session = microtrain.TrainSession(two_tower_image())
    assert [i["shape"] for i in session.get_inputs_tensorinfo()] == [(None, 3), (None, 5)]
    session.compile("sgd", "mse", batch_size=4)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3)).astype(np.float32)
    b = rng.standard_normal((3, 5)).astype(np.float32)
    weights = session.get_weights()
    out_a, out_b = session.infer([a, b])
    np.testing.assert_allclose(out_a, a @ weights[0].T + weights[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out_b, b @ weights[2].T + weights[3], rtol=1e-5, atol=1e-6)
    loss = session.train_step((a, b), np.zeros((3, 2), np.float32))["loss"][0]
    assert loss == pytest.approx(np.mean(out_a.astype(np.float64) ** 2), rel=1e-5)
    with pytest.raises(ValueError, match="2 input"):
        session.infer(a)
    with pytest.raises(ValueError, match="input 1 has 2 rows, input 0 has 3"):
        session.infer([a, b[:2]])
    with pytest.raises(ValueError, match=r"input 1 must have shape \(n, 5\)"):
        session.infer([a, a])


def test_flat_rows_where_the_input_has_several_dimensions():
    """The board and the CLI read flat rows [N, 150]; a session whose input is (10, 5, 3)
    takes them too (reshaped, a view), with the bits of the shaped rows, and says so when
    neither layout fits."""
    def session():
        model = microtrain.Sequential([layers.Conv2D(4, 3, activation="relu"),
                                       layers.Flatten(), layers.Dense(3), layers.Softmax()],
                                      input_shape=(10, 5, 3), seed=0)
        s = microtrain.TrainSession(model)
        s.compile("adam", "categorical_crossentropy", batch_size=8)
        return s

    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 10, 5, 3)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 8)]
    shaped, flat = session(), session()
    for _ in range(3):
        assert shaped.train_step(x, y)["loss"] == flat.train_step(x.reshape(8, 150), y)["loss"]
    assert shaped.weights_crc32() == flat.weights_crc32()
    np.testing.assert_array_equal(shaped.predict(x), flat.predict(x.reshape(8, 150)))
    assert flat.evaluate(x.reshape(8, 150), y) == shaped.evaluate(x, y)
    with pytest.raises(ValueError, match=r"input 0 must have shape \(n, 10, 5, 3\) or flat rows "
                                         r"\(n, 150\), got \(8, 149\)"):
        flat.train_step(x.reshape(8, 150)[:, :149], y)
