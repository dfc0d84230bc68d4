"""TrainSession: opening a model, compiling it, its memory plan and closing it; every
mistake a user can make there.

The errors a user can make must raise a clear Python exception (RuntimeError,
ValueError, TypeError or MicrotrainError with the C status), never crash. The steps are
tests/test_session_steps.py's, the weights and counters tests/test_session_weights.py's.
"""

import numpy as np
import pytest

import microtrain
from microtrain import MicrotrainError, layers, losses, metrics, optimizers
from microtrain.backend import _native

from session_setup import BATCH, classifier, data, compiled_classifier


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
                                      "tiled_updates", "weight_tile_bytes", "over_inputs",
                                      "int8_trained_layers", "row_constants"}
    assert plan["int8_trained_layers"] == []  # a float model: no int8 layer trains in place
    assert plan["row_constants"] == 0  # nor streams int8 rows that could keep their constants
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
