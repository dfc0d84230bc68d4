"""The numeric guard from Python (issue 6): compile(guard_gradients=...), numeric_errors()
and train(on_numeric_error="raise" | "stop" | "skip").

Two kinds of bad step:
  * a NaN/Inf loss (a NaN target): refused before anything changes, in every mode;
  * a finite loss with a non-finite gradient: input feature 0 is 3e38 while the first
    layer's weights on it are 1e-38, so the forward stays finite (3e38 * 1e-38 = 3) but
    dW1[:, 0] = sum over rows of dy * 3e38 overflows. With guard_gradients=True the step
    is refused whole; without it (fused updates) the core updates the last Dense, then
    stops at W1, as microtrain.h documents.
"Unchanged" is checked on the weights and on the optimizer state, the latter through
the next step: it must equal, bit for bit, the step of a twin session that never saw
the bad batch (Adam's moments and bias correction feed into it).
"""

import re

import numpy as np
import pytest

import microtrain
from microtrain import DataLoader, MicrotrainError, layers, optimizers
from microtrain.backend import _native

BATCH = 8


def session(guard, accumulate=False):
    """2 -> 3 relu -> 1 with Adam; W1's column for feature 0 is 1e-38."""
    s = microtrain.TrainSession(microtrain.Sequential(
        [layers.Dense(3, activation="relu"), layers.Dense(1)], input_shape=(2,), seed=0))
    weights = s.get_weights()
    weights[0][:, 0] = 1e-38
    s.set_weights(weights)
    s.compile(optimizers.Adam(0.01), "mse", batch_size=BATCH, guard_gradients=guard,
              accumulate_gradients=accumulate)
    return s


def good_batch(seed=0):
    """Feature 0 is 0, so its weights get a zero gradient and Adam keeps them at 1e-38."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((BATCH, 2)).astype(np.float32)
    x[:, 0] = 0.0
    return x, rng.standard_normal((BATCH, 1)).astype(np.float32)


def overflowing_gradient_batch():
    x = np.ones((BATCH, 2), np.float32)
    x[:, 0] = 3e38
    return x, np.full((BATCH, 1), 100.0, np.float32)


def nan_loss_batch():
    x, y = good_batch(7)
    y[3, 0] = np.nan
    return x, y


def assert_same(a, b):
    for left, right in zip(a, b):
        np.testing.assert_array_equal(left, right)


def refused(s, batch):
    with pytest.raises(MicrotrainError) as error:
        s.train_step(*batch)
    assert error.value.status == _native.MT_ERR_NUMERIC
    assert "MT_ERR_NUMERIC" in str(error.value)
    return str(error.value)


@pytest.mark.parametrize("guard", [False, True])
def test_a_non_finite_loss_changes_nothing_in_either_mode(guard):
    s, twin = session(guard), session(guard)
    for seed in (1, 2):  # some Adam state first
        assert s.train_step(*good_batch(seed))["loss"] == twin.train_step(*good_batch(seed))["loss"]
    before, counters = s.get_weights(), s.get_counters()
    assert "the loss is nan" in refused(s, nan_loss_batch())
    assert s.numeric_errors() == 1 and twin.numeric_errors() == 0
    assert s.get_counters() == counters
    assert_same(before, s.get_weights())
    # the optimizer state is untouched: the next step equals the twin's
    assert s.train_step(*good_batch(3))["loss"] == twin.train_step(*good_batch(3))["loss"]
    assert_same(s.get_weights(), twin.get_weights())


def test_the_forward_of_the_gradient_case_is_finite():
    s = session(True)
    x, y = overflowing_gradient_batch()
    loss = s.eval_step(x, y)["loss"][0]
    assert np.isfinite(loss) and loss > 1000
    assert np.isfinite(s.infer(x)[0]).all()


def test_guard_gradients_refuses_a_non_finite_gradient_whole():
    s, twin = session(True), session(True)
    assert s.memory_plan()["fused_update"] == 0
    for seed in (1, 2):
        s.train_step(*good_batch(seed))
        twin.train_step(*good_batch(seed))
    before, counters = s.get_weights(), s.get_counters()
    message = refused(s, overflowing_gradient_batch())
    assert re.search(r"gradient or update is NaN or infinite \(the loss [\d.]+ is finite\): nothing was "
                     r"updated", message), message
    assert s.numeric_errors() == 1
    assert s.get_counters() == counters
    assert_same(before, s.get_weights())
    assert "the loss is nan" in refused(s, nan_loss_batch())
    assert s.numeric_errors() == 2  # both kinds are counted
    assert s.train_step(*good_batch(3))["loss"] == twin.train_step(*good_batch(3))["loss"]
    assert_same(s.get_weights(), twin.get_weights())


def test_without_the_guard_fused_updates_stop_at_the_bad_gradient():
    """microtrain.h: each gradient is checked just before its own update; the weights
    updated before it in that step keep their update. Backward runs from the last op, so
    W2 and b2 are updated, W1 is refused and b1 (after W1 in the op) is not reached."""
    s = session(False)
    assert s.memory_plan()["fused_update"] == 1
    before = s.get_weights()
    message = refused(s, overflowing_gradient_batch())
    assert "the step stopped there" in message and "guard_gradients=True" in message
    after = s.get_weights()
    np.testing.assert_array_equal(after[0], before[0])  # W1: refused
    np.testing.assert_array_equal(after[1], before[1])  # b1: not reached
    assert not np.array_equal(after[2], before[2])      # W2: updated
    assert not np.array_equal(after[3], before[3])      # b2: updated
    assert all(np.isfinite(w).all() for w in after)
    assert s.numeric_errors() == 1
    # the step that updated W2 and b2 is counted (Adam's bias correction advanced with it)
    assert s.get_counters()["step"] == 1


def test_accumulated_gradients_are_applied_all_or_nothing():
    s = session(False, accumulate=True)
    before = s.get_weights()
    s.lazy_reset_grad()
    s.train_step(*good_batch(1), update=False)
    s.train_step(*overflowing_gradient_batch(), update=False)  # finite loss: accumulated
    with pytest.raises(MicrotrainError) as error:
        s.optimizer_step()
    assert error.value.status == _native.MT_ERR_NUMERIC
    assert_same(before, s.get_weights())
    assert s.get_counters()["step"] == 0 and s.numeric_errors() == 1
    with pytest.raises(MicrotrainError):  # a NaN loss is refused before accumulating
        s.train_step(*nan_loss_batch(), update=False)
    assert s.numeric_errors() == 2
    s.lazy_reset_grad()
    s.train_step(*good_batch(1), update=False)
    s.optimizer_step()
    assert s.get_counters()["step"] == 1


# ------------------------------------------------------------------ train(on_numeric_error=...)

ROWS = 5 * BATCH
BAD_GRADIENT_BATCH, NAN_BATCH = 1, 3


def poisoned_data():
    """5 batches of 8 rows in order; batch 1 has an overflowing gradient, batch 3 a NaN
    target (which, alone in its batch, makes the loss NaN)."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((ROWS, 2)).astype(np.float32)
    x[:, 0] = 0.0  # as in good_batch
    y = rng.standard_normal((ROWS, 1)).astype(np.float32)
    x[BAD_GRADIENT_BATCH * BATCH:(BAD_GRADIENT_BATCH + 1) * BATCH, 0] = 3e38
    y[BAD_GRADIENT_BATCH * BATCH:(BAD_GRADIENT_BATCH + 1) * BATCH] = 100.0
    y[NAN_BATCH * BATCH + 2, 0] = np.nan
    return x, y


