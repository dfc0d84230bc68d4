"""train_step / eval_step read a C-contiguous float32 batch of at least 32 KB where it lies
(the core's mt_session_*_step_rows); every other batch is copied into the arena first. Both
give the same bits, whatever the layout, alignment or origin of the rows. The small models
here lower the threshold to 0 (monkeypatch) so that every batch takes the in-place path."""

import numpy as np
import pytest

import microtrain
from microtrain import layers, optimizers
from microtrain.backend import ctypes_fast_steps

BATCH = 8


@pytest.fixture
def in_place_always(monkeypatch):
    monkeypatch.setattr(ctypes_fast_steps, "IN_PLACE_BYTES", 0)


def session(optimizer="sgd", features=10):
    model = microtrain.Sequential([layers.Dense(16, activation="relu"), layers.Dense(4),
                                   layers.Softmax()], input_shape=(features,), seed=3)
    s = microtrain.TrainSession(model)
    opt = optimizers.SGD(0.1) if optimizer == "sgd" else optimizers.Adam(0.01)
    s.compile(opt, "categorical_crossentropy", batch_size=BATCH)
    return s


def batches(count, rows=BATCH, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((count, rows, 10)).astype(np.float32)
    y = np.eye(4, dtype=np.float32)[rng.integers(0, 4, (count, rows))]
    return x, y


def arena_rows(s):
    return s._backend.buffer_views()[0][0]


def same_weights(a, b):
    return all(np.array_equal(p, q) for p, q in zip(a.get_weights(), b.get_weights()))


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_rows_read_in_place_train_like_rows_copied(optimizer, in_place_always):
    x, y = batches(6)
    with session(optimizer) as in_place, session(optimizer) as copied:
        before = arena_rows(in_place).copy()
        for k, n in enumerate([BATCH, 1, 5, BATCH, 3, BATCH]):
            rows = x[k, :n]
            assert rows.flags.c_contiguous
            strided = np.asfortranarray(rows)  # not C-contiguous (for n > 1): copied
            one = in_place.train_step(rows, y[k, :n])["loss"][0]
            other = copied.train_step(strided if n > 1 else rows.copy(), y[k, :n])["loss"][0]
            assert np.float32(one).tobytes() == np.float32(other).tobytes()
            assert same_weights(in_place, copied)
            e1 = in_place.eval_step(rows, y[k, :n])["loss"][0]
            e2 = copied.eval_step(strided if n > 1 else rows.copy(), y[k, :n])["loss"][0]
            assert np.float32(e1).tobytes() == np.float32(e2).tobytes()
        # the in-place session never copied a row into its input buffer
        np.testing.assert_array_equal(arena_rows(in_place), before)
        assert not np.array_equal(arena_rows(copied), before)


def test_rows_from_any_address_or_from_the_arena_itself(in_place_always):
    x, y = batches(1)
    with session() as a, session() as b:
        raw = np.zeros(BATCH * 10 + 1, np.float32)
        odd = raw[1:].reshape(BATCH, 10)  # 4 bytes past numpy's alignment: copied by the core
        odd[:] = x[0]
        view = arena_rows(b).reshape(BATCH, 10)  # the session's own buffer: copied (no-op)
        view[:] = x[0]
        for rows in (odd, view):
            la = a.train_step(x[0].copy(), y[0])["loss"][0]
            lb = b.train_step(rows, y[0])["loss"][0]
            assert la == lb and same_weights(a, b)


def test_the_caller_keeps_its_rows_unchanged_and_the_next_step_forgets_them(in_place_always):
    x, y = batches(2)
    with session() as s:
        rows = x[0].copy()
        s.train_step(rows, y[0])
        np.testing.assert_array_equal(rows, x[0])
        assert s._fast._rows[0] is None and not s._fast._in_place  # no address outlives the step
        del rows
        # a list of rows goes through the checked path and the arena, as before
        s.train_step(x[1].tolist(), y[1])
        np.testing.assert_array_equal(arena_rows(s).reshape(BATCH, 10), x[1])


def test_batches_of_32_kb_and_more_are_read_in_place_smaller_ones_copied():
    """Asking numpy for an address costs about what copying 32 KB does."""
    x = np.random.default_rng(4).standard_normal((BATCH, 1024)).astype(np.float32)
    y = np.eye(4, dtype=np.float32)[[0, 1, 2, 3] * 2]
    with session(features=1024) as s:
        s.train_step(x[:7], y[:7])  # 28 KB: copied
        np.testing.assert_array_equal(arena_rows(s)[:7], x[:7])
        s.train_step(x[::-1].copy(), y)  # 32 KB: read in place, the arena keeps the last copy
        np.testing.assert_array_equal(arena_rows(s)[:7], x[:7])
