"""One compile() validates the image once and plans it once: Session plans, the backend opens
from that plan (mt_session_init_from_plan, which neither validates nor sizes again: counted in
C by tests/core/test_plan_value.c), and nothing else reads the whole image. Counted here at the
ctypes bindings, whose every call goes through the module attributes of backend._native."""

import numpy as np
import pytest

import microtrain
from microtrain import layers
from microtrain.backend import _native

# the calls that validate the image they are given (each one CRC pass over every byte)
VALIDATING = ("mt_model_check", "mt_model_tensor", "mt_model_tensors", "mt_model_op",
              "mt_model_ops", "mt_model_io", "mt_model_diagnose", "mt_plan", "mt_plan_buffers",
              "mt_session_init")


@pytest.fixture
def calls(monkeypatch):
    """{binding name: calls} of the validating bindings and of mt_session_init_from_plan."""
    counted = {}
    for name in VALIDATING + ("mt_session_init_from_plan",):
        binding = getattr(_native, name)

        def counting(*args, _name=name, _binding=binding):
            counted[_name] = counted.get(_name, 0) + 1
            return _binding(*args)

        monkeypatch.setattr(_native, name, counting)
    return counted


def _model():
    return microtrain.Sequential([layers.Dense(8, activation="relu"),
                                  layers.Dense(3, activation="softmax")],
                                 input_shape=(5,), seed=0)


def test_one_compile_validates_the_image_once_and_plans_once(calls):
    session = microtrain.TrainSession(_model())
    calls.clear()  # describing the model at construction is not the compile's
    session.compile("adam", "categorical_crossentropy", batch_size=4)
    assert calls == {"mt_plan": 1, "mt_session_init_from_plan": 1}

    # compiling again: the trained weights exported, planned once, opened from the plan
    rng = np.random.default_rng(0)
    session.train_step(rng.standard_normal((4, 5)).astype(np.float32),
                       np.eye(3, dtype=np.float32)[[0, 1, 2, 0]])
    weights = session.get_weights()
    calls.clear()
    session.compile("sgd", "mse", batch_size=2)
    assert calls == {"mt_plan": 1, "mt_session_init_from_plan": 1}
    assert all(np.array_equal(a, b) for a, b in zip(weights, session.get_weights()))

    # on the caller's arena
    arena = bytearray(session.memory_plan()["total_bytes"] + 15)
    calls.clear()
    session.compile("sgd", "mse", batch_size=2, arena=arena)
    assert calls == {"mt_plan": 1, "mt_session_init_from_plan": 1}
    session.close()


def test_a_refused_plan_opens_nothing_and_diagnoses_once(calls):
    session = microtrain.TrainSession(_model())
    calls.clear()
    with pytest.raises(microtrain.MicrotrainError, match="bad argument"):
        session.compile("sgd", "mse", batch_size=70000)  # past MT_MAX_BATCH_SIZE
    # the refusal: mt_plan, and mt_model_diagnose to say where; no session opened
    assert calls == {"mt_plan": 1, "mt_model_diagnose": 1}
    session.close()
