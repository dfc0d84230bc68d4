"""Learning-rate schedules: ONNX Runtime's linear schedule bit for bit, cosine, step decay,
and how a session registers and steps them."""

import math

import numpy as np
import pytest

import microtrain
from microtrain import DataLoader, layers, schedules


def ort_linear_rate(initial_lr, warmup, total, step):
    """ONNX Runtime's LinearLRScheduler in float32, as its C++ computes it."""
    f = np.float32
    if f(step) < f(warmup):
        factor = f(step) / max(f(1), f(warmup))
    else:
        factor = max(f(0), (f(total) - f(step)) / max(f(1), f(total) - f(warmup)))
    return float(f(initial_lr) * f(factor))


def test_linear_schedule_matches_onnx_runtime_in_float32():
    for warmup, total, initial in ((0, 10, 0.1), (3, 10, 0.1), (4, 7, 1e-3), (5, 5, 0.3),
                                   (0, 0, 0.05), (2, 1000, 0.0123)):
        scheduler = schedules.LinearLRScheduler(warmup, total, initial_lr=initial)
        for step in range(0, total + 4):
            assert scheduler.learning_rate(step) == ort_linear_rate(initial, warmup, total, step), \
                (warmup, total, step)
    scheduler = schedules.LinearLRScheduler(2, 6, initial_lr=1.0)
    assert [scheduler.learning_rate(s) for s in range(8)] == [0.0, 0.5, 1.0, 0.75, 0.5, 0.25,
                                                              0.0, 0.0]


def test_cosine_and_step_schedules():
    cosine = schedules.CosineLRScheduler(2, 10, initial_lr=1.0, min_lr=0.1)
    assert cosine.learning_rate(0) == 0.0 and cosine.learning_rate(1) == 0.5
    assert cosine.learning_rate(2) == 1.0
    assert cosine.learning_rate(6) == pytest.approx(0.1 + 0.9 * 0.5, rel=1e-6)
    assert cosine.learning_rate(10) == pytest.approx(0.1, rel=1e-6)
    assert cosine.learning_rate(50) == pytest.approx(0.1, rel=1e-6)
    rates = [cosine.learning_rate(s) for s in range(2, 11)]
    assert all(a >= b for a, b in zip(rates, rates[1:]))
    for s in range(2, 11):
        expected = 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * (s - 2) / 8))
        assert cosine.learning_rate(s) == pytest.approx(expected, rel=1e-6)

    step = schedules.StepLRScheduler(3, gamma=0.5, initial_lr=0.8)
    assert [step.learning_rate(s) for s in range(8)] == pytest.approx(
        [0.8, 0.8, 0.8, 0.4, 0.4, 0.4, 0.2, 0.2])


def test_schedule_argument_errors():
    with pytest.raises(ValueError, match="exceeds"):
        schedules.LinearLRScheduler(5, 3)
    with pytest.raises(ValueError, match="warmup_step_count"):
        schedules.LinearLRScheduler(-1, 3)
    with pytest.raises(ValueError, match="step_size"):
        schedules.StepLRScheduler(0)
    with pytest.raises(ValueError, match="initial_lr"):
        schedules.CosineLRScheduler(0, 3, initial_lr=float("nan"))
    with pytest.raises(ValueError, match="no initial_lr"):
        schedules.LinearLRScheduler(0, 3).learning_rate(1)


def make_session(lr=0.1):
    model = microtrain.Sequential([layers.Dense(3)], input_shape=(4,), seed=0)
    session = microtrain.TrainSession(model)
    session.compile(microtrain.optimizers.SGD(learning_rate=lr), "mse", batch_size=4)
    return session


def test_register_sets_initial_rate_and_scheduler_step_follows_the_step_counter():
    session = make_session(lr=0.1)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 4)).astype(np.float32)
    y = rng.standard_normal((4, 3)).astype(np.float32)
    scheduler = schedules.LinearLRScheduler(2, 6)  # initial_lr taken from the session
    session.register_lr_scheduler(scheduler)
    assert scheduler.initial_lr == pytest.approx(0.1)
    assert session.get_learning_rate() == np.float32(0.1)  # ORT: registering sets initial_lr
    seen = []
    for _ in range(5):
        session.train_step(x, y)
        seen.append(session.scheduler_step())
        assert session.get_learning_rate() == np.float32(seen[-1])
    assert seen == [ort_linear_rate(scheduler.initial_lr, 2, 6, s) for s in range(1, 6)]


