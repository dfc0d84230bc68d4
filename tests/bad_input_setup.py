"""What the Python facade's bad-input tests (tests/test_bad_*_facade.py) share: a small
classifier, a compiled session of it, rows for it, and bit-for-bit comparisons.

Those tests go through the public API only. Every mistake they make must either raise a clear
exception (ValueError, TypeError, RuntimeError, MemoryError, OSError or MicrotrainError with
the C status) whose message names the problem, or work correctly; nothing may crash or read
memory it should not.
"""

import numpy as np

import microtrain
from microtrain import optimizers
from small_models import classifier

BATCH = 8
FEATURES = 10
CLASSES = 4


def model(seed=0):
    """10 -> 16 relu -> 4 softmax."""
    return classifier(16, CLASSES, FEATURES, seed)


def session(loss="categorical_crossentropy", **options):
    s = microtrain.TrainSession(model())
    arguments = {"optimizer": optimizers.Adam(0.01), "loss": loss, "batch_size": BATCH}
    arguments.update(options)
    s.compile(**arguments)
    return s


def data(rows=BATCH, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, FEATURES)).astype(np.float32)
    labels = rng.integers(0, CLASSES, rows).astype(np.int32)
    return x, labels, np.eye(CLASSES, dtype=np.float32)[labels]


def assert_same_weights(a, b):
    for left, right in zip(a, b):
        np.testing.assert_array_equal(left, right)


def same_step(inputs, targets, reference_inputs, reference_targets, loss=None):
    """A train step on (inputs, targets) equals one on the reference arrays: loss, outputs
    of a following infer, and every weight, bit for bit."""
    options = {} if loss is None else {"loss": loss}
    a, b = session(**options), session(**options)
    result_a = a.train_step(inputs, targets)
    result_b = b.train_step(reference_inputs, reference_targets)
    assert result_a["loss"] == result_b["loss"]
    assert_same_weights(a.get_weights(), b.get_weights())
    np.testing.assert_array_equal(a.infer(inputs)[0], b.infer(reference_inputs)[0])
    return a
