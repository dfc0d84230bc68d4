"""The Python facade's bad-input matrix (issue 6), lifetime: every method of a closed session
raises RuntimeError, views handed out before close() stay valid memory, nothing works
before compile(), and a failed compile() keeps the working session (bad_input_setup.py says
what every mistake must do).
"""

import os

import numpy as np
import pytest

import microtrain
from microtrain import MicrotrainError
from microtrain.schedules import LinearLRScheduler

from bad_input_setup import assert_same_weights, data, model, session


# ------------------------------------------------------------------ lifetime


def closed_session_calls(s, x, y, path):
    """Every public method and property of TrainSession, with plausible arguments."""
    return {
        "add_property": lambda: s.add_property("a", 1),
        "batch_size": lambda: s.batch_size,
        "checkpoint_bytes": s.checkpoint_bytes,
        "compile": lambda: s.compile("sgd", "mse", batch_size=2),
        "eval_step": lambda: s.eval_step(x, y),
        "evaluate": lambda: s.evaluate((x, y)),
        "export_model_for_inference": lambda: s.export_model_for_inference(path),
        "get_counters": s.get_counters,
        "config": lambda: s.config,
        "eval_metrics": lambda: s.eval_metrics,
        "layers": lambda: s.layers,
        "loss": lambda: s.loss,
        "lr_scheduler": lambda: s.lr_scheduler,
        "model_description": s.model_description,
        "model_image": lambda: s.model_image,
        "train_metrics": lambda: s.train_metrics,
        "weights_crc32": s.weights_crc32,
        "get_inputs_tensorinfo": s.get_inputs_tensorinfo,
        "get_learning_rate": s.get_learning_rate,
        "get_outputs_tensorinfo": s.get_outputs_tensorinfo,
        "get_property": lambda: s.get_property("a"),
        "get_weights": s.get_weights,
        "infer": lambda: s.infer(x),
        "input_buffer": s.input_buffer,
        "lazy_reset_grad": s.lazy_reset_grad,
        "load_checkpoint": lambda: s.load_checkpoint(path),
        "memory_plan": s.memory_plan,
        "numeric_errors": s.numeric_errors,
        "optimizer_step": s.optimizer_step,
        "plan_memory": s.plan_memory,
        "output_buffer": s.output_buffer,
        "predict": lambda: s.predict(x),
        "properties": lambda: s.properties,
        "register_lr_scheduler": lambda: s.register_lr_scheduler(LinearLRScheduler(1, 2)),
        "remove_property": lambda: s.remove_property("a"),
        "reset_metrics": s.reset_metrics,
        "save_checkpoint": lambda: s.save_checkpoint(path),
        "scheduler_step": s.scheduler_step,
        "set_epoch": lambda: s.set_epoch(1),
        "set_learning_rate": lambda: s.set_learning_rate(0.1),
        "set_reference": s.set_reference,
        "set_seed": lambda: s.set_seed(1),
        "set_weights": lambda: s.set_weights([]),
        "target_buffer": s.target_buffer,
        "timings": lambda: s.timings,
        "train": lambda: s.train((x, y), verbose=0),
        "train_step": lambda: s.train_step(x, y),
        "trainable_description": s.trainable_description,
        "trained_tensors": s.trained_tensors,
        "__enter__": s.__enter__,
    }


@pytest.mark.parametrize("compiled", [True, False])
def test_every_method_of_a_closed_session_raises_runtime_error(tmp_path, compiled):
    s = session(accumulate_gradients=True) if compiled else microtrain.TrainSession(model())
    x, _, y = data()
    if compiled:
        s.train_step(x, y)
        s.save_checkpoint(str(tmp_path / "ck"))  # so load_checkpoint would find a file
    s.close()
    s.close()  # idempotent
    assert s.closed
    calls = closed_session_calls(s, x, y, str(tmp_path / "ck"))
    public = {name for name in dir(microtrain.TrainSession) if not name.startswith("_")}
    assert public - {"close", "closed"} == set(calls) - {"__enter__"}, \
        "a public method is missing from this table"
    for name, call in calls.items():
        with pytest.raises(RuntimeError, match="this TrainSession is closed"):
            call()


def test_views_handed_out_before_close_stay_valid_memory(tmp_path):
    s = session()
    x, _, y = data()
    s.train_step(x, y)
    inputs, outputs = s.input_buffer(), s.output_buffer()
    s.close()
    inputs[...] = 1.0  # the arena array lives on with the view: no write to freed memory
    assert np.isfinite(outputs).all()


def test_use_before_compile(tmp_path):
    s = microtrain.TrainSession(model())
    x, _, y = data()
    needs_compile = ["checkpoint_bytes", "eval_step", "evaluate", "export_model_for_inference",
                     "get_counters", "get_learning_rate", "input_buffer",
                     "lazy_reset_grad", "load_checkpoint", "memory_plan", "numeric_errors",
                     "optimizer_step", "output_buffer", "register_lr_scheduler",
                     "save_checkpoint", "scheduler_step", "set_epoch", "set_learning_rate",
                     "target_buffer", "train", "train_step", "trainable_description",
                     "trained_tensors"]
    calls = closed_session_calls(s, x, y, str(tmp_path / "ck"))
    for name in needs_compile:
        with pytest.raises(RuntimeError, match=r"call compile\(\) before"):
            calls[name]()
    assert not os.path.exists(tmp_path / "ck")
    for name in ("add_property", "get_property", "properties", "remove_property",
                 "get_inputs_tensorinfo", "get_outputs_tensorinfo", "get_weights",
                 "batch_size", "timings", "set_seed", "weights_crc32", "model_description",
                 "model_image", "layers", "config", "loss", "train_metrics", "eval_metrics",
                 "lr_scheduler"):
        calls[name]()  # work without a C session
    assert s.batch_size is None
    for name in ("infer", "predict"):  # inference binds an inference-only session itself
        calls[name]()
        with pytest.raises(RuntimeError, match="inference only"):
            s.train_step(x, y)
    assert s.batch_size == 16


def test_compile_twice_and_a_failed_compile_keeps_the_working_session():
    s = session()
    x, _, y = data()
    s.train_step(x, y)
    trained = s.get_weights()
    s.compile("sgd", "mse", batch_size=4)  # rebinds: weights kept, counters restart
    assert_same_weights(trained, s.get_weights())
    assert s.get_counters()["step"] == 0 and s.batch_size == 4
    for bad, error in (({"batch_size": 0}, ValueError), ({"loss": "hinge"}, ValueError),
                       ({"optimizer": "rmsprop"}, ValueError), ({"trainable": [99]}, ValueError),
                       ({"batch_size": 100000}, MicrotrainError)):
        arguments = {"optimizer": "sgd", "loss": "mse", "batch_size": 4}
        arguments.update(bad)
        with pytest.raises(error):
            s.compile(**arguments)
        assert s.batch_size == 4  # the previous session is still bound and works
        assert np.isfinite(s.train_step(x[:4], y[:4])["loss"][0])
