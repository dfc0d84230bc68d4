"""The models and data the TrainSession tests share (tests/test_session_api.py,
test_session_steps.py, test_session_weights.py): a 10 -> 16 -> 4 classifier, a 6 -> 12 -> 3
regressor, seeded rows, and a NumPy forward to hold the session's outputs to."""

import numpy as np

import microtrain
from microtrain import layers

import small_models

BATCH = 8


def classifier(seed=0):
    """10 -> 16 relu -> 4 softmax."""
    return small_models.classifier(16, classes=4, features=10, seed=seed)


def regressor(seed=0):
    """6 -> 12 relu -> 3 (ops: Dense, ReLU, Dense)."""
    return microtrain.Sequential([layers.Dense(12, activation="relu"), layers.Dense(3)],
                                 input_shape=(6,), seed=seed)


def data(rows, features=10, classes=4, seed=0):
    """(x, integer labels, one-hot y): ``rows`` standard normal rows and uniform labels."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, features)).astype(np.float32)
    labels = rng.integers(0, classes, rows).astype(np.int32)
    return x, labels, np.eye(classes, dtype=np.float32)[labels]


def compiled_classifier(**compile_args):
    """A session of ``classifier()`` compiled with SGD, categorical cross-entropy and batch
    BATCH, ``compile_args`` overriding those."""
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
