"""TrainSession: every API point and every mistake a user can make.

The errors a user can make must raise a clear Python exception (RuntimeError,
ValueError, TypeError or MicrotrainError with the C status), never crash.
"""

import numpy as np
import pytest

import microtrain
from microtrain import ops as opcodes
from microtrain import MicrotrainError, layers, losses, metrics, optimizers
from microtrain.nn import image as _image
from microtrain.backend import _native

BATCH = 8


def classifier(seed=0):
    """10 -> 16 relu -> 4 softmax."""
    return microtrain.Sequential([layers.Dense(16, activation="relu"), layers.Dense(4),
                                  layers.Softmax()], input_shape=(10,), seed=seed)


def regressor(seed=0):
    """6 -> 12 relu -> 3 (ops: Dense, ReLU, Dense)."""
    return microtrain.Sequential([layers.Dense(12, activation="relu"), layers.Dense(3)],
                                 input_shape=(6,), seed=seed)


def data(rows, features=10, classes=4, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, features)).astype(np.float32)
    labels = rng.integers(0, classes, rows).astype(np.int32)
    return x, labels, np.eye(classes, dtype=np.float32)[labels]


def compiled_classifier(**compile_args):
    session = microtrain.TrainSession(classifier())
    arguments = {"optimizer": "sgd", "loss": "categorical_crossentropy", "batch_size": BATCH}
    arguments.update(compile_args)
    session.compile(**arguments)
    return session


def numpy_forward(weights, x, final):
    """Reference forward of a two-Dense model with ReLU between."""
    hidden = np.maximum(x @ weights[0].T + weights[1], 0.0)
    z = hidden @ weights[2].T + weights[3]
    if final == "softmax":
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    return z


# ------------------------------------------------------------------ construction


def test_session_from_sequential_bytes_bytearray_and_path(tmp_path):
    model = classifier()
    path = tmp_path / "classifier.mtm"
    model.save(str(path))
    x, _, _ = data(3)
    outputs = []
    for source in (model, model.to_bytes(), bytearray(model.to_bytes()), str(path), path):
        with microtrain.TrainSession(source) as session:
            session.compile("sgd", "categorical_crossentropy", batch_size=4)
            outputs.append(session.infer(x)[0])
    for output in outputs[1:]:
        np.testing.assert_array_equal(output, outputs[0])


def test_session_rejects_wrong_model_argument():
    with pytest.raises(TypeError, match="path, bytes or a microtrain.Sequential"):
        microtrain.TrainSession(12)
    with pytest.raises(ValueError, match="empty"):
        microtrain.TrainSession(b"")
    with pytest.raises(FileNotFoundError):
        microtrain.TrainSession("/nonexistent/model.mtm")


def test_tensorinfo_before_and_after_compile():
    session = microtrain.TrainSession(classifier())
    assert session.get_inputs_tensorinfo() == [
        {"index": 0, "shape": (None, 10), "dtype": np.dtype(np.float32)}]
    assert session.get_outputs_tensorinfo()[0]["shape"] == (None, 4)
    assert session.batch_size is None
    session.compile("sgd", "mse", batch_size=5)
    assert session.get_inputs_tensorinfo()[0]["shape"] == (5, 10)
    assert session.get_outputs_tensorinfo() == [
        {"index": 8, "shape": (5, 4), "dtype": np.dtype(np.float32)}]
    assert session.batch_size == 5


# ------------------------------------------------------------------ compile and plan


def test_compile_accepts_names_and_objects():
    for optimizer in ("sgd", "adam", "adamw", "SGD", optimizers.Adam(learning_rate=0.01)):
        for loss in ("categorical_crossentropy", "mse", "mae", "binary_crossentropy",
                     losses.CategoricalCrossentropy(reduction="sum")):
            with microtrain.TrainSession(classifier()) as session:
                session.compile(optimizer, loss, metrics=["mse"], batch_size=2)
                x, _, y = data(2)
                assert np.isfinite(session.train_step(x, y)["loss"][0])