def test_a_zero_rate_at_the_end_of_a_schedule_stops_learning():
    session = make_session(lr=0.1)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 4)).astype(np.float32)
    y = rng.standard_normal((4, 3)).astype(np.float32)
    session.register_lr_scheduler(schedules.LinearLRScheduler(0, 1))
    session.train_step(x, y)
    assert session.scheduler_step() == 0.0
    assert session.get_learning_rate() < 1e-37
    before = session.get_weights()
    session.train_step(x, y)
    for a, b in zip(before, session.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_scheduler_errors():
    session = make_session()
    with pytest.raises(RuntimeError, match="register_lr_scheduler"):
        session.scheduler_step()
    with pytest.raises(TypeError, match="LRScheduler"):
        session.register_lr_scheduler(0.5)


def test_train_steps_the_scheduler_after_every_optimizer_step():
    session = make_session(lr=0.2)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((10, 4)).astype(np.float32)
    y = rng.standard_normal((10, 3)).astype(np.float32)
    scheduler = schedules.LinearLRScheduler(1, 9, initial_lr=0.2)
    history = session.train(DataLoader(x, y, batch_size=4), epochs=3, verbose=0,
                            scheduler=scheduler)
    assert session.get_counters()["step"] == 9
    expected = [ort_linear_rate(0.2, 1, 9, s) for s in (3, 6, 9)]
    assert history.history["learning_rate"] == pytest.approx(expected)


RESUME = """
import sys
import numpy as np
import microtrain
from microtrain import DataLoader, schedules

image, checkpoint, out, first, epochs, kind = sys.argv[1:7]
first, epochs = int(first), int(epochs)
rng = np.random.default_rng(0)
x = rng.standard_normal((52, 6)).astype(np.float32)
y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 52)]
make = {"linear": lambda: schedules.LinearLRScheduler(5, 40),
        "cosine": lambda: schedules.CosineLRScheduler(5, 40, min_lr=0.001),
        "step": lambda: schedules.StepLRScheduler(7, gamma=0.5, warmup_step_count=5)}[kind]
s = microtrain.TrainSession(image)
s.compile(microtrain.optimizers.Adam(learning_rate=0.02), "cce", batch_size=8)
if first > 0:
    s.load_checkpoint(checkpoint)
h = s.train(DataLoader(x, y, batch_size=8, shuffle=True, seed=1), epochs=epochs, verbose=0,
            scheduler=make(), checkpoint_path=checkpoint)
np.save(out, np.concatenate([w.ravel() for w in s.get_weights()] +
                            [np.float32(h.history["learning_rate"])]))
"""


@pytest.mark.parametrize("kind", ["linear", "cosine", "step"])
def test_a_resumed_run_with_a_schedule_equals_a_straight_run(tmp_path, kind):
    """Three epochs, a checkpoint, a new process, a new scheduler built the same way and two
    more epochs give the bits of five epochs straight (issue: the decay was applied twice)."""
    import subprocess
    import sys
    image = tmp_path / "model.mtm"
    microtrain.Sequential([layers.Dense(8, activation="tanh"), layers.Dense(3),
                           layers.Softmax()], input_shape=(6,), seed=4).save(str(image))

    def run(checkpoint, out, first, epochs):
        result = subprocess.run([sys.executable, "-c", RESUME, str(image), str(checkpoint),
                                 str(out), str(first), str(epochs), kind],
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        return np.load(str(out))

    straight = run(tmp_path / "a.ck", tmp_path / "a.npy", 0, 5)
    run(tmp_path / "b.ck", tmp_path / "b1.npy", 0, 3)
    resumed = run(tmp_path / "b.ck", tmp_path / "b2.npy", 3, 2)
    n = len(resumed) - 2  # weights, then the learning rates of the last two epochs
    np.testing.assert_array_equal(resumed[:n], straight[:n])
    np.testing.assert_array_equal(resumed[n:], straight[-2:])
