"""ONNX Runtime-style control: train_step(update=False), lazy_reset_grad, optimizer_step,
and the equivalences the core promises (k accumulated batches of n = one batch of k*n;
a partial last batch = a step on the smaller batch)."""

import numpy as np
import pytest

import microtrain
from microtrain import DataLoader, MicrotrainError, layers, optimizers
from microtrain.backend import _native


def model(seed=0):
    return microtrain.Sequential([layers.Dense(12, activation="tanh"), layers.Dense(4),
                                  layers.Softmax()], input_shape=(6,), seed=seed)


def data(rows, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, 6)).astype(np.float32)
    y = np.eye(4, dtype=np.float32)[rng.integers(0, 4, rows)]
    return x, y


def session(batch_size, optimizer="sgd", loss="categorical_crossentropy", **options):
    """A session that keeps gradients between calls (ONNX Runtime-style control)."""
    options.setdefault("accumulate_gradients", True)
    s = microtrain.TrainSession(model())
    s.compile(optimizer, loss, batch_size=batch_size, **options)
    return s


@pytest.mark.parametrize("optimizer", ["sgd", optimizers.SGD(0.05, momentum=0.9),
                                       optimizers.Adam(0.01), optimizers.AdamW(0.01)])
@pytest.mark.parametrize("sizes", [(4, 4, 4), (4, 4, 2), (1, 3, 4, 4)])
def test_accumulating_batches_equals_one_big_batch(optimizer, sizes):
    total = sum(sizes)
    x, y = data(total)
    big = session(total, optimizer)
    big_loss = big.train_step(x, y)["loss"][0]

    small = session(4, optimizer)
    small.lazy_reset_grad()
    losses, start = [], 0
    for size in sizes:
        result = small.train_step(x[start:start + size], y[start:start + size], update=False)
        losses.append(result["loss"][0])
        start += size
    small.optimizer_step()
    for a, b in zip(small.get_weights(), big.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert small.get_counters()["step"] == big.get_counters()["step"] == 1
    # each accumulate reports its own batch's mean loss; their weighted mean is the big one
    weighted = sum(l * n for l, n in zip(losses, sizes)) / total
    assert weighted == pytest.approx(big_loss, rel=1e-6)


def test_accumulation_over_several_updates_with_lazy_reset():
    x, y = data(16, seed=3)
    big = session(8, optimizers.Adam(0.01))
    small = session(4, optimizers.Adam(0.01))
    for update in range(2):
        rows = slice(8 * update, 8 * update + 8)
        big.train_step(x[rows], y[rows])
        small.lazy_reset_grad()
        small.train_step(x[rows][:4], y[rows][:4], update=False)
        small.train_step(x[rows][4:], y[rows][4:], update=False)
        small.optimizer_step()
    for a, b in zip(small.get_weights(), big.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_without_lazy_reset_gradients_keep_accumulating_like_onnx_runtime():
    x, y = data(8, seed=4)
    kept = session(4)
    kept.train_step(x[:4], y[:4], update=False)
    kept.optimizer_step()
    kept.train_step(x[4:], y[4:], update=False)  # adds to the first batch's gradients
    kept.optimizer_step()

    # a session that resets between the two updates ends elsewhere
    fresh = session(4)
    fresh.train_step(x[:4], y[:4], update=False)
    fresh.optimizer_step()
    fresh.lazy_reset_grad()
    fresh.train_step(x[4:], y[4:], update=False)
    fresh.optimizer_step()
    assert any(not np.array_equal(a, b) for a, b in zip(kept.get_weights(),
                                                         fresh.get_weights()))


def test_update_true_is_zero_grad_accumulate_step_and_consumes_its_gradients():
    x, y = data(8, seed=5)
    whole = session(4, optimizers.SGD(0.1, momentum=0.5))
    split = session(4, optimizers.SGD(0.1, momentum=0.5))
    for rows in (slice(0, 4), slice(4, 8)):
        whole.train_step(x[rows], y[rows])
        split.train_step(x[rows], y[rows], update=False)  # starts from zero after a step
        split.optimizer_step()
        split.lazy_reset_grad()
    for a, b in zip(whole.get_weights(), split.get_weights()):
        np.testing.assert_array_equal(a, b)
    whole.train_step(x[:4], y[:4])
    split.train_step(x[:4], y[:4])
    split.train_step(x[4:], y[4:], update=False)  # fresh: the update=True gradients are spent
    split.optimizer_step()
    whole.train_step(x[4:], y[4:])
    for a, b in zip(whole.get_weights(), split.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_optimizer_step_without_accumulated_gradients_is_refused():
    x, y = data(4)
    s = session(4)
    with pytest.raises(MicrotrainError) as error:
        s.optimizer_step()  # nothing accumulated yet
    assert error.value.status == _native.MT_ERR_STATE
    s.train_step(x, y)
    with pytest.raises(MicrotrainError, match="no gradients accumulated"):
        s.optimizer_step()  # the step's gradients were already applied
    s.train_step(x, y, update=False)
    s.lazy_reset_grad()
    with pytest.raises(MicrotrainError, match="no gradients accumulated"):
        s.optimizer_step()


def test_non_finite_loss_accumulates_nothing():
    x, y = data(8, seed=6)
    s = session(4)
    s.train_step(x[:4], y[:4], update=False)
    bad = y[4:].copy()
    bad[0, 0] = np.nan
    with pytest.raises(MicrotrainError) as error:
        s.train_step(x[4:], bad, update=False)
    assert error.value.status == _native.MT_ERR_NUMERIC
    s.optimizer_step()
    reference = session(4)
    reference.train_step(x[:4], y[:4])
    for a, b in zip(s.get_weights(), reference.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_partial_last_batch_of_a_loader_trains_like_a_session_of_that_batch_size():
    """train() over 23 samples in batches of 5: the last 3 rows are one exact step of 3
    rows (SGD has no state, so a fresh session per step reproduces the trajectory)."""
    x, y = data(23, seed=7)
    trained = session(5)
    trained.train(DataLoader(x, y, batch_size=5), epochs=1, verbose=0)

    weights = session(5).get_weights()
    for start in range(0, 23, 5):
        stop = min(start + 5, 23)
        step = session(stop - start)
        step.set_weights(weights)
        step.train_step(x[start:stop], y[start:stop])
        weights = step.get_weights()
    for a, b in zip(trained.get_weights(), weights):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("optimizer", ["sgd", optimizers.SGD(0.05, momentum=0.9),
                                       optimizers.Adam(0.01)])
def test_fused_updates_give_the_same_bits_in_less_memory(optimizer):
    x, y = data(24, seed=8)
    fused = session(8, optimizer, accumulate_gradients=False)
    kept = session(8, optimizer, accumulate_gradients=True)
    for start in range(0, 24, 8):
        assert fused.train_step(x[start:start + 8], y[start:start + 8])["loss"] == \
            kept.train_step(x[start:start + 8], y[start:start + 8])["loss"]
    for a, b in zip(fused.get_weights(), kept.get_weights()):
        np.testing.assert_array_equal(a, b)
    fused_plan, kept_plan = fused.memory_plan(), kept.memory_plan()
    assert fused_plan["fused_update"] == 1 and kept_plan["fused_update"] == 0
    assert fused_plan["total_bytes"] <= kept_plan["total_bytes"]


def wide_model(frozen_first):
    """Dense(96) over 48 features (W [96, 48], 18,432 bytes: updated in tiles) and Dense(10)
    over 96 (3,840 bytes: whole); frozen_first leaves the first out of training."""
    model = microtrain.Sequential([layers.Dense(96, activation="relu"), layers.Dense(10),
                                   layers.Softmax()], input_shape=(48,), seed=3)
    return model, ([1] if frozen_first else None)


@pytest.mark.parametrize("optimizer", ["sgd", optimizers.SGD(0.05, momentum=0.9,
                                                            weight_decay=0.01),
                                       optimizers.Adam(0.01), optimizers.AdamW(0.01)])
@pytest.mark.parametrize("frozen_first", [False, True])
def test_updates_in_tiles_give_the_buffered_bits_in_less_memory(optimizer, frozen_first):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((17, 48)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 17)]
    sessions = []
    for accumulate in (False, True):
        model, trainable = wide_model(frozen_first)
        s = microtrain.TrainSession(model)
        s.compile(optimizer, "categorical_crossentropy", batch_size=8, trainable=trainable,
                  accumulate_gradients=accumulate)
        sessions.append(s)
    tiled, kept = sessions
    for start in (0, 8, 16):  # the last batch is partial: one row
        assert tiled.train_step(x[start:start + 8], y[start:start + 8])["loss"] == \
            kept.train_step(x[start:start + 8], y[start:start + 8])["loss"]
    for a, b in zip(tiled.get_weights(), kept.get_weights()):
        np.testing.assert_array_equal(a, b)
    plan, kept_plan = tiled.memory_plan(), kept.memory_plan()
    # W1 in tiles of 18 rows of 48 + 8 floats; W2 [10, 96] is under 16 KiB, whole
    assert plan["tiled_updates"] == (0 if frozen_first else 1)
    assert plan["weight_tile_bytes"] == (0 if frozen_first else 18 * (48 + 8) * 4)
    assert kept_plan["tiled_updates"] == kept_plan["weight_tile_bytes"] == 0
    if not frozen_first:
        assert plan["gradient_bytes"] == kept_plan["gradient_bytes"] - 96 * 48 * 4 + 18 * 56 * 4


def test_accumulation_needs_accumulate_gradients_at_compile():
    x, y = data(4)
    fused = session(4, accumulate_gradients=False)
    for call in (lambda: fused.train_step(x, y, update=False), fused.optimizer_step,
                 fused.lazy_reset_grad):
        with pytest.raises(RuntimeError, match="accumulate_gradients=True"):
            call()
    assert np.isfinite(fused.train_step(x, y)["loss"][0])


def test_lazy_reset_and_optimizer_step_need_compile():
    s = microtrain.TrainSession(model())
    for call in (s.lazy_reset_grad, s.optimizer_step):
        with pytest.raises(RuntimeError, match="compile"):
            call()


def test_guarded_gradients_give_the_same_bits_and_refusals_are_counted():
    x, y = data(16, seed=9)
    plain = session(8, optimizers.Adam(0.01), accumulate_gradients=False)
    guarded = session(8, optimizers.Adam(0.01), accumulate_gradients=False,
                      guard_gradients=True)
    for start in (0, 8):
        assert plain.train_step(x[start:start + 8], y[start:start + 8])["loss"] == \
            guarded.train_step(x[start:start + 8], y[start:start + 8])["loss"]
    for a, b in zip(plain.get_weights(), guarded.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert guarded.memory_plan()["fused_update"] == 0  # the guard needs every gradient
    assert guarded.numeric_errors() == 0
    bad = y[:8].copy()
    bad[0, 0] = np.inf
    before = guarded.get_weights()
    with pytest.raises(MicrotrainError):
        guarded.train_step(x[:8], bad)
    assert guarded.numeric_errors() == 1
    for a, b in zip(before, guarded.get_weights()):
        np.testing.assert_array_equal(a, b)