def test_train_raises_by_default():
    s = session(True)
    with pytest.raises(MicrotrainError) as error:
        s.train(DataLoader(*poisoned_data(), batch_size=BATCH), epochs=2, verbose=0)
    assert error.value.status == _native.MT_ERR_NUMERIC
    assert s.get_counters() == {"step": 1, "epoch": 0}  # batch 0 trained, then the raise


def test_train_skip_leaves_the_bad_batches_out_and_counts_them(capsys):
    x, y = poisoned_data()
    s = session(True)
    history = s.train(DataLoader(x, y, batch_size=BATCH), epochs=2, verbose=2,
                      on_numeric_error="skip")
    assert history.epochs == [1, 2] and history.numeric_error is None
    assert history["numeric_errors"] == [2, 2] and s.numeric_errors() == 4
    assert s.get_counters() == {"step": 6, "epoch": 2}
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(" - numeric_errors: 2" in line for line in lines)
    # exactly a run on the three good batches alone
    good = np.r_[0:8, 16:24, 32:40]
    twin = session(True)
    twin_history = twin.train(DataLoader(x[good], y[good], batch_size=BATCH), epochs=2,
                              verbose=0)
    assert history["loss"] == twin_history["loss"]
    assert_same(s.get_weights(), twin.get_weights())


def test_train_stop_returns_the_history_so_far_with_the_step(tmp_path, capsys):
    x, y = poisoned_data()
    s = session(True)
    clean = DataLoader(x[:BATCH], y[:BATCH], batch_size=BATCH)
    s.train(clean, epochs=1, verbose=0)
    ends = []
    history = s.train(DataLoader(x, y, batch_size=BATCH), epochs=3, verbose=1,
                      on_numeric_error="stop", checkpoint_path=str(tmp_path / "ck"),
                      callbacks=[lambda epoch, logs: ends.append(epoch)])
    assert history.epochs == [] and ends == []
    stop = history.numeric_error
    assert stop["epoch"] == 2 and stop["batch"] == BAD_GRADIENT_BATCH and stop["step"] == 2
    assert np.isfinite(stop["loss"]) and "MT_ERR_NUMERIC" in stop["message"]
    out = capsys.readouterr().out
    assert out.startswith("Epoch 2/4 - stopped at batch 2/5: ")
    # the unfinished epoch is not counted and leaves no checkpoint
    assert s.get_counters() == {"step": 2, "epoch": 1}
    assert not (tmp_path / "ck").exists()
    assert s.numeric_errors() == 1


def test_train_stop_after_complete_epochs_keeps_their_history():
    x, y = poisoned_data()
    s = session(True)
    loader = DataLoader(x[:BATCH], y[:BATCH], batch_size=BATCH)
    history = s.train(loader, epochs=2, verbose=0, on_numeric_error="stop")
    assert history.epochs == [1, 2] and history["numeric_errors"] == [0, 0]
    assert history.numeric_error is None


def test_train_skip_of_every_batch_reports_a_nan_epoch_loss():
    x, y = overflowing_gradient_batch()
    s = session(True)
    history = s.train((x, y), epochs=1, verbose=0, on_numeric_error="skip")
    assert np.isnan(history["loss"][0]) and history["numeric_errors"] == [1]


def test_train_on_numeric_error_argument_and_other_errors():
    s = session(True)
    with pytest.raises(ValueError, match="on_numeric_error must be"):
        s.train(good_batch(), on_numeric_error="ignore", verbose=0)
    with pytest.raises(ValueError, match="input 0 must have shape"):  # not a numeric error
        s.train((np.ones((4, 3), np.float32), np.ones((4, 1), np.float32)),
                on_numeric_error="skip", verbose=0)