def test_memory_plan_fields_sum_to_total_and_arena_is_that_size():
    session = compiled_classifier(optimizer="adam")
    plan = session.memory_plan()
    parts = ("metadata_bytes", "weight_bytes", "reference_bytes", "gradient_bytes",
             "optimizer_bytes", "activation_bytes", "activation_grad_bytes", "io_bytes",
             "scratch_bytes")
    assert set(plan) == set(parts) | {"total_bytes", "num_trained_params", "first_trained_op",
                                      "reuse_bytes", "lower_bound_bytes", "fused_update",
                                      "placement_order", "int8_activation_bytes",
                                      "tiled_updates", "weight_tile_bytes",
                                      "int8_trained_layers"}
    assert plan["int8_trained_layers"] == []  # a float model: no int8 layer trains in place
    assert plan["placement_order"] in (0, 1, 2, 3)  # the greedy order the planner kept
    assert sum(plan[p] for p in parts) - plan["reuse_bytes"] == plan["total_bytes"]
    assert plan["lower_bound_bytes"] <= plan["total_bytes"]
    assert all(plan[p] % _native.MT_ARENA_ALIGN == 0 for p in parts)
    weight_bytes = 4 * (16 * 10 + 16 + 4 * 16 + 4)
    assert weight_bytes <= plan["weight_bytes"] < weight_bytes + 4 * 16
    assert plan["gradient_bytes"] == plan["weight_bytes"]  # W [10, 16]: smaller than a tile
    assert plan["tiled_updates"] == plan["weight_tile_bytes"] == 0
    assert plan["optimizer_bytes"] == 2 * plan["weight_bytes"]  # Adam: m and v
    assert plan["reference_bytes"] == 0  # no proximal term
    assert plan["io_bytes"] >= BATCH * 4 * 4
    assert plan["num_trained_params"] == 4 and plan["first_trained_op"] == 0
    assert session._backend._arena.size == plan["total_bytes"]
    assert session._backend._arena.ctypes.data % _native.MT_ARENA_ALIGN == 0


def test_memory_plan_shrinks_when_only_the_last_dense_trains():
    full = compiled_classifier().memory_plan()
    tail = compiled_classifier(num_trainable_ops=2).memory_plan()
    assert tail["num_trained_params"] == 2 and tail["first_trained_op"] == 2
    assert tail["weight_bytes"] < full["weight_bytes"]
    assert tail["total_bytes"] < full["total_bytes"]


def test_compile_rejects_bad_arguments():
    session = microtrain.TrainSession(classifier())
    cases = [
        ({"optimizer": "rmsprop"}, "unknown optimizer 'rmsprop'"),
        ({"loss": "hinge"}, "unknown loss 'hinge'"),
        ({"metrics": ["f1"]}, "unknown metric 'f1'"),
        ({"batch_size": 0}, "batch_size must be a positive integer"),
        ({"batch_size": 2.5}, "batch_size must be a positive integer"),
        ({"batch_size": True}, "batch_size must be a positive integer"),
        ({"num_trainable_ops": -2}, "num_trainable_ops must be an integer >= -1"),
        ({"metrics": ["sparse_categorical_accuracy"]}, "integer labels"),
        ({"metrics": ["mse", metrics.MeanSquaredError(name="mse")]}, "two metrics are named"),
        ({"loss": "sparse_categorical_crossentropy", "metrics": ["categorical_accuracy"]},
         "use 'sparse_categorical_accuracy'|takes integer labels"),
    ]
    for overrides, message in cases:
        arguments = {"optimizer": "sgd", "loss": "categorical_crossentropy", "batch_size": 4}
        arguments.update(overrides)
        with pytest.raises(ValueError, match=message):
            session.compile(**arguments)
    with pytest.raises(ValueError, match="2 classes"):
        one_output = microtrain.Sequential([layers.Dense(1)], input_shape=(3,))
        microtrain.TrainSession(one_output).compile("sgd", "mse",
                                                    metrics=["categorical_accuracy"])


def test_compile_reports_core_rejections_as_microtrain_error():
    session = microtrain.TrainSession(classifier())
    with pytest.raises(MicrotrainError) as error:
        session.compile("sgd", "mse", batch_size=70000)  # the core caps B at 65535
    assert error.value.status == _native.MT_ERR_BAD_ARGUMENT
    assert error.value.function == "mt_plan"
    assert "MT_ERR_BAD_ARGUMENT" in str(error.value)


def test_sparse_loss_needs_a_one_dimensional_output():
    grid = microtrain.Sequential([layers.Softmax()], input_shape=(2, 3))
    with pytest.raises(ValueError, match="1-D output"):
        microtrain.TrainSession(grid).compile("sgd", "sparse_categorical_crossentropy")


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


# ------------------------------------------------------------------ lifetime


def test_close_and_context_manager():
    with compiled_classifier() as session:
        x, _, y = data(2)
        session.train_step(x, y)
        view = session.output_buffer()
        kept = view[:2].copy()
    assert session.closed
    np.testing.assert_array_equal(view[:2], kept)  # handed-out views stay readable
    session.close()  # idempotent
    calls = [
        lambda: session.compile("sgd", "mse"), lambda: session.train_step(x, y),
        lambda: session.eval_step(x, y), lambda: session.infer(x), session.get_weights,
        lambda: session.set_weights([]), session.memory_plan, session.get_inputs_tensorinfo,
        session.get_outputs_tensorinfo, lambda: session.set_learning_rate(0.1),
        session.get_learning_rate, session.get_counters, lambda: session.set_epoch(1),
        session.reset_metrics, session.input_buffer, session.output_buffer,
        session.target_buffer, lambda: session.batch_size, session.__enter__,
    ]
    for call in calls:
        with pytest.raises(RuntimeError, match="closed"):
            call()


def test_close_before_compile():
    session = microtrain.TrainSession(classifier())
    session.close()
    with pytest.raises(RuntimeError, match="closed"):
        session.get_weights()


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
